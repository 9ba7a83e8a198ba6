// Softmax / LogSoftmax, LayerNormalization and the reductions (Sum, Mean, Max, Min over a
// contiguous run of axes), each over an (outer, axis, inner) view of the input.
#include "backends/opencl/cl_execution.h"

namespace osprey::opencl {

namespace {

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// The axis attribute normalised to [0, rank), or -1 when out of range.
int64_t axisOf(const Node& node, size_t rank) {
  int64_t axis = node.getInt("axis", -1);
  if (axis < 0) axis += static_cast<int64_t>(rank);
  return axis >= 0 && axis < static_cast<int64_t>(rank) ? axis : -1;
}

class LineExecution : public CLExecution {
 public:
  // `code`: LogSoftmax flag for softmax, the reduction for reduce.
  LineExecution(OpenCLBackend* b, const char* name, int64_t outer, int64_t axis, int64_t inner, int code)
      : CLExecution(b), name_(name), outer_(outer), axis_(axis), inner_(inner), code_(code) {}
  Status onResize(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    return kernel_.create(cl(), "normalize", name_, {in[0], out[0]});
  }
  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    kernel_.begin()
        .mem(ref(in[0]))
        .mem(ref(out[0]))
        .arg(cl_int(outer_))
        .arg(cl_int(axis_))
        .arg(cl_int(inner_))
        .arg(cl_int(code_));
    return kernel_.launch(cl(), inner_, outer_);
  }

 private:
  const char* name_;
  int64_t outer_, axis_, inner_;
  int code_;
  Kernel kernel_;
};

class LayerNormExecution : public CLExecution {
 public:
  LayerNormExecution(OpenCLBackend* b, int64_t rows, int64_t size, float eps)
      : CLExecution(b), rows_(rows), size_(size), eps_(eps) {}
  Status onResize(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    const RuntimeTensor* bias = in.size() > 2 && in[2] ? in[2] : in[1];
    return kernel_.create(cl(), "normalize", "layer_norm", {in[0], in[1], bias, out[0]});
  }
  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    const bool hasBias = in.size() > 2 && in[2];
    kernel_.begin().mem(ref(in[0])).mem(ref(in[1])).mem(hasBias ? ref(in[2]) : ref(in[1])).arg(cl_int(hasBias));
    kernel_.mem(ref(out[0])).arg(cl_int(rows_)).arg(cl_int(size_)).arg(eps_);
    size_t global = static_cast<size_t>(rows_) * 64, local = 64;
    return kernel_.launchGroups(cl(), 1, &global, &local);
  }

 private:
  int64_t rows_, size_;
  float eps_;
  Kernel kernel_;
};

}  // namespace

std::unique_ptr<Execution> createSoftmax(OpenCLBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                         const std::vector<RuntimeTensor*>& out) {
  if (!op.node || in.size() != 1 || !in[0] || !allFloat(in) || !allFloat(out)) return nullptr;
  const Shape& s = in[0]->shape;
  if (s.empty()) return nullptr;
  const int64_t axis = axisOf(*op.node, s.size());
  if (axis < 0) return nullptr;
  return std::make_unique<LineExecution>(b, "softmax", product(s, 0, axis), s[axis], product(s, axis + 1, s.size()),
                                         op.type == OpType::LogSoftmax ? 1 : 0);
}

std::unique_ptr<Execution> createLayerNorm(OpenCLBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                           const std::vector<RuntimeTensor*>& out) {
  if (!op.node || in.size() < 2 || !in[0] || !in[1] || !allFloat(in) || !allFloat(out)) return nullptr;
  for (size_t i = 1; i < out.size(); ++i)
    if (out[i]) return nullptr;  // Mean / InvStdDev outputs
  const Shape& s = in[0]->shape;
  if (s.empty()) return nullptr;
  const int64_t axis = axisOf(*op.node, s.size());
  if (axis < 0) return nullptr;
  const int64_t size = product(s, axis, s.size());
  if (in[1]->elements() != size || (in.size() > 2 && in[2] && in[2]->elements() != size)) return nullptr;
  return std::make_unique<LayerNormExecution>(b, product(s, 0, axis), size, op.node->getFloat("epsilon", 1e-5f));
}

std::unique_ptr<Execution> createReduce(OpenCLBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                        const std::vector<RuntimeTensor*>& out) {
  if (!op.node || in.empty() || !in[0] || in[0]->dtype != DataType::Float32 || out.size() != 1 || !allFloat(out))
    return nullptr;
  int code = 0;
  switch (op.type) {
    case OpType::ReduceSum:
      code = 0;
      break;
    case OpType::ReduceMean:
      code = 1;
      break;
    case OpType::ReduceMax:
      code = 2;
      break;
    case OpType::ReduceMin:
      code = 3;
      break;
    default:
      return nullptr;
  }
  const Shape& s = in[0]->shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  std::vector<int64_t> axes;
  if (in.size() > 1 && in[1]) {
    if (!in[1]->constData || in[1]->dtype != DataType::Int64) return nullptr;
    const auto* v = reinterpret_cast<const int64_t*>(in[1]->constData);
    axes.assign(v, v + in[1]->elements());
  } else {
    axes = op.node->getInts("axes");
  }
  if (axes.empty()) {
    if (op.node->getInt("noop_with_empty_axes", 0) != 0) return nullptr;  // identity: the CPU copies it
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  std::vector<bool> reduced(s.size(), false);
  for (int64_t a : axes) {
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return nullptr;
    reduced[a] = true;
  }
  // One contiguous run of reduced axes (size-1 axes may sit anywhere).
  int64_t first = -1, last = -1;
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d] && s[d] != 1) {
      if (first < 0) first = d;
      last = d;
    }
  if (first < 0)
    return std::make_unique<LineExecution>(b, "reduce", in[0]->elements(), 1, 1, code);  // only size-1 axes
  for (int64_t d = first; d <= last; ++d)
    if (!reduced[d] && s[d] != 1) return nullptr;
  return std::make_unique<LineExecution>(b, "reduce", product(s, 0, first), product(s, first, last + 1),
                                         product(s, last + 1, s.size()), code);
}

}  // namespace osprey::opencl
