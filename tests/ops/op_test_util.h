// Runs one op through a real Session (shape computation, lowering, CPU backend) for op tests.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/graph.h"
#include "osprey/osprey.h"

namespace osprey::test {

struct OpInput {
  Tensor value;
  bool constant = false;  // a model constant (initializer) instead of a graph input
  bool absent = false;    // an omitted optional input
};

inline OpInput in(Tensor t) { return {std::move(t), false, false}; }
inline OpInput constant(Tensor t) { return {std::move(t), true, false}; }
inline OpInput absent() { return {Tensor(), false, true}; }

// A one-node model of `node` (its inputs/outputs are filled here); graph inputs go to `feeds`.
std::shared_ptr<Model> oneNodeModel(Node node, const std::vector<OpInput>& inputs, int numOutputs,
                                    std::map<std::string, Tensor>* feeds);

// Builds a one-node model of `node` (its inputs/outputs are filled here), runs it on the CPU
// backend (with `threads` threads) and returns its Status, so tests can check both results and errors.
Status runOp(Node node, const std::vector<OpInput>& inputs, int numOutputs, std::vector<Tensor>* outputs,
             int threads = 1);
// runOp with these backend settings; `relaid` (may be null) gets the activations the session
// kept in another layout than NCHW (Session::stats).
Status runOpWith(Node node, const std::vector<OpInput>& inputs, int numOutputs, std::vector<Tensor>* outputs,
                 int threads, const BackendConfig& config, int* relaid);

// The op's reference kernel run directly (no backend); data-movement ops without one run their
// lowering on the CPU backend.
Status referenceOp(Node node, const std::vector<OpInput>& inputs, int numOutputs, std::vector<Tensor>* outputs);

// runOp for a one-output op: the output, with a test failure (and an empty tensor) on error.
Tensor run1(const Node& node, const std::vector<OpInput>& inputs);
// Same dtype, shape and every value (compared as doubles), exactly.
void expectEqualValues(const Tensor& actual, const Tensor& expected);

// f applied to every element of x, stored as `outType` (x's own dtype by default).
Tensor naiveMap(const Tensor& x, DataType outType, const std::function<double(double)>& f);
inline Tensor naiveMap(const Tensor& x, const std::function<double(double)>& f) { return naiveMap(x, x.dtype(), f); }

// A one-input float op, its attributes and the formula it must compute on [lo, hi).
struct UnaryFormula {
  OpType type;
  std::function<void(Node&)> attrs;
  std::function<double(double)> f;
  double lo = -4, hi = 4;
};
// Runs every case on seeded random float32/float64/float16/bfloat16 data of an odd shape and
// compares with its formula: float32 within `float32Tolerance`, the others at fixed bounds.
void expectUnaryFormulas(const std::vector<UnaryFormula>& cases, double float32Tolerance);

// Seeded uniform random tensor in [lo, hi).
Tensor randomTensor(DataType dtype, const Shape& shape, uint32_t seed, double lo = -1.0, double hi = 1.0);
template <class T>
Tensor makeTensor(const Shape& shape, const std::vector<T>& values) {
  Tensor t(dataTypeOf<T>(), shape);
  for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = values[i];
  return t;
}
// Max |a-b| over two tensors of equal shape and dtype (as doubles); fails the test otherwise.
// Quantized-op inputs: bytes of type t (uint8 or int8) over the type's whole range, a float32
// scalar (a scale), a scalar of type t (a zero point).
inline int byteLow(DataType t) { return t == DataType::Int8 ? -128 : 0; }
inline int byteHigh(DataType t) { return t == DataType::Int8 ? 127 : 255; }
inline Tensor randomBytes(DataType t, const Shape& shape, uint32_t seed) {
  return randomTensor(t, shape, seed, byteLow(t), byteHigh(t) + 1);
}
inline Tensor scalar(float v) { return makeTensor<float>({}, {v}); }
inline Tensor zeroPoint(DataType t, int v) {
  Tensor z(t, {});
  storeFromDouble(t, z.data(), 0, v);
  return z;
}
double maxAbsDiff(const Tensor& a, const Tensor& b);
void expectNear(const Tensor& actual, const Tensor& expected, double atol, double rtol);
inline double at(const Tensor& t, int64_t i) { return loadAsDouble(t.dtype(), t.data(), i); }

// Row-major index helpers for naive reference loops in tests.
inline std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}
inline int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
  return flat;
}
// numpy broadcast of shapes, and the element of shape `in` that output element `flat` reads.
inline Shape broadcastOf(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (auto& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (auto& s : shapes)
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] != 1) out[rank - s.size() + i] = s[i];
  return out;
}
inline int64_t sourceIndex(const Shape& out, const Shape& in, int64_t flat) {
  std::vector<int64_t> idx = unravel(flat, out);
  int64_t off = 0;
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) off = off * in[d] + (in[d] == 1 ? 0 : idx[lead + d]);
  return off;
}
inline Node makeNode(OpType type) {
  Node n;
  n.type = type;
  return n;
}

}  // namespace osprey::test
