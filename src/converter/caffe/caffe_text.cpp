// The text format parser (caffe_text.h).
#include "converter/caffe/caffe_text.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace osprey::caffe {

namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  Parser(const std::string& text, const std::string& source) : s_(text), source_(source) {}

  Status parseMessage(TextMessage* m, char close, int depth) {
    if (depth > kMaxDepth) return fail("messages nested more than " + std::to_string(kMaxDepth) + " deep");
    m->source = source_;
    for (;;) {
      skipSpace();
      if (pos_ >= s_.size()) {
        if (close) return fail(std::string("missing '") + close + "' before the end of the file");
        return Status::ok();
      }
      if (close && s_[pos_] == close) {
        ++pos_;
        return Status::ok();
      }
      std::string name;
      if (!identifier(&name)) return fail(std::string("expected a field name, found '") + s_[pos_] + "'");
      skipSpace();
      bool colon = false;
      if (pos_ < s_.size() && s_[pos_] == ':') ++pos_, colon = true, skipSpace();
      if (pos_ >= s_.size()) return fail("field '" + name + "' has no value");
      if (s_[pos_] == '[') {
        ++pos_;
        for (;;) {
          skipSpace();
          if (pos_ < s_.size() && s_[pos_] == ']') {
            ++pos_;
            break;
          }
          OSPREY_RETURN_IF_ERROR(value(name, m, depth));
          skipSpace();
          if (pos_ < s_.size() && s_[pos_] == ',') ++pos_;
        }
      } else {
        if (!colon && s_[pos_] != '{' && s_[pos_] != '<') return fail("expected ':' after '" + name + "'");
        OSPREY_RETURN_IF_ERROR(value(name, m, depth));
      }
      skipSpace();
      if (pos_ < s_.size() && (s_[pos_] == ',' || s_[pos_] == ';')) ++pos_;
    }
  }

 private:
  Status value(const std::string& name, TextMessage* m, int depth) {
    TextValue v;
    v.line = line_;
    const char c = s_[pos_];
    if (c == '{' || c == '<') {
      ++pos_;
      v.message = std::make_shared<TextMessage>();
      v.message->line = line_;
      OSPREY_RETURN_IF_ERROR(parseMessage(v.message.get(), c == '{' ? '}' : '>', depth + 1));
    } else if (c == '"' || c == '\'') {
      v.quoted = true;
      while (pos_ < s_.size() && (s_[pos_] == '"' || s_[pos_] == '\'')) {
        OSPREY_RETURN_IF_ERROR(quoted(&v.text));
        skipSpace();
      }
    } else {
      const size_t start = pos_;
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' ||
                                  s_[pos_] == '-' || s_[pos_] == '+' || s_[pos_] == '.'))
        ++pos_;
      if (pos_ == start) return fail("field '" + name + "' has no value");
      v.text = s_.substr(start, pos_ - start);
    }
    m->fields.emplace_back(name, std::move(v));
    return Status::ok();
  }

  Status quoted(std::string* out) {
    const char q = s_[pos_++];
    while (pos_ < s_.size() && s_[pos_] != q) {
      char c = s_[pos_++];
      if (c == '\n') return fail("a string runs past the end of its line");
      if (c == '\\' && pos_ < s_.size()) {
        const char e = s_[pos_++];
        c = e == 'n' ? '\n' : e == 't' ? '\t' : e;
      }
      out->push_back(c);
    }
    if (pos_ >= s_.size()) return fail("a string has no closing quote");
    ++pos_;
    return Status::ok();
  }

  bool identifier(std::string* out) {
    const size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    *out = s_.substr(start, pos_ - start);
    return !out->empty() && !std::isdigit(static_cast<unsigned char>((*out)[0]));
  }

  void skipSpace() {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == '\n') {
        ++line_, ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  Status fail(const std::string& what) const {
    return Status::invalidModel(source_ + ":" + std::to_string(line_) + ": " + what);
  }

  const std::string& s_;
  const std::string& source_;
  size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

const TextValue* TextMessage::first(const std::string& name) const {
  for (const auto& [n, v] : fields)
    if (n == name) return &v;
  return nullptr;
}

std::vector<const TextValue*> TextMessage::all(const std::string& name) const {
  std::vector<const TextValue*> out;
  for (const auto& [n, v] : fields)
    if (n == name) out.push_back(&v);
  return out;
}

Status TextMessage::error(const TextValue& v, const std::string& what) const {
  return Status::invalidModel(source + ":" + std::to_string(v.line) + ": " + what);
}

namespace {

bool toInt(const TextValue& v, int64_t* out) {
  if (v.message || v.quoted || v.text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long r = std::strtoll(v.text.c_str(), &end, 0);
  if (errno || *end) return false;
  *out = r;
  return true;
}

bool toFloat(const TextValue& v, double* out) {
  if (v.message || v.quoted || v.text.empty()) return false;
  std::string t = v.text;
  if (t.size() > 1 && (t.back() == 'f' || t.back() == 'F') && t.find_first_of("xX") == std::string::npos) t.pop_back();
  char* end = nullptr;
  *out = std::strtod(t.c_str(), &end);
  return !*end;
}

}  // namespace

Status TextMessage::getInt(const std::string& name, int64_t fallback, int64_t* out) const {
  const TextValue* v = first(name);
  if (!v) return *out = fallback, Status::ok();
  if (!toInt(*v, out)) return error(*v, "'" + name + "' must be an integer, not '" + v->text + "'");
  return Status::ok();
}

Status TextMessage::getFloat(const std::string& name, double fallback, double* out) const {
  const TextValue* v = first(name);
  if (!v) return *out = fallback, Status::ok();
  if (!toFloat(*v, out)) return error(*v, "'" + name + "' must be a number, not '" + v->text + "'");
  return Status::ok();
}

Status TextMessage::getBool(const std::string& name, bool fallback, bool* out) const {
  const TextValue* v = first(name);
  if (!v) return *out = fallback, Status::ok();
  if (v->text == "true" || v->text == "1") return *out = true, Status::ok();
  if (v->text == "false" || v->text == "0") return *out = false, Status::ok();
  return error(*v, "'" + name + "' must be true or false, not '" + v->text + "'");
}

Status TextMessage::getString(const std::string& name, const std::string& fallback, std::string* out) const {
  const TextValue* v = first(name);
  if (!v) return *out = fallback, Status::ok();
  if (v->message) return error(*v, "'" + name + "' must be a value, not a message");
  *out = v->text;
  return Status::ok();
}

Status TextMessage::getInts(const std::string& name, std::vector<int64_t>* out) const {
  out->clear();
  for (const TextValue* v : all(name)) {
    int64_t x = 0;
    if (!toInt(*v, &x)) return error(*v, "'" + name + "' must be an integer, not '" + v->text + "'");
    out->push_back(x);
  }
  return Status::ok();
}

Status TextMessage::getFloats(const std::string& name, std::vector<double>* out) const {
  out->clear();
  for (const TextValue* v : all(name)) {
    double x = 0;
    if (!toFloat(*v, &x)) return error(*v, "'" + name + "' must be a number, not '" + v->text + "'");
    out->push_back(x);
  }
  return Status::ok();
}

const TextMessage* TextMessage::message(const std::string& name) const {
  for (const auto& [n, v] : fields)
    if (n == name && v.message) return v.message.get();
  return nullptr;
}

Status parseText(const std::string& text, const std::string& source, TextMessage* out) {
  Parser p(text, source);
  *out = TextMessage();
  out->line = 1;
  return p.parseMessage(out, 0, 0);
}

}  // namespace osprey::caffe
