#include "converter/graph_writer.h"

#include <cstring>

namespace osprey {

std::string GraphWriter::uniqueName(const std::string& hint) {
  std::string name = hint;
  while (names_->used.count(name)) name = hint + "__" + std::to_string(names_->counter++);
  names_->used.insert(name);
  return name;
}

int GraphWriter::temp(const std::string& hint) {
  TensorInfo t;
  t.name = uniqueName(hint);
  t.hasShape = false;
  return graph_->addTensor(std::move(t));
}

int GraphWriter::addConstant(const std::string& hint, DataType dtype, const Shape& shape, const void* data,
                             size_t bytes) {
  TensorInfo t;
  t.name = uniqueName(hint);
  t.dtype = dtype;
  t.shape = shape;
  t.isConstant = true;
  t.data = ConstantData::copyOf(data, bytes);
  return graph_->addTensor(std::move(t));
}

int GraphWriter::addInt64Constant(const std::string& hint, const std::vector<int64_t>& values, bool scalar) {
  const Shape shape = scalar ? Shape{} : Shape{static_cast<int64_t>(values.size())};
  return addConstant(hint, DataType::Int64, shape, values.data(), values.size() * sizeof(int64_t));
}

int GraphWriter::addFloatConstant(const std::string& hint, const std::vector<float>& values, bool scalar) {
  const Shape shape = scalar ? Shape{} : Shape{static_cast<int64_t>(values.size())};
  return addConstant(hint, DataType::Float32, shape, values.data(), values.size() * sizeof(float));
}

Node& GraphWriter::addNode(OpType type, const std::string& name, std::vector<int> inputs, std::vector<int> outputs) {
  Node n;
  n.type = type;
  n.name = nodeNames_ == NodeNames::Unique ? uniqueName(name) : name;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  graph_->nodes.push_back(std::move(n));
  return graph_->nodes.back();
}

int GraphWriter::asInt64(int index, const std::string& hint) {
  const TensorInfo& t = graph_->tensors[index];
  if (t.isConstant && t.dtype == DataType::Int64) return index;
  if (t.isConstant && t.dtype == DataType::Int32) {
    std::vector<int64_t> wide(static_cast<size_t>(shapeElements(t.shape)));
    for (size_t i = 0; i < wide.size(); ++i) {
      int32_t v;
      std::memcpy(&v, t.data.bytes.get() + i * 4, 4);
      wide[i] = v;
    }
    const Shape shape = t.shape;  // addConstant may grow the tensor list that t lies in
    return addConstant(hint, DataType::Int64, shape, wide.data(), wide.size() * 8);
  }
  int out = temp(hint);
  addNode(OpType::Cast, hint + "_int64", {index}, {out}).setInt("to", static_cast<int64_t>(DataType::Int64));
  return out;
}

}  // namespace osprey
