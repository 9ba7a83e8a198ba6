// The AVX-512 VNNI integer GEMM micro-kernel (qgemm.h, format Quads): vpdpbusd multiplies four
// uint8 values by four int8 values and adds them into int32 without an int16 step, so it is
// exact; the zero points are corrected in the output stage.
#include <immintrin.h>

#include <cstring>

#include "backends/cpu/kernels/qgemm.h"

namespace osprey {

namespace {

constexpr int64_t kMr = 8, kNr = 32;

// How far ahead of the current k step the packed B panel is fetched. With few rows (a 2x2 map's
// 4 positions against a convolution's weights) each weight byte feeds only those rows, so the
// kernel streams the weights from L3 faster than the hardware prefetcher brings them.
constexpr int64_t kPrefetchBytes = 1024;

inline void prefetchPanel(const uint8_t* b, int64_t k) {
  _mm_prefetch(reinterpret_cast<const char*>(b + k * kNr + kPrefetchBytes), _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char*>(b + k * kNr + kPrefetchBytes + 64), _MM_HINT_T0);
}

// The output stage's values for one block of 32 columns, read once for all its rows (the stores
// to y may alias the stage's arrays as far as the compiler knows, so it cannot hoist them
// itself). Column offsets start the accumulators instead of being added to every row.
struct BlockStage {
  __m512i offset[2];
  __m512 scale[2];  // column scales; per-row scales are read per row
  __m512 low, high; // lo and hi less the zero point
  __m512i zeroPoint;

  BlockStage(const QGemmOutputStage& s, int64_t n0) {
    for (int h = 0; h < 2; ++h) {
      offset[h] = s.columnOffset ? _mm512_loadu_si512(s.columnOffset + n0 + 16 * h) : _mm512_setzero_si512();
      scale[h] = s.scale && !s.scalePerRow ? _mm512_loadu_ps(s.scale + n0 + 16 * h) : _mm512_set1_ps(1.f);
    }
    low = _mm512_set1_ps(static_cast<float>(s.lo - s.zeroPoint));
    high = _mm512_set1_ps(static_cast<float>(s.hi - s.zeroPoint));
    zeroPoint = _mm512_set1_epi32(s.zeroPoint);
  }
};

// Sixteen columns [n, n + 16) of row m, the block's half h, `mask` the ones inside the output;
// v holds the column offsets already.
inline void store16(__m512i v, const QGemmOutputStage& s, const BlockStage& b, int h, int64_t m, int64_t n,
                    __mmask16 mask, void* y, int64_t ldy) {
  if (s.rowOffset) v = _mm512_add_epi32(v, _mm512_set1_epi32(s.rowOffset[m]));
  if (s.rowZeroPoints && s.columnSums)
    v = _mm512_sub_epi32(v, _mm512_mullo_epi32(_mm512_set1_epi32(s.rowZeroPoints[m]), _mm512_loadu_si512(s.columnSums + n)));
  if (s.columnZeroPoints && s.rowSums)
    v = _mm512_sub_epi32(v, _mm512_mullo_epi32(_mm512_loadu_si512(s.columnZeroPoints + n), _mm512_set1_epi32(s.rowSums[m])));
  if (s.int32Output) {
    _mm512_mask_storeu_epi32(static_cast<int32_t*>(y) + m * ldy + n, mask, v);
    return;
  }
  __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), s.scalePerRow ? _mm512_set1_ps(s.scale[m]) : b.scale[h]);
  if (s.floatOutput) {
    if (s.floatBias) f = _mm512_add_ps(f, _mm512_maskz_loadu_ps(mask, s.floatBias + n));
    _mm512_mask_storeu_ps(static_cast<float*>(y) + m * ldy + n, mask, f);
    return;
  }
  f = _mm512_min_ps(_mm512_max_ps(f, b.low), b.high);
  const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(f), b.zeroPoint);
  _mm_mask_storeu_epi8(static_cast<uint8_t*>(y) + m * ldy + n, mask, _mm512_cvtepi32_epi8(q));
}

// UnsignedA: A's quads are the uint8 operand of vpdpbusd, B's panel the int8 one; else the
// other way round.
template <int Rows, bool UnsignedA>
void kernel(int64_t kPadded, const uint8_t* a, int64_t aRowBytes, const uint8_t* b, int64_t columns,
            const QGemmOutputStage& stage, int64_t m0, int64_t n0, void* y, int64_t ldy) {
  const BlockStage block(stage, n0);
  __m512i acc[Rows][2];
  for (int i = 0; i < Rows; ++i) acc[i][0] = block.offset[0], acc[i][1] = block.offset[1];
  for (int64_t k = 0; k < kPadded; k += 4) {
    prefetchPanel(b, k);
    const __m512i b0 = _mm512_loadu_si512(b + k * kNr);
    const __m512i b1 = _mm512_loadu_si512(b + k * kNr + 64);
    for (int i = 0; i < Rows; ++i) {
      int32_t quad;
      std::memcpy(&quad, a + i * aRowBytes + k, sizeof(quad));
      const __m512i av = _mm512_set1_epi32(quad);
      if (UnsignedA) {
        acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], av, b0);
        acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], av, b1);
      } else {
        acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], b0, av);
        acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], b1, av);
      }
    }
  }
  const __mmask16 mask0 = columns >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << columns) - 1);
  const __mmask16 mask1 =
      columns >= 32 ? __mmask16(0xFFFF) : columns <= 16 ? __mmask16(0) : __mmask16((1u << (columns - 16)) - 1);
  for (int i = 0; i < Rows; ++i) {
    store16(acc[i][0], stage, block, 0, m0 + i, n0, mask0, y, ldy);
    if (mask1) store16(acc[i][1], stage, block, 1, m0 + i, n0 + 16, mask1, y, ldy);
  }
}

inline __m512i quadOf(const uint8_t* a) {
  int32_t quad;
  std::memcpy(&quad, a, sizeof(quad));
  return _mm512_set1_epi32(quad);
}

template <bool UnsignedA>
inline __m512i dot(__m512i acc, __m512i a, __m512i b) {
  return UnsignedA ? _mm512_dpbusd_epi32(acc, a, b) : _mm512_dpbusd_epi32(acc, b, a);
}

// The whole 8 x 32 block with its sixteen accumulators in named variables: in an array GCC 12
// copied them between registers at every step.
template <bool UnsignedA>
void fullBlock(int64_t kPadded, const uint8_t* a, int64_t lda, const uint8_t* b, int64_t columns,
               const QGemmOutputStage& stage, int64_t m0, int64_t n0, void* y, int64_t ldy) {
  const BlockStage block(stage, n0);
  __m512i c00 = block.offset[0], c01 = block.offset[1], c10 = c00, c11 = c01, c20 = c00, c21 = c01, c30 = c00,
          c31 = c01;
  __m512i c40 = c00, c41 = c01, c50 = c00, c51 = c01, c60 = c00, c61 = c01, c70 = c00, c71 = c01;
  for (int64_t k = 0; k < kPadded; k += 4) {
    prefetchPanel(b, k);
    const __m512i b0 = _mm512_loadu_si512(b + k * kNr), b1 = _mm512_loadu_si512(b + k * kNr + 64);
    const uint8_t* ak = a + k;
    __m512i av = quadOf(ak);
    c00 = dot<UnsignedA>(c00, av, b0), c01 = dot<UnsignedA>(c01, av, b1);
    av = quadOf(ak + lda);
    c10 = dot<UnsignedA>(c10, av, b0), c11 = dot<UnsignedA>(c11, av, b1);
    av = quadOf(ak + 2 * lda);
    c20 = dot<UnsignedA>(c20, av, b0), c21 = dot<UnsignedA>(c21, av, b1);
    av = quadOf(ak + 3 * lda);
    c30 = dot<UnsignedA>(c30, av, b0), c31 = dot<UnsignedA>(c31, av, b1);
    av = quadOf(ak + 4 * lda);
    c40 = dot<UnsignedA>(c40, av, b0), c41 = dot<UnsignedA>(c41, av, b1);
    av = quadOf(ak + 5 * lda);
    c50 = dot<UnsignedA>(c50, av, b0), c51 = dot<UnsignedA>(c51, av, b1);
    av = quadOf(ak + 6 * lda);
    c60 = dot<UnsignedA>(c60, av, b0), c61 = dot<UnsignedA>(c61, av, b1);
    av = quadOf(ak + 7 * lda);
    c70 = dot<UnsignedA>(c70, av, b0), c71 = dot<UnsignedA>(c71, av, b1);
  }
  const __mmask16 mask0 = columns >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << columns) - 1);
  const __mmask16 mask1 =
      columns >= 32 ? __mmask16(0xFFFF) : columns <= 16 ? __mmask16(0) : __mmask16((1u << (columns - 16)) - 1);
  const __m512i accs[8][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31},
                              {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}};
  for (int i = 0; i < 8; ++i) {
    store16(accs[i][0], stage, block, 0, m0 + i, n0, mask0, y, ldy);
    if (mask1) store16(accs[i][1], stage, block, 1, m0 + i, n0 + 16, mask1, y, ldy);
  }
}

template <bool UnsignedA>
void kernelRows(int64_t rows, int64_t kPadded, const uint8_t* a, int64_t aRowBytes, const uint8_t* b, int64_t columns,
                const QGemmOutputStage& stage, int64_t m0, int64_t n0, void* y, int64_t ldy) {
  switch (rows) {
    case 8: fullBlock<UnsignedA>(kPadded, a, aRowBytes, b, columns, stage, m0, n0, y, ldy); break;
    case 7: kernel<7, UnsignedA>(kPadded, a, aRowBytes, b, columns, stage, m0, n0, y, ldy); break;
    case 6: kernel<6, UnsignedA>(kPadded, a, aRowBytes, b, columns, stage, m0, n0, y, ldy); break;
    case 5: kernel<5, UnsignedA>(kPadded, a, aRowBytes, b, columns, stage, m0, n0, y, ldy); break;
    case 4: kernel<4, UnsignedA>(kPadded, a, aRowBytes, b, columns, stage, m0, n0, y, ldy); break;
    case 3: kernel<3, UnsignedA>(kPadded, a, aRowBytes, b, columns, stage, m0, n0, y, ldy); break;
    case 2: kernel<2, UnsignedA>(kPadded, a, aRowBytes, b, columns, stage, m0, n0, y, ldy); break;
    default: kernel<1, UnsignedA>(kPadded, a, aRowBytes, b, columns, stage, m0, n0, y, ldy); break;
  }
  static_assert(kMr == 8, "the switch covers every row count up to kMr");
}

// Sixteen bytes of row k from column n0 (fewer at N's end, zero after), flipped.
inline __m128i rowBytes(const uint8_t* b, int64_t rowStride, int64_t k, int64_t K, int64_t n0, int64_t N,
                        __m128i flip) {
  if (k >= K || n0 >= N) return _mm_setzero_si128();
  if (n0 + 16 <= N)
    return _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + k * rowStride + n0)), flip);
  const __mmask16 inside = static_cast<__mmask16>((1u << (N - n0)) - 1);
  return _mm_maskz_mov_epi8(inside, _mm_xor_si128(_mm_maskz_loadu_epi8(inside, b + k * rowStride + n0), flip));
}

}  // namespace

void qgemm_quads_8x32__avx512vnni(int64_t rows, int64_t kPadded, const void* a, int64_t aRowBytes,
                                  const void* bPanel, int64_t columns, const QGemmOutputStage& stage, int64_t m0,
                                  int64_t n0, void* y, int64_t ldy) {
  const uint8_t* ap = static_cast<const uint8_t*>(a);
  const uint8_t* bp = static_cast<const uint8_t*>(bPanel);
  if (stage.unsignedA)
    kernelRows<true>(rows, kPadded, ap, aRowBytes, bp, columns, stage, m0, n0, y, ldy);
  else
    kernelRows<false>(rows, kPadded, ap, aRowBytes, bp, columns, stage, m0, n0, y, ldy);
}

// Panels of 32 columns, [K / 4][32][4] bytes each: four rows interleaved byte by byte.
void qgemm_pack_quads_32__avx512vnni(const uint8_t* b, int64_t rowStride, int64_t K, int64_t N,
                                     const QGemmOperandBytes& bytes, void* dst) {
  const int64_t kp = (K + 3) / 4 * 4;
  const __m128i flip = _mm_set1_epi8(bytes.flip ? static_cast<char>(0x80) : 0);
  uint8_t* out = static_cast<uint8_t*>(dst);
  for (int64_t n0 = 0; n0 < N; n0 += kNr) {
    uint8_t* panel = out + (n0 / kNr) * kp * kNr;
    for (int64_t k = 0; k < kp; k += 4)
      for (int64_t half = 0; half < 2; ++half) {
        const int64_t c = n0 + 16 * half;
        const __m128i r0 = rowBytes(b, rowStride, k, K, c, N, flip), r1 = rowBytes(b, rowStride, k + 1, K, c, N, flip);
        const __m128i r2 = rowBytes(b, rowStride, k + 2, K, c, N, flip), r3 = rowBytes(b, rowStride, k + 3, K, c, N, flip);
        const __m128i t0 = _mm_unpacklo_epi8(r0, r1), t1 = _mm_unpackhi_epi8(r0, r1);
        const __m128i t2 = _mm_unpacklo_epi8(r2, r3), t3 = _mm_unpackhi_epi8(r2, r3);
        __m128i* q = reinterpret_cast<__m128i*>(panel + k * kNr + 64 * half);
        _mm_storeu_si128(q, _mm_unpacklo_epi16(t0, t2));
        _mm_storeu_si128(q + 1, _mm_unpackhi_epi16(t0, t2));
        _mm_storeu_si128(q + 2, _mm_unpacklo_epi16(t1, t3));
        _mm_storeu_si128(q + 3, _mm_unpackhi_epi16(t1, t3));
      }
  }
}

}  // namespace osprey
