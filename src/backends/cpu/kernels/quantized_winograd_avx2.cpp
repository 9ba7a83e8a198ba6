// The integer Winograd convolution's run on the AVX2 table (quantized_winograd.h): per block of
// tiles, the input transform (16 channels a vector, int16), 16 GEMMs on the Pairs16 micro-kernel
// into int32, and the output transform with the GEMM's output stage.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels/quantized_winograd.h"
#include "core/thread_pool.h"

namespace osprey {

namespace {

constexpr int64_t kMr = 5, kNr = 16;

int64_t roundUp(int64_t v, int64_t step) { return (v + step - 1) / step * step; }

struct Layout {
  int64_t cp, cv, op, panels, tilesW, tiles, blockTiles, vBytes;
};

Layout layoutOf(const QWinogradShape& s) {
  Layout l;
  l.cp = roundUp(s.C, 2), l.cv = roundUp(s.C, 16), l.op = roundUp(s.O, kNr), l.panels = l.op / kNr;
  l.tilesW = (s.outW + 1) / 2;
  l.tiles = (s.outH + 1) / 2 * l.tilesW;
  l.blockTiles = qwinogradBlockTiles(s);
  l.vBytes = 16 * l.blockTiles * l.cv * 2;
  return l;
}

// V = B^T d B for the 4x4 windows of tiles [t0, t1) into v[pos][tile - t0][c] (rows of cv int16).
void inputTransform(const QWinogradShape& s, const Layout& l, const uint8_t* x, uint8_t flip, int32_t za, int64_t t0,
                    int64_t t1, int16_t* v) {
  const __m128i flipV = _mm_set1_epi8(static_cast<char>(flip));
  const __m256i zero16 = _mm256_set1_epi16(static_cast<int16_t>(za));
  const int64_t posStride = l.blockTiles * l.cv;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t ih0 = (t / l.tilesW) * 2 - s.padTop, iw0 = (t % l.tilesW) * 2 - s.padLeft;
    int16_t* row = v + (t - t0) * l.cv;
    for (int64_t c = 0; c < s.C; c += 16) {
      __m256i d[4][4];
      for (int r = 0; r < 4; ++r)
        for (int q = 0; q < 4; ++q) {
          const int64_t ih = ih0 + r, iw = iw0 + q;
          if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) {
            d[r][q] = _mm256_setzero_si256();  // padding reads as the zero point
            continue;
          }
          const uint8_t* src = x + (ih * s.W + iw) * s.C + c;
          __m128i raw;
          if (c + 16 <= s.C) {
            raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
          } else {  // the channels past C give values the zero rows of the weights multiply away
            alignas(16) uint8_t tail[16] = {};
            std::memcpy(tail, src, static_cast<size_t>(s.C - c));
            raw = _mm_load_si128(reinterpret_cast<const __m128i*>(tail));
          }
          d[r][q] = _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_xor_si128(raw, flipV)), zero16);
        }
      __m256i b[4][4];  // B^T d: rows combined
      for (int q = 0; q < 4; ++q) {
        b[0][q] = _mm256_sub_epi16(d[0][q], d[2][q]);
        b[1][q] = _mm256_add_epi16(d[1][q], d[2][q]);
        b[2][q] = _mm256_sub_epi16(d[2][q], d[1][q]);
        b[3][q] = _mm256_sub_epi16(d[1][q], d[3][q]);
      }
      for (int r = 0; r < 4; ++r) {  // (B^T d) B: columns combined
        int16_t* out = row + r * 4 * posStride + c;
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_sub_epi16(b[r][0], b[r][2]));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + posStride), _mm256_add_epi16(b[r][1], b[r][2]));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * posStride), _mm256_sub_epi16(b[r][2], b[r][1]));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 3 * posStride), _mm256_sub_epi16(b[r][1], b[r][3]));
      }
    }
  }
}

// Eight int32 sums of output channels [o, o + 8) at one position through the byte output stage.
inline __m128i requantized8(__m256i v, const QGemmOutputStage& st, int64_t o) {
  v = _mm256_add_epi32(v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(st.columnOffset + o)));
  __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_loadu_ps(st.scale + o));
  f = _mm256_max_ps(f, _mm256_set1_ps(static_cast<float>(st.lo - st.zeroPoint)));
  f = _mm256_min_ps(f, _mm256_set1_ps(static_cast<float>(st.hi - st.zeroPoint)));
  const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(f), _mm256_set1_epi32(st.zeroPoint));
  const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  return st.signedOutput ? _mm_packs_epi16(words, words) : _mm_packus_epi16(words, words);
}

// Y = A^T M A / 4 for tiles [t0, t1) and output channels [o0, o1) from m[pos][tile - t0][o]
// (rows of op int32), into y.
void outputTransform(const QWinogradShape& s, const Layout& l, const int32_t* m, int64_t t0, int64_t t1, int64_t o0,
                     int64_t o1, const QGemmOutputStage& st, uint8_t* y) {
  const int64_t posStride = l.blockTiles * l.op;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t oh0 = (t / l.tilesW) * 2, ow0 = (t % l.tilesW) * 2;
    const int32_t* tileRow = m + (t - t0) * l.op;
    for (int64_t o = o0; o < o1; o += 8) {
      __m256i a[4][2];  // M A: per row xi, the two output columns
      for (int xi = 0; xi < 4; ++xi) {
        const int32_t* p = tileRow + xi * 4 * posStride + o;
        const __m256i m0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        const __m256i m1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + posStride));
        const __m256i m2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * posStride));
        const __m256i m3 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 3 * posStride));
        a[xi][0] = _mm256_add_epi32(_mm256_add_epi32(m0, m1), m2);
        a[xi][1] = _mm256_sub_epi32(_mm256_sub_epi32(m1, m2), m3);
      }
      for (int q = 0; q < 2; ++q) {
        // 4Y exactly (qwinogradExact): the shift divides without rounding.
        const __m256i y0 = _mm256_srai_epi32(_mm256_add_epi32(_mm256_add_epi32(a[0][q], a[1][q]), a[2][q]), 2);
        const __m256i y1 = _mm256_srai_epi32(_mm256_sub_epi32(_mm256_sub_epi32(a[1][q], a[2][q]), a[3][q]), 2);
        const int64_t ow = ow0 + q;
        if (ow >= s.outW) continue;
        for (int r = 0; r < 2; ++r) {
          const int64_t oh = oh0 + r;
          if (oh >= s.outH) continue;
          const __m128i bytes = requantized8(r == 0 ? y0 : y1, st, o);
          uint8_t* dst = y + (oh * s.outW + ow) * s.O + o;
          if (o + 8 <= o1) {
            _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), bytes);
          } else {
            alignas(16) uint8_t tail[16];
            _mm_store_si128(reinterpret_cast<__m128i*>(tail), bytes);
            std::memcpy(dst, tail, static_cast<size_t>(o1 - o));
          }
        }
      }
    }
  }
}

}  // namespace

void qwinogradConv__avx2(ThreadPool* pool, int threads, const QWinogradShape& s, const uint8_t* x, uint8_t flip,
                         int32_t za, const int16_t* weights, const QGemmOutputStage& stage, uint8_t* y,
                         uint8_t* scratch) {
  const Layout l = layoutOf(s);
  const int64_t blocks = (l.tiles + l.blockTiles - 1) / l.blockTiles;
  // Fewer blocks than two per thread: each block's output channels are shared out too (each
  // share transforms the block's inputs again, which costs little beside its products).
  const int64_t splits = std::clamp<int64_t>((2 * threads + blocks - 1) / blocks, 1, l.panels);
  const int64_t items = blocks * splits;
  const size_t slotBytes = qwinogradScratchBytes(s);
  QGemmOutputStage sums;  // the products stay int32 for the output transform
  sums.int32Output = true;
  const int64_t operandElements = l.cp * l.op;  // one position's transformed weights
  parallelFor(pool, threads, [&](int64_t first, int64_t last) {
    for (int64_t thread = first; thread < last; ++thread) {
      int16_t* v = reinterpret_cast<int16_t*>(scratch + thread * slotBytes);
      int32_t* m = reinterpret_cast<int32_t*>(scratch + thread * slotBytes + l.vBytes);
      for (int64_t item = thread * items / threads; item < (thread + 1) * items / threads; ++item) {
        const int64_t b = item / splits, split = item % splits;
        const int64_t p0 = l.panels * split / splits, p1 = l.panels * (split + 1) / splits;
        const int64_t t0 = b * l.blockTiles, t1 = std::min(l.tiles, t0 + l.blockTiles), rows = t1 - t0;
        inputTransform(s, l, x, flip, za, t0, t1, v);
        for (int64_t pos = 0; pos < 16; ++pos) {
          const int16_t* a = v + pos * l.blockTiles * l.cv;
          int32_t* out = m + pos * l.blockTiles * l.op;
          for (int64_t p = p0; p < p1; ++p) {
            const int16_t* panel = weights + pos * operandElements + p * l.cp * kNr;
            const int64_t columns = std::min(kNr, s.O - p * kNr);
            for (int64_t m0 = 0; m0 < rows; m0 += kMr)
              qgemm_pairs16_5x16__avx2(std::min(kMr, rows - m0), l.cp, a + m0 * l.cv, l.cv * 2, panel, columns, sums,
                                       m0, p * kNr, out, l.op);
          }
        }
        outputTransform(s, l, m, t0, t1, p0 * kNr, std::min(s.O, p1 * kNr), stage, y);
      }
    }
  });
}

}  // namespace osprey
