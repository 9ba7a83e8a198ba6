// The AVX2 integer GEMM micro-kernel (qgemm.h, format Pairs16): operands widened to int16 with
// their zero points subtracted, two k at a time through vpmaddwd into int32, which is exact for
// every byte pair (2 * 255 * 255 < 2^31), unlike vpmaddubsw's saturating int16 sums.
#include <immintrin.h>

#include <cstring>

#include "backends/cpu/kernels/qgemm.h"

namespace osprey {

namespace {

// Five rows: ten accumulators, two B vectors, the broadcast and the product fit the 16 ymm
// registers; six rows made GCC spill accumulators to the stack.
constexpr int64_t kMr = 5, kNr = 16;

// The output stage's values for one block of 16 columns, read once for all its rows (the
// stores to y may alias the stage's arrays as far as the compiler knows, so it cannot hoist
// them itself). Column offsets start the accumulators instead of being added to every row.
struct BlockStage {
  __m256i offset0, offset1;
  __m256 scale0, scale1;  // column scales; per-row scales are read per row
  __m256 low, high;       // lo and hi less the zero point
  __m256i zeroPoint16;
  bool clampLow;          // lo above the output type's lowest value (a fused activation)

  BlockStage(const QGemmOutputStage& s, int64_t n0) {
    offset0 = offset1 = _mm256_setzero_si256();
    if (s.columnOffset) {
      offset0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s.columnOffset + n0));
      offset1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s.columnOffset + n0 + 8));
    }
    scale0 = scale1 = _mm256_set1_ps(1.f);
    if (s.scale && !s.scalePerRow) scale0 = _mm256_loadu_ps(s.scale + n0), scale1 = _mm256_loadu_ps(s.scale + n0 + 8);
    low = _mm256_set1_ps(static_cast<float>(s.lo - s.zeroPoint));
    high = _mm256_set1_ps(static_cast<float>(s.hi - s.zeroPoint));
    zeroPoint16 = _mm256_set1_epi16(static_cast<int16_t>(s.zeroPoint));
    clampLow = s.lo > (s.signedOutput ? -128 : 0);
  }
};

// Sixteen finished sums of row m (column offsets included) through the rest of the stage.
void storeRow(__m256i v0, __m256i v1, const QGemmOutputStage& s, const BlockStage& b, int64_t m, int64_t n0,
              int64_t columns, void* y, int64_t ldy) {
  if (s.rowOffset) {
    const __m256i offset = _mm256_set1_epi32(s.rowOffset[m]);
    v0 = _mm256_add_epi32(v0, offset), v1 = _mm256_add_epi32(v1, offset);
  }
  if (s.int32Output) {
    alignas(32) int32_t out[kNr];
    _mm256_store_si256(reinterpret_cast<__m256i*>(out), v0);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out + 8), v1);
    std::memcpy(static_cast<int32_t*>(y) + m * ldy + n0, out, static_cast<size_t>(columns) * sizeof(int32_t));
    return;
  }
  __m256 f0 = _mm256_cvtepi32_ps(v0), f1 = _mm256_cvtepi32_ps(v1);
  if (s.scalePerRow) {
    const __m256 scale = _mm256_set1_ps(s.scale[m]);
    f0 = _mm256_mul_ps(f0, scale), f1 = _mm256_mul_ps(f1, scale);
  } else {
    f0 = _mm256_mul_ps(f0, b.scale0), f1 = _mm256_mul_ps(f1, b.scale1);
  }
  if (s.floatOutput) {
    alignas(32) float out[kNr];
    if (s.floatBias) {
      f0 = _mm256_add_ps(f0, _mm256_loadu_ps(s.floatBias + n0));
      f1 = _mm256_add_ps(f1, _mm256_loadu_ps(s.floatBias + n0 + 8));
    }
    float* dst = static_cast<float*>(y) + m * ldy + n0;
    if (columns == kNr) {
      _mm256_storeu_ps(dst, f0);
      _mm256_storeu_ps(dst + 8, f1);
      return;
    }
    _mm256_store_ps(out, f0);
    _mm256_store_ps(out + 8, f1);
    std::memcpy(dst, out, static_cast<size_t>(columns) * sizeof(float));
    return;
  }
  // Below the type's lowest value the saturating packs clamp: a value under lo - zeroPoint
  // converts to a lower integer (INT_MIN for -inf and NaN, which the reference's max makes lo)
  // and saturates to the type's lowest. Above, min(high, f) keeps cvtps from INT_MIN.
  if (b.clampLow) f0 = _mm256_max_ps(f0, b.low), f1 = _mm256_max_ps(f1, b.low);
  f0 = _mm256_min_ps(b.high, f0), f1 = _mm256_min_ps(b.high, f1);  // NaN stays NaN: the second operand
  __m256i words = _mm256_packs_epi32(_mm256_cvtps_epi32(f0), _mm256_cvtps_epi32(f1));
  words = _mm256_adds_epi16(words, b.zeroPoint16);
  words = _mm256_permute4x64_epi64(words, 0xD8);
  const __m128i lo = _mm256_castsi256_si128(words), hi = _mm256_extracti128_si256(words, 1);
  const __m128i bytes = s.signedOutput ? _mm_packs_epi16(lo, hi) : _mm_packus_epi16(lo, hi);
  uint8_t* dst = static_cast<uint8_t*>(y) + m * ldy + n0;
  if (columns == kNr) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), bytes);
    return;
  }
  alignas(16) uint8_t out[kNr];
  _mm_store_si128(reinterpret_cast<__m128i*>(out), bytes);
  std::memcpy(dst, out, static_cast<size_t>(columns));
}

inline __m256i pairOf(const int16_t* a) {
  int32_t pair;
  std::memcpy(&pair, a, sizeof(pair));
  return _mm256_set1_epi32(pair);
}

// The whole 5 x 16 block with its accumulators in named variables: in an array GCC 12 kept
// some of them on the stack.
void fullBlock(int64_t kPadded, const int16_t* a, int64_t lda, const int16_t* b, int64_t columns,
               const QGemmOutputStage& stage, int64_t m0, int64_t n0, void* y, int64_t ldy) {
  const BlockStage block(stage, n0);
  __m256i c00 = block.offset0, c01 = block.offset1, c10 = c00, c11 = c01, c20 = c00, c21 = c01, c30 = c00, c31 = c01,
          c40 = c00, c41 = c01;
  const int16_t *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda, *a4 = a + 4 * lda;
  for (int64_t k = 0; k < kPadded; k += 2) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + k * kNr));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + k * kNr + kNr));
    __m256i av = pairOf(a0 + k);
    c00 = _mm256_add_epi32(c00, _mm256_madd_epi16(av, b0));
    c01 = _mm256_add_epi32(c01, _mm256_madd_epi16(av, b1));
    av = pairOf(a1 + k);
    c10 = _mm256_add_epi32(c10, _mm256_madd_epi16(av, b0));
    c11 = _mm256_add_epi32(c11, _mm256_madd_epi16(av, b1));
    av = pairOf(a2 + k);
    c20 = _mm256_add_epi32(c20, _mm256_madd_epi16(av, b0));
    c21 = _mm256_add_epi32(c21, _mm256_madd_epi16(av, b1));
    av = pairOf(a3 + k);
    c30 = _mm256_add_epi32(c30, _mm256_madd_epi16(av, b0));
    c31 = _mm256_add_epi32(c31, _mm256_madd_epi16(av, b1));
    av = pairOf(a4 + k);
    c40 = _mm256_add_epi32(c40, _mm256_madd_epi16(av, b0));
    c41 = _mm256_add_epi32(c41, _mm256_madd_epi16(av, b1));
  }
  storeRow(c00, c01, stage, block, m0, n0, columns, y, ldy);
  storeRow(c10, c11, stage, block, m0 + 1, n0, columns, y, ldy);
  storeRow(c20, c21, stage, block, m0 + 2, n0, columns, y, ldy);
  storeRow(c30, c31, stage, block, m0 + 3, n0, columns, y, ldy);
  storeRow(c40, c41, stage, block, m0 + 4, n0, columns, y, ldy);
}

template <int Rows>
void kernel(int64_t kPadded, const int16_t* a, int64_t aRowElements, const int16_t* b, int64_t columns,
            const QGemmOutputStage& stage, int64_t m0, int64_t n0, void* y, int64_t ldy) {
  const BlockStage block(stage, n0);
  __m256i acc[Rows][2];
  for (int i = 0; i < Rows; ++i) acc[i][0] = block.offset0, acc[i][1] = block.offset1;
  for (int64_t k = 0; k < kPadded; k += 2) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + k * kNr));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + k * kNr + kNr));
    for (int i = 0; i < Rows; ++i) {
      int32_t pair;
      std::memcpy(&pair, a + i * aRowElements + k, sizeof(pair));
      const __m256i av = _mm256_set1_epi32(pair);
      acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(av, b0));
      acc[i][1] = _mm256_add_epi32(acc[i][1], _mm256_madd_epi16(av, b1));
    }
  }
  for (int i = 0; i < Rows; ++i) storeRow(acc[i][0], acc[i][1], stage, block, m0 + i, n0, columns, y, ldy);
}

// Sixteen bytes of row k from column n0 (fewer at N's end, zero after), flipped, widened and
// less the zero point.
inline __m256i widenedRow(const uint8_t* b, int64_t rowStride, int64_t k, int64_t K, int64_t n0, int64_t N,
                          const QGemmOperandBytes& bytes) {
  if (k >= K) return _mm256_setzero_si256();
  __m128i raw;
  if (n0 + kNr <= N) {
    raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + k * rowStride + n0));
  } else {
    alignas(16) uint8_t tail[kNr] = {};
    std::memcpy(tail, b + k * rowStride + n0, static_cast<size_t>(N - n0));
    raw = _mm_load_si128(reinterpret_cast<const __m128i*>(tail));
  }
  if (bytes.flip) raw = _mm_xor_si128(raw, _mm_set1_epi8(static_cast<char>(0x80)));
  const __m256i wide = bytes.isSigned ? _mm256_cvtepi8_epi16(raw) : _mm256_cvtepu8_epi16(raw);
  return _mm256_sub_epi16(wide, _mm256_set1_epi16(static_cast<int16_t>(bytes.zeroPoint(0))));
}

}  // namespace

void qgemm_bytes_to_floats__avx2(const uint8_t* x, int64_t n, bool isSigned, int32_t zeroPoint, float* out) {
  const __m256i zero = _mm256_set1_epi32(zeroPoint);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i raw = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i));
    const __m256i wide = isSigned ? _mm256_cvtepi8_epi32(raw) : _mm256_cvtepu8_epi32(raw);
    _mm256_storeu_ps(out + i, _mm256_cvtepi32_ps(_mm256_sub_epi32(wide, zero)));
  }
  qgemm_bytes_to_floats__scalar(x + i, n - i, isSigned, zeroPoint, out + i);
}

void qgemm_requantize_floats__avx2(const float* sums, int64_t n, int32_t bias, float scale,
                                   const QGemmOutputStage& stage, uint8_t* y) {
  const __m256i biasV = _mm256_set1_epi32(bias), zero = _mm256_set1_epi32(stage.zeroPoint);
  const __m256 scaleV = _mm256_set1_ps(scale);
  const __m256 lo = _mm256_set1_ps(static_cast<float>(stage.lo - stage.zeroPoint));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(stage.hi - stage.zeroPoint));
  auto quantized = [&](const float* s) {
    const __m256i v = _mm256_add_epi32(_mm256_cvttps_epi32(_mm256_loadu_ps(s)), biasV);
    __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(v), scaleV);
    f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
    return _mm256_add_epi32(_mm256_cvtps_epi32(f), zero);
  };
  auto sixteen = [&](const float* s) {
    __m256i words = _mm256_packs_epi32(quantized(s), quantized(s + 8));
    words = _mm256_permute4x64_epi64(words, 0xD8);
    const __m128i l = _mm256_castsi256_si128(words), h = _mm256_extracti128_si256(words, 1);
    return stage.signedOutput ? _mm_packs_epi16(l, h) : _mm_packus_epi16(l, h);
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), sixteen(sums + i));
  if (i < n) {  // short rows (a 7 x 7 plane's) are common: the tail through a vector too
    alignas(32) float tail[16] = {};
    alignas(16) uint8_t bytes[16];
    std::memcpy(tail, sums + i, static_cast<size_t>(n - i) * sizeof(float));
    _mm_store_si128(reinterpret_cast<__m128i*>(bytes), sixteen(tail));
    std::memcpy(y + i, bytes, static_cast<size_t>(n - i));
  }
}

// Panels of 16 columns, [K / 2][16][2] int16 each: rows k and k + 1 interleaved.
void qgemm_pack_pairs16_16__avx2(const uint8_t* b, int64_t rowStride, int64_t K, int64_t N,
                                 const QGemmOperandBytes& bytes, void* dst) {
  const int64_t kp = (K + 1) / 2 * 2;
  int16_t* out = static_cast<int16_t*>(dst);
  for (int64_t n0 = 0; n0 < N; n0 += kNr) {
    int16_t* panel = out + (n0 / kNr) * kp * kNr;
    for (int64_t k = 0; k < kp; k += 2) {
      const __m256i r0 = widenedRow(b, rowStride, k, K, n0, N, bytes);
      const __m256i r1 = widenedRow(b, rowStride, k + 1, K, n0, N, bytes);
      const __m256i lo = _mm256_unpacklo_epi16(r0, r1), hi = _mm256_unpackhi_epi16(r0, r1);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(panel + k * kNr), _mm256_permute2x128_si256(lo, hi, 0x20));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(panel + k * kNr + 16), _mm256_permute2x128_si256(lo, hi, 0x31));
    }
  }
}

void qgemm_pairs16_5x16__avx2(int64_t rows, int64_t kPadded, const void* a, int64_t aRowBytes, const void* bPanel,
                              int64_t columns, const QGemmOutputStage& stage, int64_t m0, int64_t n0, void* y,
                              int64_t ldy) {
  const int16_t* ap = static_cast<const int16_t*>(a);
  const int16_t* bp = static_cast<const int16_t*>(bPanel);
  const int64_t lda = aRowBytes / 2;
  switch (rows) {
    case 5: fullBlock(kPadded, ap, lda, bp, columns, stage, m0, n0, y, ldy); break;
    case 4: kernel<4>(kPadded, ap, lda, bp, columns, stage, m0, n0, y, ldy); break;
    case 3: kernel<3>(kPadded, ap, lda, bp, columns, stage, m0, n0, y, ldy); break;
    case 2: kernel<2>(kPadded, ap, lda, bp, columns, stage, m0, n0, y, ldy); break;
    default: kernel<1>(kPadded, ap, lda, bp, columns, stage, m0, n0, y, ldy); break;
  }
  static_assert(kMr == 5, "the switch covers every row count up to kMr");
}

}  // namespace osprey
