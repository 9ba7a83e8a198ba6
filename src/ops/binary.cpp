// Elementwise binary ops with multidirectional (numpy) broadcasting: Add, Sub, Mul, Div, Pow,
// Equal, Less, Greater, and PRelu (slope broadcast to X only).
//
// Integer semantics: Add/Sub/Mul wrap around (two's complement), Div truncates toward zero as
// in C (ONNX test_div_int32_trunc). Integer division by zero, which ONNX leaves undefined and
// which would trap on x86, gives 0. Pow with an integer base and integer exponent is exact
// (negative exponents give 0 unless the base is 1 or -1); with a float exponent it is computed
// in double and converted back.
#include <cmath>
#include <type_traits>

#include "ops/broadcast_rows.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

enum class Arith { Add, Sub, Mul, Div };

template <Arith K, class C>
inline C arith(C x, C y) {
  if constexpr (std::is_floating_point_v<C>) {
    if constexpr (K == Arith::Add) return x + y;
    if constexpr (K == Arith::Sub) return x - y;
    if constexpr (K == Arith::Mul) return x * y;
    if constexpr (K == Arith::Div) return x / y;
  } else {
    using W = WrapType<C>;
    if constexpr (K == Arith::Add) return static_cast<C>(static_cast<W>(x) + static_cast<W>(y));
    if constexpr (K == Arith::Sub) return static_cast<C>(static_cast<W>(x) - static_cast<W>(y));
    if constexpr (K == Arith::Mul) return static_cast<C>(static_cast<W>(x) * static_cast<W>(y));
    if constexpr (K == Arith::Div) {
      if (y == 0) return 0;
      if constexpr (std::is_signed_v<C>) {
        if (y == -1) return static_cast<C>(W(0) - static_cast<W>(x));  // lowest / -1 would trap
      }
      return static_cast<C>(x / y);
    }
  }
}

enum class Compare { Equal, Less, Greater };

bool isNonBoolNumeric(DataType t) {
  bool ok = false;
  dispatchNumeric(t, [&](auto tag) { ok = !std::is_same_v<typename decltype(tag)::type, bool>; });
  return ok;
}

Status binaryShape(const Node& node, const TensorViews& in, TensorViews& out) {
  const TensorView &a = in[0], &b = in[1];
  const bool isPow = node.type == OpType::Pow;
  if (!isPow) OSPREY_RETURN_IF_ERROR(requireSameDtype(in, 0, 1));
  if (node.type == OpType::Equal) {
    if (!isNonBoolNumeric(a.dtype) && a.dtype != DataType::Bool && a.dtype != DataType::String)
      return Status::unsupported(dtypeError(a, "input A"));
  } else {
    if (!isNonBoolNumeric(a.dtype)) return Status::unsupported(dtypeError(a, "input A"));
    if (isPow && !isNonBoolNumeric(b.dtype)) return Status::unsupported(dtypeError(b, "exponent (input B)"));
  }
  bool compare = node.type == OpType::Equal || node.type == OpType::Less || node.type == OpType::Greater;
  out[0].dtype = compare ? DataType::Bool : a.dtype;
  return broadcastShapes(a.shape, b.shape, &out[0].shape);
}

template <Arith K>
Status arithKernel(const Node&, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  bool done = false;
  dispatchNumeric(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      using C = ComputeType<T>;
      broadcastBinary(out[0].shape, out[0].as<T>(), in[0].as<const T>(), in[0].shape, in[1].as<const T>(), in[1].shape,
                      pool, [](T x, T y) { return T(arith<K, C>(C(x), C(y))); });
      done = true;
    }
  });
  return done ? Status::ok() : Status::unsupported(dtypeError(in[0], "input A"));
}

template <Compare K, class C>
inline bool compare(const C& x, const C& y) {
  if constexpr (K == Compare::Equal) return x == y;
  if constexpr (K == Compare::Less) return x < y;
  if constexpr (K == Compare::Greater) return x > y;
}

template <Compare K>
Status compareKernel(const Node&, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  bool* o = out[0].as<bool>();
  if (in[0].dtype == DataType::String) {
    if (!in[0].strings || !in[1].strings) return Status::unsupported("string comparison needs constant inputs");
    broadcastBinary(out[0].shape, o, in[0].strings->data(), in[0].shape, in[1].strings->data(), in[1].shape, pool,
                    [](const std::string& x, const std::string& y) { return compare<K, std::string>(x, y); });
    return Status::ok();
  }
  bool done = false;
  dispatchNumeric(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    broadcastBinary(out[0].shape, o, in[0].as<const T>(), in[0].shape, in[1].as<const T>(), in[1].shape, pool,
                    [](T x, T y) { return compare<K, C>(C(x), C(y)); });
    done = true;
  });
  return done ? Status::ok() : Status::unsupported(dtypeError(in[0], "input A"));
}

// Reads a numeric tensor into a vector of C (the exponent of a mixed-type Pow).
template <class C>
std::vector<C> convertedValues(const TensorView& v) {
  std::vector<C> r(static_cast<size_t>(v.elements()));
  dispatchNumeric(v.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = v.as<const T>();
    for (size_t i = 0; i < r.size(); ++i) r[i] = static_cast<C>(static_cast<ComputeType<T>>(p[i]));
  });
  return r;
}

template <class T>
T integerPow(T base, int64_t e) {
  if (e < 0) {
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<T>) {
      if (base == -1) return (e & 1) ? T(-1) : T(1);
    }
    return 0;  // |1 / base^e| < 1 truncates to 0 (base 0: undefined in ONNX)
  }
  using W = WrapType<T>;
  W result = 1, b = static_cast<W>(base);
  for (uint64_t n = static_cast<uint64_t>(e); n; n >>= 1) {
    if (n & 1) result *= b;
    b *= b;
  }
  return static_cast<T>(result);
}

template <class T>
void powKernelFor(const TensorView& a, const TensorView& b, TensorView& y, ThreadPool* pool) {
  T* o = y.as<T>();
  const T* x = a.as<const T>();
  if constexpr (isFloatLike<T>) {
    using C = ComputeType<T>;
    std::vector<C> buf;
    const C* e;
    if (b.dtype == a.dtype && std::is_same_v<T, C>) {
      e = b.as<const C>();
    } else {
      buf = convertedValues<C>(b);
      e = buf.data();
    }
    auto run = [&](auto f) { broadcastBinary(y.shape, o, x, a.shape, e, b.shape, pool, f); };
    // Squares and cubes are common in exported LayerNorm / GELU graphs.
    if (b.elements() == 1 && e[0] == C(2))
      return run([](T v, C) {
        C c = C(v);
        return T(c * c);
      });
    if (b.elements() == 1 && e[0] == C(3))
      return run([](T v, C) {
        C c = C(v);
        return T(c * c * c);
      });
    if (b.elements() == 1 && e[0] == C(1)) return run([](T v, C) { return v; });
    run([](T v, C p) { return T(std::pow(C(v), p)); });
  } else {
    bool floatExponent = b.dtype == DataType::Float32 || b.dtype == DataType::Float64 || b.dtype == DataType::Float16 ||
                         b.dtype == DataType::BFloat16;
    if (floatExponent) {
      std::vector<double> e = convertedValues<double>(b);
      broadcastBinary(y.shape, o, x, a.shape, e.data(), b.shape, pool,
                      [](T v, double p) { return saturatingCast<T>(std::pow(static_cast<double>(v), p)); });
    } else {
      std::vector<int64_t> e = convertedValues<int64_t>(b);
      broadcastBinary(y.shape, o, x, a.shape, e.data(), b.shape, pool,
                      [](T v, int64_t p) { return integerPow<T>(v, p); });
    }
  }
}

Status powKernel(const Node&, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  bool done = false;
  dispatchNumeric(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      powKernelFor<T>(in[0], in[1], out[0], pool);
      done = true;
    }
  });
  return done ? Status::ok() : Status::unsupported(dtypeError(in[0], "input A"));
}

Status preluShape(const Node&, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(requireSameDtype(in, 0, 1));
  if (!isNonBoolNumeric(in[0].dtype)) return Status::unsupported(dtypeError(in[0], "input X"));
  Shape s;
  Status st = broadcastShapes(in[0].shape, in[1].shape, &s);
  if (!st.isOk() || s != in[0].shape)
    return Status::invalidModel("slope of shape " + shapeToString(in[1].shape) + " does not broadcast to X of shape " +
                                shapeToString(in[0].shape));
  out[0].dtype = in[0].dtype;
  out[0].shape = in[0].shape;
  return Status::ok();
}

Status preluKernel(const Node&, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  bool done = false;
  dispatchNumeric(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      using C = ComputeType<T>;
      broadcastBinary(out[0].shape, out[0].as<T>(), in[0].as<const T>(), in[0].shape, in[1].as<const T>(), in[1].shape,
                      pool, [](T x, T slope) {
                        if constexpr (std::is_unsigned_v<C>) {
                          return x;
                        } else {
                          return C(x) < C(0) ? T(arith<Arith::Mul, C>(C(slope), C(x))) : x;
                        }
                      });
      done = true;
    }
  });
  return done ? Status::ok() : Status::unsupported(dtypeError(in[0], "input X"));
}

}  // namespace

const OpDef kOpDef_Add = {OpType::Add, "Add", 2, 2, 1, 1, binaryShape, arithKernel<Arith::Add>, nullptr, 0, false};
const OpDef kOpDef_Sub = {OpType::Sub, "Sub", 2, 2, 1, 1, binaryShape, arithKernel<Arith::Sub>, nullptr, 0, false};
const OpDef kOpDef_Mul = {OpType::Mul, "Mul", 2, 2, 1, 1, binaryShape, arithKernel<Arith::Mul>, nullptr, 0, false};
const OpDef kOpDef_Div = {OpType::Div, "Div", 2, 2, 1, 1, binaryShape, arithKernel<Arith::Div>, nullptr, 0, false};
const OpDef kOpDef_Pow = {OpType::Pow, "Pow", 2, 2, 1, 1, binaryShape, powKernel, nullptr, 0, false};
const OpDef kOpDef_Equal = {OpType::Equal, "Equal", 2,    2, 1, 1, binaryShape, compareKernel<Compare::Equal>,
                            nullptr,       0,       false};
const OpDef kOpDef_Less = {OpType::Less, "Less", 2,    2, 1, 1, binaryShape, compareKernel<Compare::Less>,
                           nullptr,      0,      false};
const OpDef kOpDef_Greater = {OpType::Greater, "Greater", 2,    2, 1, 1, binaryShape, compareKernel<Compare::Greater>,
                              nullptr,         0,         false};
const OpDef kOpDef_PRelu = {OpType::PRelu, "PRelu", 2, 2, 1, 1, preluShape, preluKernel, nullptr, 0, false};

}  // namespace osprey
