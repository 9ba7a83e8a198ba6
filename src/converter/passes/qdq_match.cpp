#include "converter/passes/qdq_match.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/dtype.h"

namespace osprey::passes::qdq {

namespace {

bool isByte(DataType t) { return t == DataType::UInt8 || t == DataType::Int8; }

int optionalInput(const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : -1; }

// The integer values of a constant of `type`, or false when `t` is not one.
bool integerConstant(const Graph& g, int t, DataType type, std::vector<int32_t>* values) {
  const TensorInfo& info = g.tensors[t];
  if (!info.isConstant || info.dtype != type || !info.hasShape) return false;
  const int64_t n = shapeElements(info.shape);
  if (n < 0 || info.data.size != static_cast<size_t>(n) * dataTypeSize(type)) return false;
  values->resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    (*values)[i] = static_cast<int32_t>(loadAsDouble(type, info.data.bytes.get(), i));
  return true;
}

// The type a QuantizeLinear writes: its zero point's, else output_dtype, else uint8.
DataType quantizeOutputType(const Graph& g, const Node& q) {
  const int zp = optionalInput(q, 2);
  if (zp >= 0) return g.tensors[zp].dtype;
  const int64_t attr = q.getInt("output_dtype", 0);
  return attr != 0 ? static_cast<DataType>(attr) : DataType::UInt8;
}

// The element type of the tensor a DequantizeLinear reads: recorded, else its zero point's,
// else what the QuantizeLinear producing it writes.
DataType dequantizeInputType(const Graph& g, const GraphUses& uses, const Node& dq) {
  const int x = dq.inputs[0];
  if (g.tensors[x].dtype != DataType::Undefined) return g.tensors[x].dtype;
  const int zp = optionalInput(dq, 2);
  if (zp >= 0) return g.tensors[zp].dtype;
  const int producer = uses.producer[x];
  if (producer >= 0 && g.nodes[producer].type == OpType::QuantizeLinear)
    return quantizeOutputType(g, g.nodes[producer]);
  return DataType::Undefined;
}

// Scale (input 1) and zero point (input 2) of a Q or DQ node of byte type `type`.
bool readScaleAndZeroPoint(const Graph& g, const Node& n, DataType type, QuantParams* p) {
  if (!isByte(type) || n.getInt("block_size", 0) != 0 || n.inputs.size() < 2 || n.inputs[1] < 0) return false;
  p->type = type;
  p->scale = n.inputs[1];
  p->zeroPoint = optionalInput(n, 2);
  p->axis = n.getInt("axis", 1);
  int64_t count = 0;
  const float* s = floatConstantData(g, p->scale, &count);
  const Shape& scaleShape = g.tensors[p->scale].shape;
  if (!s || count < 1 || scaleShape.size() > 1) return false;
  p->scales.assign(s, s + count);
  for (float v : p->scales)
    if (!(v > 0.f) || !std::isfinite(v)) return false;
  if (p->zeroPoint < 0) {
    p->zeroPoints.assign(p->scales.size(), 0);
    return true;
  }
  if (!integerConstant(g, p->zeroPoint, type, &p->zeroPoints) || p->zeroPoints.size() != p->scales.size())
    return false;
  return count == 1 || g.tensors[p->zeroPoint].shape == scaleShape;
}

}  // namespace

bool dequantizeOf(const Graph& g, const GraphUses& uses, int t, QuantParams* dq) {
  if (t < 0 || uses.producer[t] < 0) return false;
  const Node& n = g.nodes[uses.producer[t]];
  if (n.type != OpType::DequantizeLinear || n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0] < 0) return false;
  // The float path computes in float32; another output type would be a different computation.
  const int64_t outType = n.getInt("output_dtype", 0);
  if (outType != 0 && outType != static_cast<int64_t>(DataType::Float32)) return false;
  *dq = QuantParams();
  dq->node = uses.producer[t];
  dq->bytes = n.inputs[0];
  return readScaleAndZeroPoint(g, n, dequantizeInputType(g, uses, n), dq);
}

bool perTensorDequantizeOf(const Graph& g, const GraphUses& uses, int t, QuantParams* dq) {
  return dequantizeOf(g, uses, t, dq) && dq->perTensor();
}

bool quantizeAt(const Graph& g, int k, QuantParams* q) {
  const Node& n = g.nodes[k];
  if (n.type != OpType::QuantizeLinear || n.outputs.size() != 1 || n.outputs[0] < 0 || n.inputs.empty()) return false;
  // `precision` asks for the division in another float type than the integer ops use.
  if (n.getInt("precision", 0) != 0) return false;
  const DataType type = quantizeOutputType(g, n);
  const int64_t attr = n.getInt("output_dtype", 0);
  if (attr != 0 && attr != static_cast<int64_t>(type)) return false;
  *q = QuantParams();
  q->node = k;
  q->bytes = n.outputs[0];
  return readScaleAndZeroPoint(g, n, type, q) && q->perTensor();
}

bool soleQuantizeOf(const Graph& g, const GraphUses& uses, int t, QuantParams* q) {
  if (t < 0 || uses.isOutput[t] || uses.readers[t].size() != 1) return false;
  const Node& n = g.nodes[uses.readers[t][0]];
  // Read once, as the data: a Q reading `t` as its scale too is no pattern of quantize_static.
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if ((n.inputs[i] == t) != (i == 0)) return false;
  return quantizeAt(g, uses.readers[t][0], q);
}

bool perAxisAlong(const QuantParams& dq, int64_t axis, int64_t rank, int64_t length) {
  if (dq.perTensor()) return true;
  const int64_t a = dq.axis < 0 ? dq.axis + rank : dq.axis;
  return a == axis && static_cast<int64_t>(dq.scales.size()) == length;
}

bool sameQuantization(const QuantParams& a, const QuantParams& b) {
  return a.perTensor() && b.perTensor() && a.type == b.type && a.scales[0] == b.scales[0] &&
         a.zeroPoints[0] == b.zeroPoints[0];
}

bool constantBias(const Graph& g, const GraphUses& uses, int t, ConstantBias* bias) {
  *bias = ConstantBias();
  int64_t count = 0;
  if (const float* v = floatConstantData(g, t, &count)) {
    bias->shape = g.tensors[t].shape;
    bias->values.assign(v, v + count);
    return true;
  }
  if (t < 0 || uses.producer[t] < 0) return false;
  const Node& n = g.nodes[uses.producer[t]];
  if (n.type != OpType::DequantizeLinear || n.inputs.size() < 2 || n.inputs[0] < 0 || n.getInt("block_size", 0) != 0)
    return false;
  const int64_t outType = n.getInt("output_dtype", 0);
  if (outType != 0 && outType != static_cast<int64_t>(DataType::Float32)) return false;
  std::vector<int32_t> ints, zeros;
  if (!integerConstant(g, n.inputs[0], DataType::Int32, &ints)) return false;
  bias->shape = g.tensors[n.inputs[0]].shape;
  const float* s = floatConstantData(g, n.inputs[1], &count);
  if (!s || count < 1 || (count != 1 && count != static_cast<int64_t>(ints.size()))) return false;
  if (count != 1) {  // one scale per value: along the axis that holds them all
    const int64_t rank = static_cast<int64_t>(bias->shape.size()), axis = n.getInt("axis", 1);
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank || bias->shape[a] != count) return false;
  }
  bias->scales.assign(s, s + count);
  const int zp = optionalInput(n, 2);
  if (zp >= 0 && (!integerConstant(g, zp, DataType::Int32, &zeros) || zeros.size() != bias->scales.size()))
    return false;
  bool zeroPointIsZero = true;
  for (int32_t z : zeros) zeroPointIsZero = zeroPointIsZero && z == 0;
  bias->values.resize(ints.size());
  for (size_t i = 0; i < ints.size(); ++i) {
    const size_t p = count == 1 ? 0 : i;
    const double shifted = static_cast<double>(ints[i]) - (zeros.empty() ? 0.0 : zeros[p]);
    bias->values[i] = static_cast<float>(shifted * bias->scales[p]);  // as DequantizeLinear computes it
  }
  if (zeroPointIsZero) bias->integers = std::move(ints);
  return true;
}

bool biasIntegers(const ConstantBias& bias, const std::vector<float>& scales, int64_t n, std::vector<int32_t>* out) {
  const int64_t count = static_cast<int64_t>(bias.values.size());
  if (n < 1 || (count != 1 && count != n) || (scales.size() != 1 && static_cast<int64_t>(scales.size()) != n))
    return false;
  auto scaleAt = [&](const std::vector<float>& s, int64_t i) { return s[s.size() == 1 ? 0 : i]; };
  out->resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t from = count == 1 ? 0 : i;
    const float want = scaleAt(scales, i);
    // quantize_static writes the bias in exactly the scale x_scale * w_scale (float32 products);
    // a relative 1e-6 allows for a product taken in double before rounding.
    if (!bias.integers.empty() && closeTo(scaleAt(bias.scales, from), want, 1e-6)) {
      (*out)[i] = bias.integers[from];
      continue;
    }
    const double q = std::nearbyint(static_cast<double>(bias.values[from]) / want);
    if (!(q >= std::numeric_limits<int32_t>::min() && q <= std::numeric_limits<int32_t>::max())) return false;
    (*out)[i] = static_cast<int32_t>(q);
  }
  return true;
}

int Rewriter::constant(const std::string& name, DataType type, const Shape& shape, const void* data, size_t bytes) {
  TensorInfo t;
  t.name = name;
  t.dtype = type;
  t.shape = shape;
  t.isConstant = true;
  t.data = ConstantData::copyOf(data, bytes);
  const int idx = g.addTensor(std::move(t));
  uses.producer.push_back(-1);
  uses.readers.emplace_back();
  uses.isOutput.push_back(false);
  return idx;
}

int Rewriter::zeroPoint(const QuantParams& p, const std::string& name) {
  if (p.zeroPoint >= 0) return p.zeroPoint;
  const uint8_t zero = 0;  // 0 in uint8 and int8 alike
  return constant(name, p.type, {}, &zero, 1);
}

void Rewriter::setInputs(int k, std::vector<int> inputs) {
  for (int i : g.nodes[k].inputs) {
    if (i < 0) continue;
    auto& r = uses.readers[i];
    r.erase(std::remove(r.begin(), r.end(), k), r.end());
  }
  g.nodes[k].inputs = std::move(inputs);
  for (int i : g.nodes[k].inputs) {
    if (i < 0) continue;
    auto& r = uses.readers[i];
    if (std::find(r.begin(), r.end(), k) == r.end()) r.push_back(k);
  }
}

void Rewriter::takeOutput(int k, const QuantParams& q) {
  absorb(k, q.node, q.type);
}

void Rewriter::absorb(int k, int absorbed, DataType type) {
  const int out = g.nodes[absorbed].outputs[0];
  for (int o : g.nodes[k].outputs)
    if (o >= 0) uses.producer[o] = -1;
  g.nodes[k].outputs = {out};
  uses.producer[out] = k;
  g.tensors[out].dtype = type;
  setInputs(absorbed, {});
  drop[absorbed] = true;
}

}  // namespace osprey::passes::qdq
