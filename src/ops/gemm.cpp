// Gemm (Y = alpha * A' * B' + beta * C, C broadcast to (M, N)) and MatMul (numpy semantics:
// 1-D operands, broadcast batch dimensions; an optional bias [N], input 2, that the converter
// fuses: Y = A @ B + bias over every row), both with the fused activation the converter may
// attach. float32/float64 and the integer types run natively; float16/bfloat16 through float.
#include <string>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "ops/activation.h"
#include "ops/gemm_kernel.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

Status requireGemmDtype(const TensorView& v, const char* what) {
  switch (v.dtype) {
    case DataType::Float32:
    case DataType::Float64:
    case DataType::Float16:
    case DataType::BFloat16:
    case DataType::Int32:
    case DataType::Int64:
    case DataType::UInt32:
    case DataType::UInt64:
      return Status::ok();
    default:
      return Status::unsupported(dtypeError(v, what));
  }
}

// Calls impl(TypeTag<T>{}, inputs, out) for the output's dtype; float16/bfloat16 inputs are
// widened into float copies and the float result narrowed back.
template <class Impl>
Status dispatchGemmTypes(const TensorViews& inputs, TensorView& out, Impl&& impl) {
  switch (out.dtype) {
    case DataType::Float32:
      return impl(TypeTag<float>{}, inputs, out);
    case DataType::Float64:
      return impl(TypeTag<double>{}, inputs, out);
    case DataType::Int32:
      return impl(TypeTag<int32_t>{}, inputs, out);
    case DataType::Int64:
      return impl(TypeTag<int64_t>{}, inputs, out);
    case DataType::UInt32:
      return impl(TypeTag<uint32_t>{}, inputs, out);
    case DataType::UInt64:
      return impl(TypeTag<uint64_t>{}, inputs, out);
    case DataType::Float16:
    case DataType::BFloat16:
      break;
    default:
      return Status::unsupported(dtypeError(out, "the output"));
  }
  std::vector<std::vector<float>> copies(inputs.size());
  TensorViews wide = inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].hasValue()) continue;
    copies[i].resize(static_cast<size_t>(inputs[i].elements()));
    for (size_t e = 0; e < copies[i].size(); ++e)
      copies[i][e] = static_cast<float>(loadAsDouble(inputs[i].dtype, inputs[i].data, static_cast<int64_t>(e)));
    wide[i].dtype = DataType::Float32;
    wide[i].data = copies[i].data();
  }
  std::vector<float> result(static_cast<size_t>(out.elements()));
  TensorView wideOut = out;
  wideOut.dtype = DataType::Float32;
  wideOut.data = result.data();
  OSPREY_RETURN_IF_ERROR(impl(TypeTag<float>{}, wide, wideOut));
  for (size_t e = 0; e < result.size(); ++e) storeFromDouble(out.dtype, out.data, static_cast<int64_t>(e), result[e]);
  return Status::ok();
}

// Copies a rows x cols row-major matrix into its cols x rows transpose.
template <class T>
std::vector<T> transposed(const T* m, int64_t rows, int64_t cols) {
  std::vector<T> t(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = m[r * cols + c];
  return t;
}

// ---- Gemm ----

struct GemmSetup {
  int64_t M = 0, N = 0, K = 0;
  bool transA = false, transB = false;
  float alpha = 1.f, beta = 1.f;
  FusedActivation act;
};

Status setupGemm(const Node& node, const TensorViews& inputs, GemmSetup* s) {
  const TensorView &a = inputs[0], &b = inputs[1];
  OSPREY_RETURN_IF_ERROR(requireGemmDtype(a, "A"));
  OSPREY_RETURN_IF_ERROR(requireSameDtype(inputs, 0, 2));
  if (a.rank() != 2 || b.rank() != 2)
    return Status::invalidModel("A " + shapeToString(a.shape) + " and B " + shapeToString(b.shape) + " must be 2-D");
  s->transA = node.getInt("transA", 0) != 0;
  s->transB = node.getInt("transB", 0) != 0;
  s->alpha = node.getFloat("alpha", 1.f);
  s->beta = node.getFloat("beta", 1.f);
  s->M = s->transA ? a.shape[1] : a.shape[0];
  s->K = s->transA ? a.shape[0] : a.shape[1];
  const int64_t kB = s->transB ? b.shape[1] : b.shape[0];
  s->N = s->transB ? b.shape[0] : b.shape[1];
  if (kB != s->K)
    return Status::invalidModel("inner dimensions differ: A " + shapeToString(a.shape) +
                                (s->transA ? " (transposed)" : "") + " and B " + shapeToString(b.shape) +
                                (s->transB ? " (transposed)" : ""));
  if (inputs.size() > 2 && inputs[2].present) {
    const Shape& c = inputs[2].shape;
    const Shape target{s->M, s->N};
    bool ok = c.size() <= 2;
    for (size_t i = 0; ok && i < c.size(); ++i) ok = c[i] == 1 || c[i] == target[2 - c.size() + i];
    if (!ok)
      return Status::invalidModel("C " + shapeToString(c) + " does not broadcast to the result " +
                                  shapeToString(target));
  }
  return FusedActivation::fromNode(node, &s->act);
}

Status gemmShape(const Node& node, const TensorViews& inputs, TensorViews& outputs) {
  GemmSetup s;
  OSPREY_RETURN_IF_ERROR(setupGemm(node, inputs, &s));
  outputs[0].dtype = inputs[0].dtype;
  outputs[0].shape = {s.M, s.N};
  return Status::ok();
}

Status gemmReference(const Node& node, const TensorViews& inputs, TensorViews& outputs, ThreadPool* pool) {
  GemmSetup s;
  OSPREY_RETURN_IF_ERROR(setupGemm(node, inputs, &s));
  return dispatchGemmTypes(inputs, outputs[0], [&](auto tag, const TensorViews& in, TensorView& out) {
    using T = typename decltype(tag)::type;
    // Integer products are scaled in double: alpha and beta are floats.
    using Scale = std::conditional_t<std::is_integral_v<T>, double, T>;
    std::vector<T> aT, bT;
    const T* a = in[0].as<const T>();
    const T* b = in[1].as<const T>();
    if (s.transA) a = (aT = transposed(a, s.K, s.M)).data();
    if (s.transB) b = (bT = transposed(b, s.N, s.K)).data();
    const bool hasC = in.size() > 2 && in[2].present;
    const T* c = hasC ? in[2].as<const T>() : nullptr;
    std::vector<int64_t> cStrides = hasC ? broadcastStrides(in[2].shape, 2, {s.M, s.N}) : std::vector<int64_t>{0, 0};
    const Scale alpha = static_cast<Scale>(s.alpha), beta = static_cast<Scale>(s.beta);
    const bool plain = s.alpha == 1.f && (!hasC || s.beta == 1.f);
    const std::vector<int64_t> zero{0};
    batchedGemm(pool, 1, s.M, s.N, s.K, a, zero, b, zero, out.as<T>(), [&](int64_t, int64_t i, T* row) {
      const T* cRow = c ? c + i * cStrides[0] : nullptr;
      for (int64_t j = 0; j < s.N; ++j) {
        T v = row[j];
        if (!plain) {
          const Scale scaled = alpha * static_cast<Scale>(v) +
                               (cRow ? beta * static_cast<Scale>(cRow[j * cStrides[1]]) : Scale(0));
          if constexpr (std::is_integral_v<T>)
            v = saturatingCast<T>(scaled);
          else
            v = scaled;
        } else if (cRow) {
          if constexpr (std::is_integral_v<T>)
            v = wrappingAdd(v, cRow[j * cStrides[1]]);
          else
            v += cRow[j * cStrides[1]];
        }
        row[j] = applyActivation(s.act, v);
      }
    });
    return Status::ok();
  });
}

// ---- MatMul ----

struct MatMulSetup {
  int64_t M = 0, N = 0, K = 0;
  Shape batch, batchA, batchB;
  Shape outShape;
  FusedActivation act;
};

Status setupMatMul(const Node& node, const TensorViews& inputs, MatMulSetup* s) {
  const TensorView &a = inputs[0], &b = inputs[1];
  OSPREY_RETURN_IF_ERROR(requireGemmDtype(a, "A"));
  OSPREY_RETURN_IF_ERROR(requireSameDtype(inputs, 0, 1));
  if (a.rank() < 1 || b.rank() < 1)
    return Status::invalidModel("A " + shapeToString(a.shape) + " and B " + shapeToString(b.shape) +
                                " must have rank 1 or more");
  // A 1-D A is a row [1, K] and a 1-D B a column [K, 1]; the added dimension is dropped again.
  Shape sa = a.rank() == 1 ? Shape{1, a.shape[0]} : a.shape;
  Shape sb = b.rank() == 1 ? Shape{b.shape[0], 1} : b.shape;
  s->M = sa[sa.size() - 2];
  s->K = sa.back();
  s->N = sb.back();
  if (sb[sb.size() - 2] != s->K)
    return Status::invalidModel("inner dimensions differ: A " + shapeToString(a.shape) + " and B " +
                                shapeToString(b.shape));
  s->batchA = Shape(sa.begin(), sa.end() - 2);
  s->batchB = Shape(sb.begin(), sb.end() - 2);
  Status st = broadcastShapes(s->batchA, s->batchB, &s->batch);
  if (!st)
    return Status::invalidModel("batch dimensions of A " + shapeToString(a.shape) + " and B " + shapeToString(b.shape) +
                                " do not broadcast");
  s->outShape = s->batch;
  if (a.rank() > 1) s->outShape.push_back(s->M);
  if (b.rank() > 1) s->outShape.push_back(s->N);
  if (inputs.size() > 2 && inputs[2].present) {
    const TensorView& bias = inputs[2];
    if (bias.dtype != a.dtype)
      return Status::invalidModel("bias has dtype " + std::string(dataTypeName(bias.dtype)) + " but A has " +
                                  dataTypeName(a.dtype));
    if (b.rank() < 2)
      return Status::invalidModel("bias " + shapeToString(bias.shape) + " needs B of rank 2 or more, not " +
                                  shapeToString(b.shape));
    if (bias.shape != Shape{s->N})
      return Status::invalidModel("bias " + shapeToString(bias.shape) + " must have shape [" + std::to_string(s->N) +
                                  "] (the last dimension of the output " + shapeToString(s->outShape) + ")");
  }
  return FusedActivation::fromNode(node, &s->act);
}

Status matMulShape(const Node& node, const TensorViews& inputs, TensorViews& outputs) {
  MatMulSetup s;
  OSPREY_RETURN_IF_ERROR(setupMatMul(node, inputs, &s));
  outputs[0].dtype = inputs[0].dtype;
  outputs[0].shape = s.outShape;
  return Status::ok();
}

Status matMulReference(const Node& node, const TensorViews& inputs, TensorViews& outputs, ThreadPool* pool) {
  MatMulSetup s;
  OSPREY_RETURN_IF_ERROR(setupMatMul(node, inputs, &s));
  return dispatchGemmTypes(inputs, outputs[0], [&](auto tag, const TensorViews& in, TensorView& out) {
    using T = typename decltype(tag)::type;
    const T* a = in[0].as<const T>();
    const T* b = in[1].as<const T>();
    const T* bias = in.size() > 2 && in[2].present ? in[2].as<const T>() : nullptr;
    auto epilogue = [&](int64_t, int64_t, T* row) {
      if (bias)
        for (int64_t j = 0; j < s.N; ++j) row[j] += bias[j];
      if (s.act.kind != FusedActivation::Kind::None)
        for (int64_t j = 0; j < s.N; ++j) row[j] = applyActivation(s.act, row[j]);
    };
    const int64_t batches = shapeElements(s.batch);
    const std::vector<int64_t> zero{0};
    if (shapeElements(s.batchB) == 1 && shapeElements(s.batchA) == batches) {
      // One shared B: the batches of A are consecutive rows of a single product.
      batchedGemm(pool, 1, batches * s.M, s.N, s.K, a, zero, b, zero, out.as<T>(), epilogue);
      return Status::ok();
    }
    const size_t rank = s.batch.size();
    std::vector<int64_t> aOffsets(batches), bOffsets(batches);
    forEachBroadcast(s.batch, broadcastStrides(s.batchA, rank, s.batch), broadcastStrides(s.batchB, rank, s.batch),
                     [&](int64_t i, int64_t oa, int64_t ob) {
                       aOffsets[i] = oa * s.M * s.K;
                       bOffsets[i] = ob * s.K * s.N;
                     });
    batchedGemm(pool, batches, s.M, s.N, s.K, a, aOffsets, b, bOffsets, out.as<T>(), epilogue);
    return Status::ok();
  });
}

}  // namespace

const OpDef kOpDef_Gemm = {OpType::Gemm, "Gemm", 2, 3, 1, 1, gemmShape, gemmReference, nullptr, 0, false};
const OpDef kOpDef_MatMul = {OpType::MatMul, "MatMul", 2, 3, 1, 1, matMulShape, matMulReference, nullptr, 0, false};

}  // namespace osprey
