// AVX2+FMA loops of QLinearAdd and QLinearMul (quantized_elementwise.h), 32 bytes a step. This
// file alone is compiled with -mavx2 -mfma; nothing here runs unless the CPU function table is
// not the scalar one. The float steps are the reference's, one lane per element: fmadd where it
// uses fmaf, a multiply and an add rounded separately where it does.
#include "backends/cpu/kernels/quantized_elementwise.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstring>

namespace osprey {

namespace {

constexpr int64_t kStep = 32;  // bytes a step: four vectors of eight lanes

// Eight bytes at p as int32 lanes.
template <bool kSigned>
__m256i widen(const uint8_t* p) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return kSigned ? _mm256_cvtepi8_epi32(v) : _mm256_cvtepu8_epi32(v);
}

template <bool kSigned>
__m256 widenToFloat(const uint8_t* p) {
  return _mm256_cvtepi32_ps(widen<kSigned>(p));
}

// GCC contracts a multiply followed by an add into one FMA in C++ (-ffp-contract=fast is its
// default there), which rounds once where the reference rounds twice; an empty asm on the
// product keeps the two roundings.
inline __m256 keepRounded(__m256 v) {
  __asm__("" : "+x"(v));
  return v;
}

// Stores v[0..3] (elements 0-7, 8-15, 16-23, 24-31) rounded half to even and saturated to the
// type. cvtps gives INT32_MIN for NaN and values beyond int32, which the saturating packs turn
// into the type's minimum, as the reference's saturate(cvtps(v)) does.
template <bool kSigned>
void storeRounded(const __m256 v[4], uint8_t* y) {
  const __m256i w01 = _mm256_packs_epi32(_mm256_cvtps_epi32(v[0]), _mm256_cvtps_epi32(v[1]));
  const __m256i w23 = _mm256_packs_epi32(_mm256_cvtps_epi32(v[2]), _mm256_cvtps_epi32(v[3]));
  const __m256i bytes = kSigned ? _mm256_packs_epi16(w01, w23) : _mm256_packus_epi16(w01, w23);
  // The packs work inside 128-bit halves: put the eight 4-byte groups back in element order.
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), _mm256_permutevar8x32_epi32(bytes, order));
}

// step(a, b, y) over every 32 elements; the last partial step runs on zero-padded copies, so a
// tail takes the same vector path. b may be null (one-operand loops).
template <class Step>
void overSteps(const uint8_t* a, const uint8_t* b, int64_t n, uint8_t* y, Step step) {
  int64_t i = 0;
  for (; i + kStep <= n; i += kStep) step(a + i, b ? b + i : nullptr, y + i);
  if (i == n) return;
  const size_t rest = static_cast<size_t>(n - i);
  uint8_t aTail[kStep] = {}, bTail[kStep] = {}, yTail[kStep];
  std::memcpy(aTail, a + i, rest);
  if (b) std::memcpy(bTail, b + i, rest);
  step(aTail, bTail, yTail);
  std::memcpy(y + i, yTail, rest);
}

template <bool kSigned>
void add(const uint8_t* a, const uint8_t* b, int64_t n, float ratioA, float ratioB, float fixed, uint8_t* y) {
  const __m256 rA = _mm256_set1_ps(ratioA), rB = _mm256_set1_ps(ratioB), c = _mm256_set1_ps(fixed);
  overSteps(a, b, n, y, [&](const uint8_t* as, const uint8_t* bs, uint8_t* ys) {
    __m256 v[4];
    for (int j = 0; j < 4; ++j)
      v[j] = _mm256_fmadd_ps(widenToFloat<kSigned>(as + 8 * j), rA,
                             _mm256_fmadd_ps(widenToFloat<kSigned>(bs + 8 * j), rB, c));
    storeRounded<kSigned>(v, ys);
  });
}

template <bool kSigned>
void addRepeated(const uint8_t* x, int64_t n, float ratio, float constant, uint8_t* y) {
  const __m256 r = _mm256_set1_ps(ratio), c = _mm256_set1_ps(constant);
  overSteps(x, nullptr, n, y, [&](const uint8_t* xs, const uint8_t*, uint8_t* ys) {
    __m256 v[4];
    for (int j = 0; j < 4; ++j) v[j] = _mm256_fmadd_ps(widenToFloat<kSigned>(xs + 8 * j), r, c);
    storeRounded<kSigned>(v, ys);
  });
}

// float(product) * ratio + zeroC with the product of at most 256 * 256 exact in int32 and float.
inline __m256 scaleProduct(__m256i product, __m256 ratio, __m256 zeroC) {
  return _mm256_add_ps(keepRounded(_mm256_mul_ps(_mm256_cvtepi32_ps(product), ratio)), zeroC);
}

template <bool kSigned>
void mul(const uint8_t* a, const uint8_t* b, int64_t n, int32_t zeroA, int32_t zeroB, float ratio, float zeroC,
         uint8_t* y) {
  const __m256i zA = _mm256_set1_epi32(zeroA), zB = _mm256_set1_epi32(zeroB);
  const __m256 r = _mm256_set1_ps(ratio), zC = _mm256_set1_ps(zeroC);
  overSteps(a, b, n, y, [&](const uint8_t* as, const uint8_t* bs, uint8_t* ys) {
    __m256 v[4];
    for (int j = 0; j < 4; ++j) {
      const __m256i product = _mm256_mullo_epi32(_mm256_sub_epi32(widen<kSigned>(as + 8 * j), zA),
                                                 _mm256_sub_epi32(widen<kSigned>(bs + 8 * j), zB));
      v[j] = scaleProduct(product, r, zC);
    }
    storeRounded<kSigned>(v, ys);
  });
}

template <bool kSigned>
void mulRepeated(const uint8_t* x, int64_t n, int32_t zeroX, int32_t factor, float ratio, float zeroC, uint8_t* y) {
  const __m256i zX = _mm256_set1_epi32(zeroX), f = _mm256_set1_epi32(factor);
  const __m256 r = _mm256_set1_ps(ratio), zC = _mm256_set1_ps(zeroC);
  overSteps(x, nullptr, n, y, [&](const uint8_t* xs, const uint8_t*, uint8_t* ys) {
    __m256 v[4];
    for (int j = 0; j < 4; ++j)
      v[j] = scaleProduct(_mm256_mullo_epi32(_mm256_sub_epi32(widen<kSigned>(xs + 8 * j), zX), f), r, zC);
    storeRounded<kSigned>(v, ys);
  });
}

// Stores the int32 lanes v[0..3] plus zeroC, saturated to the type, in element order.
template <bool kSigned>
void storeSaturated(const __m256i v[4], uint8_t* y) {
  const __m256i w01 = _mm256_packs_epi32(v[0], v[1]), w23 = _mm256_packs_epi32(v[2], v[3]);
  const __m256i bytes = kSigned ? _mm256_packs_epi16(w01, w23) : _mm256_packus_epi16(w01, w23);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), _mm256_permutevar8x32_epi32(bytes, order));
}

template <bool kSigned>
void fixedPointAdd(const uint8_t* a, const uint8_t* b, int64_t n, int32_t bias, int32_t mA, int32_t mB, int shift,
                   int32_t zeroC, uint8_t* y) {
  const __m256i biasV = _mm256_set1_epi32(bias), mAV = _mm256_set1_epi32(mA), mBV = _mm256_set1_epi32(mB);
  const __m256i zC = _mm256_set1_epi32(zeroC);
  const __m128i count = _mm_cvtsi32_si128(shift);
  overSteps(a, b, n, y, [&](const uint8_t* as, const uint8_t* bs, uint8_t* ys) {
    __m256i v[4];
    for (int j = 0; j < 4; ++j) {
      __m256i sum = _mm256_add_epi32(biasV, _mm256_mullo_epi32(widen<kSigned>(as + 8 * j), mAV));
      if (bs) sum = _mm256_add_epi32(sum, _mm256_mullo_epi32(widen<kSigned>(bs + 8 * j), mBV));
      v[j] = _mm256_add_epi32(_mm256_sra_epi32(sum, count), zC);
    }
    storeSaturated<kSigned>(v, ys);
  });
}

template <bool kSigned>
QuantizedBinaryLoops loops() {
  return {add<kSigned>, addRepeated<kSigned>, mul<kSigned>, mulRepeated<kSigned>, fixedPointAdd<kSigned>};
}

}  // namespace

QuantizedBinaryLoops quantizedBinaryLoopsAvx2(bool isSigned) { return isSigned ? loops<true>() : loops<false>(); }

}  // namespace osprey

#endif
