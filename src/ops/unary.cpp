// Elementwise unary ops: Relu, LeakyRelu, Clip, Sigmoid, Tanh, HardSigmoid, HardSwish, Erf,
// Gelu, Elu, Exp, Log, Sqrt, Reciprocal, Neg, Abs. Float dtypes compute in ComputeType (float
// for float16/bfloat16); the ops ONNX also defines on integers (Relu, Neg, Abs, Erf, Clip)
// wrap around like two's complement where the result does not fit (Abs/Neg of the lowest value).
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/broadcast_rows.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

enum class Domain { Float, Signed, Numeric };  // Signed: floats and signed integers

Domain domainOf(OpType t) {
  switch (t) {
    case OpType::Relu:
    case OpType::Neg:
      return Domain::Signed;
    case OpType::Abs:
    case OpType::Erf:
    case OpType::Clip:
      return Domain::Numeric;
    default:
      return Domain::Float;
  }
}

template <class T>
constexpr bool inDomain(Domain d) {
  if constexpr (std::is_same_v<T, bool>) {
    return false;
  } else if constexpr (isFloatLike<T>) {
    return true;
  } else {
    return d == Domain::Numeric || (d == Domain::Signed && std::is_signed_v<T>);
  }
}

Status checkDomain(const TensorView& x, Domain d) {
  bool ok = false;
  dispatchNumeric(x.dtype, [&](auto tag) { ok = inDomain<typename decltype(tag)::type>(d); });
  return ok ? Status::ok() : Status::unsupported(dtypeError(x, "input X"));
}

bool geluIsTanh(const Node& node) { return node.getString("approximate", "none") == "tanh"; }

Status unaryShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(checkDomain(in[0], domainOf(node.type)));
  if (node.type == OpType::Gelu) {
    std::string a = node.getString("approximate", "none");
    if (a != "none" && a != "tanh")
      return Status::invalidModel("attribute approximate is '" + a + "'; expected 'none' or 'tanh'");
  }
  return sameAsFirstInput(node, in, out);
}

template <class C>
inline C wrapNegate(C v) {
  if constexpr (std::is_integral_v<C>) {
    return static_cast<C>(WrapType<C>(0) - static_cast<WrapType<C>>(v));
  } else {
    return -v;
  }
}

template <class T>
bool unaryFor(const Node& node, const T* x, T* y, int64_t n, ThreadPool* pool) {
  using C = ComputeType<T>;
  auto run = [&](auto f) {
    mapElements(x, y, n, pool, [f](T v) { return T(f(C(v))); });
    return true;
  };
  if constexpr (isFloatLike<T>) {
    switch (node.type) {
      case OpType::LeakyRelu: {
        const C alpha = C(node.getFloat("alpha", 0.01f));
        return run([alpha](C v) { return v < C(0) ? alpha * v : v; });
      }
      case OpType::Sigmoid:
        return run([](C v) { return C(1) / (C(1) + std::exp(-v)); });
      case OpType::Tanh:
        return run([](C v) { return std::tanh(v); });
      case OpType::HardSigmoid: {
        const C alpha = C(node.getFloat("alpha", 0.2f)), beta = C(node.getFloat("beta", 0.5f));
        return run([alpha, beta](C v) { return std::fmax(C(0), std::fmin(C(1), alpha * v + beta)); });
      }
      case OpType::HardSwish:
        return run([](C v) { return v * std::fmax(C(0), std::fmin(C(1), C(1) / C(6) * v + C(0.5))); });
      case OpType::Gelu:
        if (geluIsTanh(node)) {
          const C k = C(0.7978845608028654);  // sqrt(2 / pi)
          return run([k](C v) { return C(0.5) * v * (C(1) + std::tanh(k * (v + C(0.044715) * v * v * v))); });
        }
        return run([](C v) { return C(0.5) * v * (C(1) + std::erf(v * C(0.7071067811865476))); });
      case OpType::Elu: {
        const C alpha = C(node.getFloat("alpha", 1.f));
        return run([alpha](C v) { return v < C(0) ? alpha * std::expm1(v) : v; });
      }
      case OpType::Exp:
        return run([](C v) { return std::exp(v); });
      case OpType::Log:
        return run([](C v) { return std::log(v); });
      case OpType::Sqrt:
        return run([](C v) { return std::sqrt(v); });
      case OpType::Reciprocal:
        return run([](C v) { return C(1) / v; });
      default:
        break;
    }
  }
  if constexpr (inDomain<T>(Domain::Signed)) {
    switch (node.type) {
      case OpType::Relu:
        return run([](C v) { return v < C(0) ? C(0) : v; });
      case OpType::Neg:
        return run([](C v) { return wrapNegate(v); });
      default:
        break;
    }
  }
  if constexpr (inDomain<T>(Domain::Numeric)) {
    switch (node.type) {
      case OpType::Abs:
        if constexpr (std::is_unsigned_v<C>)
          return run([](C v) { return v; });
        else
          return run([](C v) { return v < C(0) ? wrapNegate(v) : v; });
      case OpType::Erf:
        return run([](C v) { return static_cast<C>(std::erf(static_cast<double>(v))); });
      default:
        break;
    }
  }
  return false;
}

Status unaryKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  bool done = false;
  dispatchNumeric(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>)
      done = unaryFor<T>(node, in[0].as<const T>(), out[0].as<T>(), in[0].elements(), pool);
  });
  return done ? Status::ok() : Status::unsupported(dtypeError(in[0], "input X"));
}

// Clip: min and max are optional scalar inputs of X's dtype; min > max gives max everywhere
// (min is applied first, as numpy.clip does).
Status clipShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(checkDomain(in[0], Domain::Numeric));
  const char* names[] = {"", "min (input 1)", "max (input 2)"};
  for (size_t i = 1; i < in.size(); ++i) {
    if (!in[i].present) continue;
    if (in[i].dtype != in[0].dtype)
      return Status::invalidModel(std::string(names[i]) + " has dtype " + dataTypeName(in[i].dtype) + " but X has " +
                                  dataTypeName(in[0].dtype));
    if (in[i].elements() != 1)
      return Status::invalidModel(std::string(names[i]) + " must be a scalar, got shape " + shapeToString(in[i].shape));
  }
  return sameAsFirstInput(node, in, out);
}

Status clipKernel(const Node&, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  bool done = false;
  dispatchNumeric(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      using C = ComputeType<T>;
      auto bound = [&](size_t i, C fallback) {
        return in.size() > i && in[i].present ? C(in[i].as<const T>()[0]) : fallback;
      };
      const C lo = bound(1, std::numeric_limits<C>::lowest()), hi = bound(2, std::numeric_limits<C>::max());
      mapElements(in[0].as<const T>(), out[0].as<T>(), in[0].elements(), pool, [lo, hi](T x) {
        C v = C(x);
        v = v < lo ? lo : v;
        return T(v > hi ? hi : v);
      });
      done = true;
    }
  });
  return done ? Status::ok() : Status::unsupported(dtypeError(in[0], "input X"));
}

}  // namespace

#define OSPREY_UNARY_OP(name) \
  const OpDef kOpDef_##name = {OpType::name, #name, 1, 1, 1, 1, unaryShape, unaryKernel, nullptr, 0, false};
OSPREY_UNARY_OP(Relu)
OSPREY_UNARY_OP(LeakyRelu)
OSPREY_UNARY_OP(Sigmoid)
OSPREY_UNARY_OP(Tanh)
OSPREY_UNARY_OP(HardSigmoid)
OSPREY_UNARY_OP(HardSwish)
OSPREY_UNARY_OP(Erf)
OSPREY_UNARY_OP(Gelu)
OSPREY_UNARY_OP(Elu)
OSPREY_UNARY_OP(Exp)
OSPREY_UNARY_OP(Log)
OSPREY_UNARY_OP(Sqrt)
OSPREY_UNARY_OP(Reciprocal)
OSPREY_UNARY_OP(Neg)
OSPREY_UNARY_OP(Abs)
#undef OSPREY_UNARY_OP

const OpDef kOpDef_Clip = {OpType::Clip, "Clip", 1, 3, 1, 1, clipShape, clipKernel, nullptr, 0, false};

}  // namespace osprey
