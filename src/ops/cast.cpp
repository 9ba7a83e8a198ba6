// Cast between every pair of numeric dtypes (including bool, float16, bfloat16), and from
// string to numeric when the strings are known (constants), and to and from the low-precision
// types (float8 with `saturate`, float8e8m0 with `round_mode`, float4, 4- and 2-bit integers).
// Casts to string are not supported.
//
// Conversions ONNX leaves undefined are made deterministic: float to integer truncates toward
// zero, NaN gives 0, and values outside the target's range saturate to it (saturatingCast,
// the rule every float -> integer path in Osprey shares; numpy's wrap would turn 300 into 44
// and -1 into 255). Integer to integer wraps, as ONNX and numpy do. double to float16/bfloat16
// rounds through float.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/low_precision.h"
#include "core/thread_pool.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

const char* unsupportedDtypeName(int64_t v) {
  switch (v) {
    case 14: return "complex64";
    case 15: return "complex128";
    default: return nullptr;
  }
}

bool isNumeric(DataType t) {
  return dispatchNumeric(t, [](auto) {});
}

Status castShape(const Node& node, const TensorViews& in, TensorViews& out) {
  if (!node.hasAttr("to")) return Status::invalidModel("attribute 'to' is missing");
  const int64_t to = node.getInt("to", 0);
  if (const char* name = unsupportedDtypeName(to))
    return Status::unsupported(std::string("Cast to ") + name + " is not supported");
  if (to < 0 || to > std::numeric_limits<int32_t>::max() || !isKnownDataType(static_cast<int32_t>(to)) ||
      to == static_cast<int64_t>(DataType::Undefined))
    return Status::invalidModel("attribute 'to' is " + std::to_string(to) + ", which is not a dtype");
  const DataType target = static_cast<DataType>(to);
  if (target == DataType::String) return Status::unsupported("Cast to string is not supported");
  if (!isNumeric(target) && !isLowPrecisionType(target))
    return Status::unsupported(std::string("Cast to ") + dataTypeName(target) + " is not supported");
  if (!isNumeric(in[0].dtype) && !isLowPrecisionType(in[0].dtype) && in[0].dtype != DataType::String)
    return Status::unsupported(dtypeError(in[0], "input"));
  out[0].dtype = target;
  out[0].shape = in[0].shape;
  return Status::ok();
}

template <class To, class From>
inline To convertValue(From x) {
  using CF = ComputeType<From>;
  using CT = ComputeType<To>;
  if constexpr (std::is_same_v<To, bool>) {
    return CF(x) != CF(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    return To(CT(x ? 1 : 0));
  } else if constexpr (isFloatLike<From> && !isFloatLike<To>) {
    return saturatingCast<To>(static_cast<double>(CF(x)));
  } else {
    return To(static_cast<CT>(CF(x)));
  }
}

template <class To, class From>
void convertAll(const From* x, To* y, int64_t n, ThreadPool* pool) {
  auto work = [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = convertValue<To, From>(x[i]);
  };
  if (n >= (int64_t{1} << 16)) {
    parallelFor(pool, n, work);
  } else {
    work(0, n);
  }
}

// Parses a string as the target dtype: decimal or hexadecimal numbers, inf and nan for floats;
// surrounding spaces are allowed, anything else is an error.
template <class To>
Status parseValue(const std::string& s, To* out) {
  const char* begin = s.c_str();
  char* end = nullptr;
  errno = 0;
  if constexpr (isFloatLike<To>) {
    double v = std::strtod(begin, &end);
    while (end && (*end == ' ' || *end == '\t')) ++end;
    if (end == begin || *end != '\0') return Status::invalidArgument("cannot parse '" + s + "' as a number");
    *out = convertValue<To, double>(v);
  } else if constexpr (std::is_same_v<To, bool>) {
    if (s == "true" || s == "True" || s == "false" || s == "False") {
      *out = s[0] == 't' || s[0] == 'T';
    } else {
      double v = std::strtod(begin, &end);
      if (end == begin || *end != '\0') return Status::invalidArgument("cannot parse '" + s + "' as a bool");
      *out = v != 0.0;
    }
  } else if constexpr (std::is_signed_v<To>) {
    long long v = std::strtoll(begin, &end, 10);
    while (end && (*end == ' ' || *end == '\t')) ++end;
    if (end == begin || *end != '\0') return Status::invalidArgument("cannot parse '" + s + "' as an integer");
    if (errno == ERANGE || v < std::numeric_limits<To>::lowest() || v > std::numeric_limits<To>::max())
      return Status::invalidArgument("'" + s + "' is out of range for " + dataTypeName(dataTypeOf<To>()));
    *out = static_cast<To>(v);
  } else {
    while (*begin == ' ' || *begin == '\t') ++begin;
    if (*begin == '-') return Status::invalidArgument("'" + s + "' is negative; the target is unsigned");
    unsigned long long v = std::strtoull(begin, &end, 10);
    while (end && (*end == ' ' || *end == '\t')) ++end;
    if (end == begin || *end != '\0') return Status::invalidArgument("cannot parse '" + s + "' as an integer");
    if (errno == ERANGE || v > std::numeric_limits<To>::max())
      return Status::invalidArgument("'" + s + "' is out of range for " + dataTypeName(dataTypeOf<To>()));
    *out = static_cast<To>(v);
  }
  return Status::ok();
}

Status castFromStrings(const TensorView& in, TensorView& out) {
  if (!in.strings) return Status::unsupported("Cast from string needs a constant input");
  if (static_cast<int64_t>(in.strings->size()) != in.elements())
    return Status::invalidModel("string tensor holds " + std::to_string(in.strings->size()) + " values; its shape " +
                                shapeToString(in.shape) + " needs " + std::to_string(in.elements()));
  Status st = Status::ok();
  dispatchNumeric(out.dtype, [&](auto tag) {
    using To = typename decltype(tag)::type;
    To* y = out.as<To>();
    for (int64_t i = 0; i < in.elements() && st.isOk(); ++i) st = parseValue<To>((*in.strings)[i], &y[i]);
  });
  return st;
}

// Low-precision types convert through double: exact for every source Osprey holds.
void castLowPrecision(const Node& node, const TensorView& in, TensorView& out) {
  const bool saturate = node.getInt("saturate", 1) != 0;
  const std::string roundMode = node.getString("round_mode", "up");
  const int64_t n = in.elements();
  const bool wrapsToSubByteInt = out.dtype == DataType::Int4 || out.dtype == DataType::UInt4 ||
                                 out.dtype == DataType::Int2 || out.dtype == DataType::UInt2;
  for (int64_t i = 0; i < n; ++i) {
    double v = loadAsDouble(in.dtype, in.data, i);
    // An integer wraps to a 2- or 4-bit one by its low bits, which a double loses beyond 2^53:
    // its low byte stands in for it.
    if (wrapsToSubByteInt && !isLowPrecisionType(in.dtype))
      dispatchNumeric(in.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
          v = static_cast<double>(static_cast<uint64_t>(in.as<const T>()[i]) & 0xffu);
      });
    if (isLowPrecisionType(out.dtype)) {
      out.as<uint8_t>()[i] = encodeLowPrecision(out.dtype, v, saturate, roundMode);
    } else if (out.dtype == DataType::Bool) {
      out.as<bool>()[i] = v != 0;
    } else {
      dispatchNumeric(out.dtype, [&](auto tag) {
        using To = typename decltype(tag)::type;
        out.as<To>()[i] = convertValue<To, double>(v);
      });
    }
  }
}

Status castKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  if (in[0].dtype == DataType::String) return castFromStrings(in[0], out[0]);
  if (isLowPrecisionType(in[0].dtype) || isLowPrecisionType(out[0].dtype)) {
    if (in[0].dtype == out[0].dtype) {
      std::memcpy(out[0].data, in[0].data, in[0].bytes());
    } else {
      castLowPrecision(node, in[0], out[0]);
    }
    return Status::ok();
  }
  if (in[0].dtype == out[0].dtype) {
    std::memcpy(out[0].data, in[0].data, in[0].bytes());
    return Status::ok();
  }
  bool ok = false;
  dispatchNumeric(in[0].dtype, [&](auto fromTag) {
    using From = typename decltype(fromTag)::type;
    ok = dispatchNumeric(out[0].dtype, [&](auto toTag) {
      using To = typename decltype(toTag)::type;
      convertAll<To, From>(in[0].as<const From>(), out[0].as<To>(), in[0].elements(), pool);
    });
  });
  return ok ? Status::ok()
            : Status::unsupported(std::string("Cast from ") + dataTypeName(in[0].dtype) + " to " +
                                  dataTypeName(out[0].dtype) + " is not supported");
}

}  // namespace

const OpDef kOpDef_Cast = {OpType::Cast, "Cast", 1, 1, 1, 1, castShape, castKernel, nullptr, 0, false};

}  // namespace osprey
