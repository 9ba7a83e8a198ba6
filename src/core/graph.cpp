#include "core/graph.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

namespace osprey {

ConstantData ConstantData::copyOf(const void* data, size_t size) {
  ConstantData c;
  size_t rounded = (std::max<size_t>(size, 1) + 63) / 64 * 64;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(64, rounded));
  if (!p) return c;  // size stays 0; callers check
  if (size) std::memcpy(p, data, size);
  c.bytes = std::shared_ptr<const uint8_t>(p, [](const uint8_t* q) { std::free(const_cast<uint8_t*>(q)); });
  c.size = size;
  return c;
}

ConstantData ConstantData::within(std::shared_ptr<const void> owner, const uint8_t* data, size_t size) {
  if (!owner || size == 0 || reinterpret_cast<uintptr_t>(data) % 16 != 0) return copyOf(data, size);
  ConstantData c;
  c.bytes = std::shared_ptr<const uint8_t>(std::move(owner), data);
  c.size = size;
  return c;
}

ConstantData ConstantData::adopt(std::vector<uint8_t>&& bytes) {
  auto owner = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  return within(owner, owner->data(), owner->size());
}

const Attribute* Node::attr(std::string_view name) const {
  for (auto& a : attrs)
    if (a.name == name) return &a;
  return nullptr;
}

int64_t Node::getInt(std::string_view name, int64_t fallback) const {
  auto* a = attr(name);
  if (!a) return fallback;
  return a->kind == Attribute::Kind::Float ? static_cast<int64_t>(a->f) : a->i;
}

float Node::getFloat(std::string_view name, float fallback) const {
  auto* a = attr(name);
  if (!a) return fallback;
  return a->kind == Attribute::Kind::Int ? static_cast<float>(a->i) : a->f;
}

std::string Node::getString(std::string_view name, std::string fallback) const {
  auto* a = attr(name);
  return a ? a->s : fallback;
}

std::vector<int64_t> Node::getInts(std::string_view name, std::vector<int64_t> fallback) const {
  auto* a = attr(name);
  return a ? a->ints : fallback;
}

std::vector<float> Node::getFloats(std::string_view name, std::vector<float> fallback) const {
  auto* a = attr(name);
  return a ? a->floats : fallback;
}

void Node::setAttr(Attribute a) {
  for (auto& x : attrs) {
    if (x.name == a.name) {
      x = std::move(a);
      return;
    }
  }
  attrs.push_back(std::move(a));
}

void Node::setInt(std::string name, int64_t v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::Int;
  a.i = v;
  setAttr(std::move(a));
}

void Node::setFloat(std::string name, float v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::Float;
  a.f = v;
  setAttr(std::move(a));
}

void Node::setGraph(std::string name, std::shared_ptr<Graph> g) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::Graph;
  a.graph = std::move(g);
  setAttr(std::move(a));
}

void Node::setString(std::string name, std::string v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::String;
  a.s = std::move(v);
  setAttr(std::move(a));
}

void Node::setInts(std::string name, std::vector<int64_t> v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::Ints;
  a.ints = std::move(v);
  setAttr(std::move(a));
}

void Node::setFloats(std::string name, std::vector<float> v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::Floats;
  a.floats = std::move(v);
  setAttr(std::move(a));
}

void Node::removeAttr(std::string_view name) {
  for (auto it = attrs.begin(); it != attrs.end(); ++it) {
    if (it->name == name) {
      attrs.erase(it);
      return;
    }
  }
}

std::string Node::describe() const {
  return "op '" + name + "' (" + opTypeName(type) + ")";
}

bool shapeBytesFit(const Shape& shape, size_t elementBytes) {
  const bool empty = std::find(shape.begin(), shape.end(), 0) != shape.end();
  int64_t n = empty ? 1 : static_cast<int64_t>(std::max<size_t>(elementBytes, 1));
  for (int64_t d : shape)
    if (d > 1 && __builtin_mul_overflow(n, d, &n)) return false;
  return true;
}

int Graph::addTensor(TensorInfo t) {
  tensors.push_back(std::move(t));
  return static_cast<int>(tensors.size()) - 1;
}

int Graph::findTensor(std::string_view name) const {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == name) return static_cast<int>(i);
  return -1;
}

Status Graph::validate() const {
  const int n = static_cast<int>(tensors.size());
  std::vector<bool> defined(n, false);
  for (int i = 0; i < n; ++i) {
    const TensorInfo& t = tensors[i];
    for (int64_t d : t.shape)
      if (d < -1) return Status::invalidModel("tensor '" + t.name + "' has a negative dimension");
    if (!shapeBytesFit(t.shape, dataTypeSize(t.dtype)))
      return Status::invalidModel("tensor '" + t.name + "' has shape " + shapeToString(t.shape) +
                                  ", whose size overflows 64 bits");
    if (t.isConstant) {
      defined[i] = true;
      const int64_t elements = shapeElements(t.shape);  // cannot overflow: its bytes fit, checked above
      if (elements < 0)
        return Status::invalidModel("constant '" + t.name + "' has shape " + shapeToString(t.shape) +
                                    " with an unknown dimension");
      const size_t want = static_cast<size_t>(elements) * dataTypeSize(t.dtype);
      if (t.dtype == DataType::String) {
        if (static_cast<int64_t>(t.data.strings.size()) != elements)
          return Status::invalidModel("constant '" + t.name + "' has the wrong number of strings");
      } else if (t.data.size != want) {
        return Status::invalidModel("constant '" + t.name + "' holds " + std::to_string(t.data.size) +
                                    " bytes, its dtype and shape " + shapeToString(t.shape) + " need " +
                                    std::to_string(want));
      }
    }
  }
  for (int i : inputs) {
    if (i < 0 || i >= n) return Status::invalidModel("graph input index out of range");
    defined[i] = true;
  }
  // Sessions find tensors by name (inputs, outputs, the entries of a later stage): a name leads
  // to one tensor.
  std::unordered_set<std::string_view> names;
  for (const TensorInfo& t : tensors)
    if (!t.name.empty() && !names.insert(t.name).second)
      return Status::invalidModel("two tensors of the graph are named '" + t.name + "'");
  for (const Node& node : nodes) {
    if (node.type == OpType::Invalid || static_cast<int>(node.type) >= static_cast<int>(OpType::Count))
      return Status::invalidModel("op '" + node.name + "' has an unknown type");
    for (int i : node.inputs) {
      if (i == -1) continue;
      if (i < -1 || i >= n) return Status::invalidModel(node.describe() + " reads a tensor index out of range");
      if (!defined[i])
        return Status::invalidModel(node.describe() + " reads '" + tensors[i].name +
                                    "' before it is produced (ops are not in topological order)");
    }
    for (int o : node.outputs) {
      if (o == -1) continue;
      if (o < 0 || o >= n) return Status::invalidModel(node.describe() + " writes a tensor index out of range");
      if (defined[o]) return Status::invalidModel("tensor '" + tensors[o].name + "' is produced twice");
      defined[o] = true;
    }
  }
  for (int o : outputs) {
    if (o < 0 || o >= n) return Status::invalidModel("graph output index out of range");
    if (!defined[o]) return Status::invalidModel("graph output '" + tensors[o].name + "' is never produced");
  }
  return Status::ok();
}

}  // namespace osprey
