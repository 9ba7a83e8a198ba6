#include "converter/graph_writer.h"

namespace osprey {

std::string GraphWriter::uniqueName(const std::string& hint) {
  std::string name = hint;
  while (names_.count(name)) name = hint + "__" + std::to_string(counter_++);
  names_.insert(name);
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

}  // namespace osprey
