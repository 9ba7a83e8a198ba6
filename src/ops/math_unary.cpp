// Elementwise unary math: trigonometric and hyperbolic functions, Round (half to even), Floor,
// Ceil, Sign, IsNaN, IsInf, and the activations Selu, Celu, Softplus, Softsign,
// ThresholdedRelu, Shrink, Mish and Swish. Float dtypes compute in ComputeType (float for
// float16/bfloat16). Sign and Shrink also take integers; Shrink computes integers in double and
// converts back the way numpy's astype does (truncation, here saturating instead of undefined).
#include <cmath>
#include <string>
#include <type_traits>

#include "ops/broadcast_rows.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

// Float: float dtypes only; Numeric: every numeric dtype except bool.
enum class Domain { Float, Numeric };

Domain domainOf(OpType t) { return t == OpType::Sign || t == OpType::Shrink ? Domain::Numeric : Domain::Float; }

bool returnsBool(OpType t) { return t == OpType::IsNaN || t == OpType::IsInf; }

template <class T>
constexpr bool inDomain(Domain d) {
  if constexpr (std::is_same_v<T, bool>) return false;
  return isFloatLike<T> || d == Domain::Numeric;
}

Status mathShape(const Node& node, const TensorViews& in, TensorViews& out) {
  const Domain d = domainOf(node.type);
  bool ok = false;
  dispatchNumeric(in[0].dtype, [&](auto tag) { ok = inDomain<typename decltype(tag)::type>(d); });
  if (!ok) return Status::unsupported(dtypeError(in[0], "input X"));
  if (node.type == OpType::Celu && node.getFloat("alpha", 1.f) == 0.f)
    return Status::invalidModel("attribute alpha of Celu must not be 0");
  out[0].dtype = returnsBool(node.type) ? DataType::Bool : in[0].dtype;
  out[0].shape = in[0].shape;
  return Status::ok();
}

// log(1 + exp(v)) without overflow for large v.
template <class C>
C softplus(C v) {
  return v > C(0) ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
}

template <class T>
bool floatOp(const Node& node, const T* x, T* y, int64_t n, ThreadPool* pool) {
  using C = ComputeType<T>;
  auto run = [&](auto f) {
    mapElements(x, y, n, pool, [f](T v) { return T(f(C(v))); });
    return true;
  };
  switch (node.type) {
    case OpType::Sin: return run([](C v) { return std::sin(v); });
    case OpType::Cos: return run([](C v) { return std::cos(v); });
    case OpType::Tan: return run([](C v) { return std::tan(v); });
    case OpType::Asin: return run([](C v) { return std::asin(v); });
    case OpType::Acos: return run([](C v) { return std::acos(v); });
    case OpType::Atan: return run([](C v) { return std::atan(v); });
    case OpType::Sinh: return run([](C v) { return std::sinh(v); });
    case OpType::Cosh: return run([](C v) { return std::cosh(v); });
    case OpType::Asinh: return run([](C v) { return std::asinh(v); });
    case OpType::Acosh: return run([](C v) { return std::acosh(v); });
    case OpType::Atanh: return run([](C v) { return std::atanh(v); });
    // nearbyint rounds in the default mode, to nearest with ties to even, as ONNX Round asks.
    case OpType::Round: return run([](C v) { return std::nearbyint(v); });
    case OpType::Floor: return run([](C v) { return std::floor(v); });
    case OpType::Ceil: return run([](C v) { return std::ceil(v); });
    case OpType::Selu: {
      const C alpha = C(node.getFloat("alpha", 1.67326319217681884765625f));
      const C gamma = C(node.getFloat("gamma", 1.05070102214813232421875f));
      return run([alpha, gamma](C v) { return v > C(0) ? gamma * v : gamma * alpha * std::expm1(v); });
    }
    case OpType::Celu: {
      const C alpha = C(node.getFloat("alpha", 1.f));
      return run([alpha](C v) { return v > C(0) ? v : alpha * std::expm1(v / alpha); });
    }
    case OpType::Softplus: return run([](C v) { return softplus(v); });
    case OpType::Softsign: return run([](C v) { return v / (C(1) + std::fabs(v)); });
    case OpType::ThresholdedRelu: {
      const C alpha = C(node.getFloat("alpha", 1.f));
      return run([alpha](C v) { return v > alpha ? v : C(0); });
    }
    case OpType::Mish: return run([](C v) { return v * std::tanh(softplus(v)); });
    case OpType::Swish: {
      const C alpha = C(node.getFloat("alpha", 1.f));
      return run([alpha](C v) { return v / (C(1) + std::exp(-alpha * v)); });
    }
    default: return false;
  }
}

template <class T>
bool numericOp(const Node& node, const T* x, T* y, int64_t n, ThreadPool* pool) {
  using C = ComputeType<T>;
  switch (node.type) {
    case OpType::Sign:
      // Keeps zero and NaN as they are, as numpy.sign does.
      mapElements(x, y, n, pool, [](T v) { return C(v) > C(0) ? T(C(1)) : C(v) < C(0) ? T(C(-1)) : v; });
      return true;
    case OpType::Shrink: {
      const double bias = node.getFloat("bias", 0.f), lambd = node.getFloat("lambd", 0.5f);
      if constexpr (isFloatLike<T>) {
        const C b = C(bias), l = C(lambd);
        mapElements(x, y, n, pool, [b, l](T t) {
          const C v = C(t);
          return T(v < -l ? v + b : v > l ? v - b : C(0));
        });
      } else {
        mapElements(x, y, n, pool, [bias, lambd](T t) {
          const double v = static_cast<double>(t);
          return saturatingCast<T>(v < -lambd ? v + bias : v > lambd ? v - bias : 0.0);
        });
      }
      return true;
    }
    default: return false;
  }
}

template <class T>
bool classifyOp(const Node& node, const T* x, bool* y, int64_t n, ThreadPool* pool) {
  using C = ComputeType<T>;
  switch (node.type) {
    case OpType::IsNaN: mapElements(x, y, n, pool, [](T v) { return std::isnan(C(v)); }); return true;
    case OpType::IsInf: {
      const bool pos = node.getInt("detect_positive", 1) != 0, neg = node.getInt("detect_negative", 1) != 0;
      mapElements(x, y, n, pool, [pos, neg](T t) {
        const C v = C(t);
        return std::isinf(v) && (v > C(0) ? pos : neg);
      });
      return true;
    }
    default: return false;
  }
}

Status mathKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  bool done = false;
  dispatchNumeric(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const T* x = in[0].as<const T>();
      const int64_t n = in[0].elements();
      if constexpr (isFloatLike<T>) {
        if (returnsBool(node.type)) {
          done = classifyOp<T>(node, x, out[0].as<bool>(), n, pool);
          return;
        }
        done = floatOp<T>(node, x, out[0].as<T>(), n, pool);
      }
      if (!done) done = numericOp<T>(node, x, out[0].as<T>(), n, pool);
    }
  });
  return done ? Status::ok() : Status::unsupported(dtypeError(in[0], "input X"));
}

}  // namespace

#define OSPREY_MATH_OP(name) \
  const OpDef kOpDef_##name = {OpType::name, #name, 1, 1, 1, 1, mathShape, mathKernel, nullptr, 0, false};
OSPREY_MATH_OP(Sin)
OSPREY_MATH_OP(Cos)
OSPREY_MATH_OP(Tan)
OSPREY_MATH_OP(Asin)
OSPREY_MATH_OP(Acos)
OSPREY_MATH_OP(Atan)
OSPREY_MATH_OP(Sinh)
OSPREY_MATH_OP(Cosh)
OSPREY_MATH_OP(Asinh)
OSPREY_MATH_OP(Acosh)
OSPREY_MATH_OP(Atanh)
OSPREY_MATH_OP(Round)
OSPREY_MATH_OP(Floor)
OSPREY_MATH_OP(Ceil)
OSPREY_MATH_OP(Sign)
OSPREY_MATH_OP(IsNaN)
OSPREY_MATH_OP(IsInf)
OSPREY_MATH_OP(Selu)
OSPREY_MATH_OP(Celu)
OSPREY_MATH_OP(Softplus)
OSPREY_MATH_OP(Softsign)
OSPREY_MATH_OP(ThresholdedRelu)
OSPREY_MATH_OP(Shrink)
OSPREY_MATH_OP(Mish)
OSPREY_MATH_OP(Swish)
#undef OSPREY_MATH_OP

}  // namespace osprey
