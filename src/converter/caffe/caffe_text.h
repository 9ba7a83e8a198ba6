// Protobuf text format (what a Caffe deploy.prototxt is written in), parsed into a tree of
// fields by name: Caffe's nets use a few dozen message types, read by the layer importers through
// this tree instead of generated classes. Comments (#), optional ':' before a message, '{ }' or
// '< >', repeated fields given once per value or as [a, b], adjacent strings joined.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "osprey/status.h"

namespace osprey::caffe {

struct TextMessage;

struct TextValue {
  std::string text;  // a scalar as written (number, identifier) or a string's contents
  bool quoted = false;
  std::shared_ptr<TextMessage> message;  // set for a message value
  int line = 0;
};

struct TextMessage {
  std::vector<std::pair<std::string, TextValue>> fields;
  int line = 0;
  std::string source;  // the file, for messages

  const TextValue* first(const std::string& name) const;
  std::vector<const TextValue*> all(const std::string& name) const;
  bool has(const std::string& name) const { return first(name) != nullptr; }

  // Typed reads of a field's first value; `fallback` when absent, an error naming the field and
  // line when present but not of the type.
  Status getInt(const std::string& name, int64_t fallback, int64_t* out) const;
  Status getFloat(const std::string& name, double fallback, double* out) const;
  Status getBool(const std::string& name, bool fallback, bool* out) const;
  Status getString(const std::string& name, const std::string& fallback, std::string* out) const;  // also enums
  Status getInts(const std::string& name, std::vector<int64_t>* out) const;
  Status getFloats(const std::string& name, std::vector<double>* out) const;
  const TextMessage* message(const std::string& name) const;  // the first message value, or null
  Status error(const TextValue& v, const std::string& what) const;
};

// Parses `text` (from file `source`, named in errors with the line).
Status parseText(const std::string& text, const std::string& source, TextMessage* out);

}  // namespace osprey::caffe
