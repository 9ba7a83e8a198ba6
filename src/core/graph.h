// The in-memory model: what the converter builds and writes, and what the Interpreter loads.
// Op semantics are those of the newest ONNX opset of the same name; importers upgrade older forms.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "osprey/status.h"
#include "osprey/types.h"
#include "core/op_type.h"

namespace osprey {

struct Graph;

// Immutable bytes of a constant. Shared so that copies of a graph (and tensors pointing into a
// loaded file) never duplicate weights.
struct ConstantData {
  std::shared_ptr<const uint8_t> bytes;  // 16-byte aligned, little-endian packed elements
  size_t size = 0;
  std::vector<std::string> strings;  // for DataType::String
  static ConstantData copyOf(const void* data, size_t size);
  // Points at data inside bytes that `owner` keeps alive, or copies it where it is not 16-byte
  // aligned: a model's weights are held once, in the file or vector they were read into.
  static ConstantData within(std::shared_ptr<const void> owner, const uint8_t* data, size_t size);
  // Takes the vector's storage (heap blocks are 16-byte aligned) instead of copying it.
  static ConstantData adopt(std::vector<uint8_t>&& bytes);
};

struct TensorInfo {
  std::string name;
  DataType dtype = DataType::Undefined;
  Shape shape;                        // -1 for a symbolic or unknown dimension
  std::vector<std::string> dimNames;  // "" for fixed dims; empty vector when no names
  bool hasShape = true;               // false when the rank itself is unknown
  bool isConstant = false;
  ConstantData data;
  DataType elementDtype = DataType::Undefined;  // of a DataType::Sequence's items, when declared
  bool optional = false;  // ONNX optional(...): may hold no value (an empty Tensor at run time)
};

struct Attribute {
  enum class Kind : int8_t { Int, Float, String, Ints, Floats, Strings, Tensor, Graph };
  std::string name;
  Kind kind = Kind::Int;
  int64_t i = 0;
  float f = 0.f;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  std::shared_ptr<TensorInfo> tensor;
  std::shared_ptr<Graph> graph;
};

struct Node {
  OpType type = OpType::Invalid;
  std::string name;
  std::vector<int> inputs;  // tensor indices, -1 for an omitted optional input
  std::vector<int> outputs;
  std::vector<Attribute> attrs;

  const Attribute* attr(std::string_view name) const;
  int64_t getInt(std::string_view name, int64_t fallback) const;
  float getFloat(std::string_view name, float fallback) const;
  std::string getString(std::string_view name, std::string fallback) const;
  std::vector<int64_t> getInts(std::string_view name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> getFloats(std::string_view name, std::vector<float> fallback = {}) const;
  bool hasAttr(std::string_view name) const { return attr(name) != nullptr; }
  void setAttr(Attribute a);
  void setInt(std::string name, int64_t v);
  void setFloat(std::string name, float v);
  void setString(std::string name, std::string v);
  void setInts(std::string name, std::vector<int64_t> v);
  void setFloats(std::string name, std::vector<float> v);
  void setGraph(std::string name, std::shared_ptr<Graph> g);  // a Loop / If / Scan body
  void removeAttr(std::string_view name);
  // "op 'conv1' (Conv)" — used as error context everywhere.
  std::string describe() const;
};

struct Graph {
  std::vector<TensorInfo> tensors;
  std::vector<Node> nodes;  // topological order
  std::vector<int> inputs;
  std::vector<int> outputs;

  int addTensor(TensorInfo t);
  int findTensor(std::string_view name) const;  // -1 when absent
  // Verifies indices, topological order, single producers; names the first offence.
  Status validate() const;
};

// Whether the product of `shape`'s dims other than 0 and -1 fits in int64, times `elementBytes`
// unless the tensor is empty. Then every stride, outer/inner count and byte offset of it does
// too, even of an empty [0, 2^62, 2^62], which shapeElements alone would pass.
bool shapeBytesFit(const Shape& shape, size_t elementBytes);

class MappedFile;

struct Model {
  int formatVersion = 1;
  std::string producer;
  Graph graph;
  // The file the constants point into, when it was mapped (LoadOptions::mapFile): a session at
  // Memory::Low returns its pages once weights are packed.
  std::shared_ptr<const MappedFile> mapping;
};

constexpr int kModelFormatVersion = 1;

}  // namespace osprey
