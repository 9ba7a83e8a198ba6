// Unary and binary elementwise kernels (with numpy broadcasting), Where, Cast and Not.
#include "backends/cuda/kernels/cuda_common.cuh"
#include "backends/cuda/kernels/cuda_launch.h"

namespace osprey::cuda {

namespace {


__device__ __forceinline__ float applyUnary(UnaryKind kind, float x, float a, float b) {
  switch (kind) {
    case UnaryKind::Relu: return x > 0.f ? x : 0.f;
    case UnaryKind::Sigmoid: return 1.f / (1.f + expf(-x));
    case UnaryKind::Tanh: return tanhf(x);
    case UnaryKind::Erf: return erff(x);
    case UnaryKind::Gelu: return 0.5f * x * (1.f + erff(x * 0.7071067811865476f));
    case UnaryKind::GeluTanh: return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case UnaryKind::Exp: return expf(x);
    case UnaryKind::Log: return logf(x);
    case UnaryKind::Sqrt: return sqrtf(x);
    case UnaryKind::Reciprocal: return 1.f / x;
    case UnaryKind::Neg: return -x;
    case UnaryKind::Abs: return fabsf(x);
    case UnaryKind::Clip: return fminf(fmaxf(x, a), b);
    case UnaryKind::LeakyRelu: return x >= 0.f ? x : a * x;
    case UnaryKind::HardSigmoid: return fmaxf(0.f, fminf(1.f, a * x + b));
    case UnaryKind::HardSwish: return x * fmaxf(0.f, fminf(1.f, x / 6.f + 0.5f));
    case UnaryKind::Elu: return x >= 0.f ? x : a * (expf(x) - 1.f);
    case UnaryKind::Softplus: return x > 20.f ? x : log1pf(expf(x));
    case UnaryKind::Sin: return sinf(x);
    case UnaryKind::Cos: return cosf(x);
    case UnaryKind::Floor: return floorf(x);
    case UnaryKind::Ceil: return ceilf(x);
    case UnaryKind::Round: return rintf(x);
    case UnaryKind::Sign: return x > 0.f ? 1.f : (x < 0.f ? -1.f : 0.f);
    case UnaryKind::Mish: return x * tanhf(x > 20.f ? x : log1pf(expf(x)));
    case UnaryKind::Swish: return x / (1.f + expf(-a * x));
    case UnaryKind::Identity: return x;
    case UnaryKind::Selu: return x > 0.f ? b * x : b * (a * expf(x) - a);
    case UnaryKind::Celu: return fmaxf(0.f, x) + fminf(0.f, a * (expf(x / a) - 1.f));
    case UnaryKind::Softsign: return x / (1.f + fabsf(x));
    case UnaryKind::ThresholdedRelu: return x > a ? x : 0.f;
  }
  return x;
}

template <class T>
__global__ void unaryKernel(UnaryKind kind, float a, float b, const T* src, T* dst, int64_t n) {
  OSPREY_GRID_STRIDE(i, n) dst[i] = fromFloat<T>(applyUnary(kind, toFloat(src[i]), a, b));
}

template <class C>
__device__ __forceinline__ C applyBinary(BinaryKind kind, C x, C y) {
  switch (kind) {
    case BinaryKind::Add: return x + y;
    case BinaryKind::Sub: return x - y;
    case BinaryKind::Mul: return x * y;
    case BinaryKind::Div: return x / y;
    case BinaryKind::Max: return x > y ? x : y;
    case BinaryKind::Min: return x < y ? x : y;
    case BinaryKind::PRelu: return x < C(0) ? x * y : x;
    default: return x;
  }
}
__device__ __forceinline__ float applyBinaryFloat(BinaryKind kind, float x, float y) {
  if (kind == BinaryKind::Pow) return powf(x, y);
  if (kind == BinaryKind::Mod) return fmodf(x, y);
  return applyBinary<float>(kind, x, y);
}
template <class C>
__device__ __forceinline__ bool compare(BinaryKind kind, C x, C y) {
  switch (kind) {
    case BinaryKind::Equal: return x == y;
    case BinaryKind::Less: return x < y;
    case BinaryKind::Greater: return x > y;
    case BinaryKind::LessOrEqual: return x <= y;
    case BinaryKind::GreaterOrEqual: return x >= y;
    default: return false;
  }
}

// Offsets of output element i in each operand.
template <int Operands>
__device__ __forceinline__ void offsetsOf(const BroadcastIndex& ix, int64_t i, int64_t* off) {
  for (int k = 0; k < Operands; ++k) off[k] = 0;
  for (int d = ix.rank - 1; d >= 0; --d) {
    const int64_t c = i % ix.shape[d];
    i /= ix.shape[d];
    for (int k = 0; k < Operands; ++k) off[k] += c * ix.stride[k][d];
  }
}

template <class T>
__global__ void binaryFloatKernel(BinaryKind kind, const T* a, const T* b, T* dst, BroadcastIndex ix, int64_t n, bool contiguous) {
  OSPREY_GRID_STRIDE(i, n) {
    int64_t off[2] = {i, i};
    if (!contiguous) offsetsOf<2>(ix, i, off);
    dst[i] = fromFloat<T>(applyBinaryFloat(kind, toFloat(a[off[0]]), toFloat(b[off[1]])));
  }
}

// Both operands whole and aligned: 16 bytes of each per thread. The element-wise form's 2-byte
// fp16 loads keep the load units, not memory, the limit (a residual Add of BERT at batch 32 ran
// at a quarter of the H200's bandwidth).
template <class T>
__global__ void binaryFloatVectorKernel(BinaryKind kind, const T* a, const T* b, T* dst, int64_t vectors) {
  constexpr int kLanes = 16 / sizeof(T);
  OSPREY_GRID_STRIDE(v, vectors) {
    const uint4 av = reinterpret_cast<const uint4*>(a)[v], bv = reinterpret_cast<const uint4*>(b)[v];
    uint4 out;
    const T* ae = reinterpret_cast<const T*>(&av);
    const T* be = reinterpret_cast<const T*>(&bv);
    T* oe = reinterpret_cast<T*>(&out);
#pragma unroll
    for (int j = 0; j < kLanes; ++j) oe[j] = fromFloat<T>(applyBinaryFloat(kind, toFloat(ae[j]), toFloat(be[j])));
    reinterpret_cast<uint4*>(dst)[v] = out;
  }
}

// One operand whole, the other the output's [outer, mid, inner] view broadcast over mid (a
// squeeze-excitation scale [N, C, 1, 1] over NCHW planes: inner 1; [N, 1, 1, C] over NHWC rows:
// inner C; a bias [C]: outer 1), 16 bytes of the whole operand per thread. `smallFirst`: the
// broadcast operand is the op's first. The index arithmetic of the general kernel (a division
// per dimension per element) made such a Mul of EfficientNet at batch 32 cost as much as a
// convolution.
template <class T>
__global__ void binaryMidBroadcastKernel(BinaryKind kind, const T* whole, const T* small, T* dst, int64_t vectors,
                                         int64_t mid, int64_t inner, bool smallFirst) {
  constexpr int kLanes = 16 / sizeof(T);
  OSPREY_GRID_STRIDE(v, vectors) {
    const int64_t i = v * kLanes;
    const int64_t j = (i / (mid * inner)) * inner + i % inner;
    const uint4 wv = reinterpret_cast<const uint4*>(whole)[v];
    uint4 sv, out;
    if (inner == 1)
      sv = make_uint4(0, 0, 0, 0);
    else
      sv = *reinterpret_cast<const uint4*>(small + j);
    const T* we = reinterpret_cast<const T*>(&wv);
    const T* se = reinterpret_cast<const T*>(&sv);
    const float one = inner == 1 ? toFloat(small[j]) : 0.f;
    T* oe = reinterpret_cast<T*>(&out);
#pragma unroll
    for (int k = 0; k < kLanes; ++k) {
      const float x = toFloat(we[k]), y = inner == 1 ? one : toFloat(se[k]);
      oe[k] = fromFloat<T>(smallFirst ? applyBinaryFloat(kind, y, x) : applyBinaryFloat(kind, x, y));
    }
    reinterpret_cast<uint4*>(dst)[v] = out;
  }
}

// Whether operand `whole` is contiguous and operand `small` is the output's [outer, mid, inner]
// view broadcast over mid (mid > 1); dimensions of size 1 count for neither.
bool midBroadcast(const BroadcastIndex& ix, int whole, int small, int64_t* mid, int64_t* inner) {
  int64_t expect = 1, expectSmall = 1;
  int phase = 0;  // 0: inner dimensions, 1: broadcast ones, 2: outer ones
  *mid = *inner = 1;
  for (int d = ix.rank - 1; d >= 0; --d) {
    const int64_t size = ix.shape[d];
    if (size == 1) continue;
    if (ix.stride[whole][d] != expect) return false;
    expect *= size;
    const bool broadcast = ix.stride[small][d] == 0;
    if (broadcast) {
      if (phase == 2) return false;
      phase = 1;
      *mid *= size;
      continue;
    }
    if (ix.stride[small][d] != expectSmall) return false;
    expectSmall *= size;
    if (phase == 0) *inner *= size;
    else phase = 2;
  }
  return *mid > 1;
}

template <class T, class C>
__global__ void compareKernel(BinaryKind kind, const T* a, const T* b, bool* dst, BroadcastIndex ix, int64_t n) {
  OSPREY_GRID_STRIDE(i, n) {
    int64_t off[2];
    offsetsOf<2>(ix, i, off);
    dst[i] = compare<C>(kind, static_cast<C>(toFloat(a[off[0]])), static_cast<C>(toFloat(b[off[1]])));
  }
}

template <class T>
__global__ void binaryIntKernel(BinaryKind kind, const T* a, const T* b, void* dst, BroadcastIndex ix, int64_t n) {
  OSPREY_GRID_STRIDE(i, n) {
    int64_t off[2];
    offsetsOf<2>(ix, i, off);
    const T x = a[off[0]], y = b[off[1]];
    if (isComparison(kind)) {
      static_cast<bool*>(dst)[i] = compare<T>(kind, x, y);
    } else if (kind == BinaryKind::Mod) {
      T r = y == 0 ? T(0) : x % y;  // ONNX fmod=0: the result takes the divisor's sign
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      static_cast<T*>(dst)[i] = r;
    } else if (kind == BinaryKind::Div) {
      static_cast<T*>(dst)[i] = y == 0 ? T(0) : x / y;
    } else {
      static_cast<T*>(dst)[i] = applyBinary<T>(kind, x, y);
    }
  }
}

__global__ void logicalKernel(BinaryKind kind, const bool* a, const bool* b, bool* dst, BroadcastIndex ix, int64_t n) {
  OSPREY_GRID_STRIDE(i, n) {
    int64_t off[2];
    offsetsOf<2>(ix, i, off);
    const bool x = a[off[0]], y = b[off[1]];
    dst[i] = kind == BinaryKind::And ? (x && y) : kind == BinaryKind::Or ? (x || y) : kind == BinaryKind::Xor ? (x != y)
                                                                                                              : compare<int>(kind, x, y);
  }
}

template <class E>
__global__ void whereKernel(const bool* cond, const E* x, const E* y, E* dst, BroadcastIndex ix, int64_t n) {
  OSPREY_GRID_STRIDE(i, n) {
    int64_t off[3];
    offsetsOf<3>(ix, i, off);
    dst[i] = cond[off[0]] ? x[off[1]] : y[off[2]];
  }
}

template <class S, class D>
__device__ __forceinline__ D convertValue(S v) {
  if constexpr (std::is_same_v<D, bool>) {
    return toFloat(v) != 0.f;
  } else if constexpr (std::is_same_v<S, __half> || std::is_same_v<S, __nv_bfloat16>) {
    return fromFloat<D>(toFloat(v));
  } else if constexpr (std::is_same_v<D, __half> || std::is_same_v<D, __nv_bfloat16>) {
    return fromFloat<D>(static_cast<float>(v));
  } else {
    return static_cast<D>(v);
  }
}
template <class S, class D>
__global__ void castKernel(const S* src, D* dst, int64_t n) {
  OSPREY_GRID_STRIDE(i, n) dst[i] = convertValue<S, D>(src[i]);
}

__global__ void notKernel(const bool* src, bool* dst, int64_t n) {
  OSPREY_GRID_STRIDE(i, n) dst[i] = !src[i];
}

template <class Fn>
bool dispatchAny(DataType t, Fn&& fn) {
  switch (t) {
    case DataType::Float32: fn(float{}); return true;
    case DataType::Float16: fn(__half{}); return true;
    case DataType::BFloat16: fn(__nv_bfloat16{}); return true;
    case DataType::Float64: fn(double{}); return true;
    case DataType::Int8: fn(int8_t{}); return true;
    case DataType::Int16: fn(int16_t{}); return true;
    case DataType::Int32: fn(int32_t{}); return true;
    case DataType::Int64: fn(int64_t{}); return true;
    case DataType::UInt8: fn(uint8_t{}); return true;
    case DataType::UInt16: fn(uint16_t{}); return true;
    case DataType::UInt32: fn(uint32_t{}); return true;
    case DataType::UInt64: fn(uint64_t{}); return true;
    case DataType::Bool: fn(bool{}); return true;
    default: return false;
  }
}

bool isContiguous(const BroadcastIndex& ix, int operands) {
  int64_t expect = 1;
  for (int d = ix.rank - 1; d >= 0; --d) {
    for (int k = 0; k < operands; ++k)
      if (ix.shape[d] != 1 && ix.stride[k][d] != expect) return false;
    expect *= ix.shape[d];
  }
  return true;
}

int64_t elementsOf(const BroadcastIndex& ix) {
  int64_t n = 1;
  for (int d = 0; d < ix.rank; ++d) n *= ix.shape[d];
  return n;
}

}  // namespace

cudaError_t unaryFloat(UnaryKind kind, float a, float b, const void* src, void* dst, int64_t n, DataType storage,
                       cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  bool ok = dispatchStorage(storage, [&](auto t) {
    using T = decltype(t);
    unaryKernel<T><<<blocksFor(n), kBlock, 0, stream>>>(kind, a, b, static_cast<const T*>(src), static_cast<T*>(dst), n);
  });
  return ok ? cudaGetLastError() : cudaErrorInvalidValue;
}

cudaError_t binary(BinaryKind kind, const void* a, const void* b, void* dst, DataType operandType, const BroadcastIndex& index,
                   cudaStream_t stream) {
  const int64_t n = elementsOf(index);
  if (n <= 0) return cudaSuccess;
  const unsigned grid = blocksFor(n);
  if (operandType == DataType::Bool) {
    logicalKernel<<<grid, kBlock, 0, stream>>>(kind, static_cast<const bool*>(a), static_cast<const bool*>(b),
                                               static_cast<bool*>(dst), index, n);
    return cudaGetLastError();
  }
  if (operandType == DataType::Int32 || operandType == DataType::Int64) {
    if (kind == BinaryKind::Pow || kind == BinaryKind::And || kind == BinaryKind::Or || kind == BinaryKind::Xor)
      return cudaErrorInvalidValue;
    if (operandType == DataType::Int32)
      binaryIntKernel<int32_t><<<grid, kBlock, 0, stream>>>(kind, static_cast<const int32_t*>(a), static_cast<const int32_t*>(b), dst, index, n);
    else
      binaryIntKernel<int64_t><<<grid, kBlock, 0, stream>>>(kind, static_cast<const int64_t*>(a), static_cast<const int64_t*>(b), dst, index, n);
    return cudaGetLastError();
  }
  const bool contiguous = isContiguous(index, 2);
  bool ok = dispatchStorage(operandType, [&](auto t) {
    using T = decltype(t);
    const T *x = static_cast<const T*>(a), *y = static_cast<const T*>(b);
    T* out = static_cast<T*>(dst);
    if (isComparison(kind)) {
      compareKernel<T, float><<<grid, kBlock, 0, stream>>>(kind, x, y, static_cast<bool*>(dst), index, n);
      return;
    }
    constexpr int64_t kLanes = 16 / sizeof(T);
    const int64_t vectors = contiguous && aligned16(x) && aligned16(y) && aligned16(out) ? n / kLanes : 0;
    if (vectors > 0)
      binaryFloatVectorKernel<T><<<blocksFor(vectors), kBlock, 0, stream>>>(kind, x, y, out, vectors);
    if (!contiguous) {  // a broadcast operand whose reads vectorise: one of the [outer, mid, inner] forms
      int64_t mid = 1, inner = 1;
      for (int small = 0; small < 2; ++small) {
        const int whole = 1 - small;
        const T* w = whole == 0 ? x : y;
        const T* b = small == 0 ? x : y;
        if (n % kLanes != 0 || !aligned16(w) || !aligned16(out) || !midBroadcast(index, whole, small, &mid, &inner))
          continue;
        if (inner == 1 ? mid % kLanes != 0 : inner % kLanes != 0 || !aligned16(b)) continue;
        binaryMidBroadcastKernel<T><<<blocksFor(n / kLanes), kBlock, 0, stream>>>(kind, w, b, out, n / kLanes, mid,
                                                                                  inner, small == 0);
        return;
      }
    }
    const int64_t done = vectors * kLanes;
    if (done < n)
      binaryFloatKernel<T><<<blocksFor(n - done), kBlock, 0, stream>>>(kind, x + done, y + done, out + done, index,
                                                                       n - done, contiguous);
  });
  return ok ? cudaGetLastError() : cudaErrorInvalidValue;
}

cudaError_t where(const void* cond, const void* x, const void* y, void* dst, int elementSize, const BroadcastIndex& index,
                  cudaStream_t stream) {
  const int64_t n = elementsOf(index);
  if (n <= 0) return cudaSuccess;
  const unsigned grid = blocksFor(n);
  const bool* c = static_cast<const bool*>(cond);
  switch (elementSize) {
    case 1: whereKernel<uint8_t><<<grid, kBlock, 0, stream>>>(c, static_cast<const uint8_t*>(x), static_cast<const uint8_t*>(y), static_cast<uint8_t*>(dst), index, n); break;
    case 2: whereKernel<uint16_t><<<grid, kBlock, 0, stream>>>(c, static_cast<const uint16_t*>(x), static_cast<const uint16_t*>(y), static_cast<uint16_t*>(dst), index, n); break;
    case 4: whereKernel<uint32_t><<<grid, kBlock, 0, stream>>>(c, static_cast<const uint32_t*>(x), static_cast<const uint32_t*>(y), static_cast<uint32_t*>(dst), index, n); break;
    case 8: whereKernel<uint64_t><<<grid, kBlock, 0, stream>>>(c, static_cast<const uint64_t*>(x), static_cast<const uint64_t*>(y), static_cast<uint64_t*>(dst), index, n); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t cast(const void* src, DataType srcType, void* dst, DataType dstType, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  bool ok = false;
  dispatchAny(srcType, [&](auto s) {
    using S = decltype(s);
    ok = dispatchAny(dstType, [&](auto d) {
      using D = decltype(d);
      castKernel<S, D><<<blocksFor(n), kBlock, 0, stream>>>(static_cast<const S*>(src), static_cast<D*>(dst), n);
    });
  });
  return ok ? cudaGetLastError() : cudaErrorInvalidValue;
}

cudaError_t logicalNot(const void* src, void* dst, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  notKernel<<<blocksFor(n), kBlock, 0, stream>>>(static_cast<const bool*>(src), static_cast<bool*>(dst), n);
  return cudaGetLastError();
}

}  // namespace osprey::cuda
