// Logical, bitwise and comparison ops with multidirectional (numpy) broadcasting: And, Or, Xor,
// Not (bool), BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot (integers), BitShift (unsigned
// integers), GreaterOrEqual, LessOrEqual (numeric, bool output) and Mod.
//
// Mod: with fmod=0 (integers only) the result takes the sign of the divisor, as Python's %;
// with fmod=1 it takes the sign of the dividend, as C's fmod. Integer modulo by zero, which
// ONNX leaves undefined and which would trap on x86, gives 0 (as integer Div does).
// BitShift by the bit width or more gives 0 (numpy's result on x86 would be undefined).
#include <cmath>
#include <string>
#include <type_traits>

#include "ops/broadcast_rows.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

enum class Logic {
  And,
  Or,
  Xor,
  BitwiseAnd,
  BitwiseOr,
  BitwiseXor,
  BitShift,
  GreaterOrEqual,
  LessOrEqual,
  Mod,
};

// The element types each op accepts (its ONNX type constraint).
template <Logic K, class T>
constexpr bool accepts() {
  constexpr bool isBool = std::is_same_v<T, bool>;
  constexpr bool isInteger = std::is_integral_v<T> && !isBool;
  switch (K) {
    case Logic::And:
    case Logic::Or:
    case Logic::Xor:
      return isBool;
    case Logic::BitwiseAnd:
    case Logic::BitwiseOr:
    case Logic::BitwiseXor:
      return isInteger;
    case Logic::BitShift:
      return isInteger && std::is_unsigned_v<T>;
    case Logic::GreaterOrEqual:
    case Logic::LessOrEqual:
    case Logic::Mod:
      return !isBool;
  }
  return false;
}

template <Logic K>
bool acceptsDtype(DataType t) {
  bool ok = false;
  dispatchNumeric(t, [&](auto tag) { ok = accepts<K, typename decltype(tag)::type>(); });
  return ok;
}

constexpr bool returnsBool(Logic k) {
  return k == Logic::And || k == Logic::Or || k == Logic::Xor || k == Logic::GreaterOrEqual ||
         k == Logic::LessOrEqual;
}

Status readShiftDirection(const Node& node, bool* left) {
  if (!node.hasAttr("direction")) return Status::invalidModel("attribute direction is missing");
  const std::string d = node.getString("direction", "");
  if (d != "LEFT" && d != "RIGHT")
    return Status::invalidModel("attribute direction is '" + d + "'; expected 'LEFT' or 'RIGHT'");
  *left = d == "LEFT";
  return Status::ok();
}

template <Logic K>
Status logicShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(requireSameDtype(in, 0, 1));
  if (!acceptsDtype<K>(in[0].dtype)) return Status::unsupported(dtypeError(in[0], "input A"));
  if constexpr (K == Logic::And || K == Logic::Or || K == Logic::Xor) {
    // Opset 1 broadcast along an explicit axis has no numpy equivalent.
    if (node.hasAttr("axis")) return Status::unsupported("legacy broadcast with attribute axis is not supported");
  }
  if constexpr (K == Logic::BitShift) {
    bool left;
    OSPREY_RETURN_IF_ERROR(readShiftDirection(node, &left));
  }
  if constexpr (K == Logic::Mod) {
    const int64_t fmod = node.getInt("fmod", 0);
    if (fmod != 0 && fmod != 1)
      return Status::invalidModel("attribute fmod is " + std::to_string(fmod) + "; expected 0 or 1");
    if (fmod == 0 && dispatchFloat(in[0].dtype, [](auto) {}))
      return Status::invalidModel(std::string("attribute fmod must be 1 for floating-point inputs (") +
                                  dataTypeName(in[0].dtype) + ")");
  }
  out[0].dtype = returnsBool(K) ? DataType::Bool : in[0].dtype;
  return broadcastShapes(in[0].shape, in[1].shape, &out[0].shape);
}

// Integer remainder without undefined behaviour; `floored` gives the sign of the divisor.
template <class C>
C integerMod(C a, C b, bool floored) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<C>) {
    if (b == -1) return 0;  // lowest % -1 would trap
  }
  C r = static_cast<C>(a % b);
  if constexpr (std::is_signed_v<C>) {
    if (floored && r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
  }
  return r;
}

template <class T>
T shift(T x, T y, bool left) {
  using W = std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>;
  if (static_cast<uint64_t>(y) >= sizeof(T) * 8) return T(0);
  const W v = static_cast<W>(x), s = static_cast<W>(y);
  return static_cast<T>(left ? v << s : v >> s);
}

template <Logic K, class T>
void logicFor(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  using C = ComputeType<T>;
  const T* a = in[0].as<const T>();
  const T* b = in[1].as<const T>();
  auto run = [&](auto f) {
    using O = std::conditional_t<returnsBool(K), bool, T>;
    broadcastBinary(out[0].shape, out[0].as<O>(), a, in[0].shape, b, in[1].shape, pool, f);
  };
  if constexpr (K == Logic::And) run([](bool x, bool y) { return x && y; });
  if constexpr (K == Logic::Or) run([](bool x, bool y) { return x || y; });
  if constexpr (K == Logic::Xor) run([](bool x, bool y) { return x != y; });
  if constexpr (K == Logic::BitwiseAnd) run([](T x, T y) { return static_cast<T>(x & y); });
  if constexpr (K == Logic::BitwiseOr) run([](T x, T y) { return static_cast<T>(x | y); });
  if constexpr (K == Logic::BitwiseXor) run([](T x, T y) { return static_cast<T>(x ^ y); });
  if constexpr (K == Logic::GreaterOrEqual) run([](T x, T y) { return C(x) >= C(y); });
  if constexpr (K == Logic::LessOrEqual) run([](T x, T y) { return C(x) <= C(y); });
  if constexpr (K == Logic::BitShift) {
    bool left = true;
    (void)readShiftDirection(node, &left);  // validated by the shape function
    if (left)
      run([](T x, T y) { return shift(x, y, true); });
    else
      run([](T x, T y) { return shift(x, y, false); });
  }
  if constexpr (K == Logic::Mod) {
    if constexpr (isFloatLike<T>) {
      run([](T x, T y) { return T(std::fmod(C(x), C(y))); });
    } else if (node.getInt("fmod", 0) == 1) {
      run([](T x, T y) { return integerMod<C>(x, y, false); });
    } else {
      run([](T x, T y) { return integerMod<C>(x, y, true); });
    }
  }
}

template <Logic K>
Status logicKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  bool done = false;
  dispatchNumeric(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (accepts<K, T>()) {
      logicFor<K, T>(node, in, out, pool);
      done = true;
    }
  });
  return done ? Status::ok() : Status::unsupported(dtypeError(in[0], "input A"));
}

// Not (bool) and BitwiseNot (integers).
template <bool kBitwise, class T>
constexpr bool acceptsNot() {
  if constexpr (kBitwise) return std::is_integral_v<T> && !std::is_same_v<T, bool>;
  return std::is_same_v<T, bool>;
}

template <bool kBitwise>
Status notShape(const Node& node, const TensorViews& in, TensorViews& out) {
  bool ok = false;
  dispatchNumeric(in[0].dtype, [&](auto tag) { ok = acceptsNot<kBitwise, typename decltype(tag)::type>(); });
  if (!ok) return Status::unsupported(dtypeError(in[0], "input X"));
  return sameAsFirstInput(node, in, out);
}

template <bool kBitwise>
Status notKernel(const Node&, const TensorViews& in, TensorViews& out, ThreadPool*) {
  bool done = false;
  dispatchNumeric(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (acceptsNot<kBitwise, T>()) {
      const T* x = in[0].as<const T>();
      T* y = out[0].as<T>();
      for (int64_t i = 0; i < in[0].elements(); ++i) {
        if constexpr (kBitwise)
          y[i] = static_cast<T>(~x[i]);
        else
          y[i] = !x[i];
      }
      done = true;
    }
  });
  return done ? Status::ok() : Status::unsupported(dtypeError(in[0], "input X"));
}

}  // namespace

#define OSPREY_LOGIC_OP(name)                                                                                   \
  const OpDef kOpDef_##name = {OpType::name, #name, 2, 2, 1, 1, logicShape<Logic::name>, logicKernel<Logic::name>, \
                               nullptr,      0,     false};
OSPREY_LOGIC_OP(And)
OSPREY_LOGIC_OP(Or)
OSPREY_LOGIC_OP(Xor)
OSPREY_LOGIC_OP(BitwiseAnd)
OSPREY_LOGIC_OP(BitwiseOr)
OSPREY_LOGIC_OP(BitwiseXor)
OSPREY_LOGIC_OP(BitShift)
OSPREY_LOGIC_OP(GreaterOrEqual)
OSPREY_LOGIC_OP(LessOrEqual)
OSPREY_LOGIC_OP(Mod)
#undef OSPREY_LOGIC_OP

const OpDef kOpDef_Not = {OpType::Not, "Not", 1, 1, 1, 1, notShape<false>, notKernel<false>, nullptr, 0, false};
const OpDef kOpDef_BitwiseNot = {OpType::BitwiseNot, "BitwiseNot", 1, 1, 1, 1, notShape<true>, notKernel<true>,
                                 nullptr, 0, false};

}  // namespace osprey
