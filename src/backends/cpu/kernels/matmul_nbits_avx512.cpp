// MatMulNBits kernels for panels of 32 columns (matmul_nbits.h), compiled with -mavx512f -mfma
// and only called after a CPU check. A code becomes (code - zero point) * scale, exactly as the reference
// computes it: the zero point is subtracted in float (both are small integers, exact), then one
// rounding in the multiply by the scale.
#include <immintrin.h>

#include <algorithm>

#include "backends/cpu/kernels/matmul_nbits.h"

namespace osprey {

namespace {

constexpr int64_t kNr = 32;

// 16 bytes as 16 floats.
inline __m512 toFloats(__m128i bytes) { return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes)); }

// One block's zero points and scales for the panel's 32 columns, two vectors of each.
struct Block {
  __m512 z0, z1, s0, s1;
};

inline Block blockAt(const NBitsPanel& p, int64_t b) {
  const uint8_t* z = p.zero + b * kNr;
  const float* s = p.scale + b * kNr;
  Block r;
  r.z0 = toFloats(_mm_loadu_si128(reinterpret_cast<const __m128i*>(z)));
  r.z1 = toFloats(_mm_loadu_si128(reinterpret_cast<const __m128i*>(z + 16)));
  r.s0 = _mm512_loadu_ps(s);
  r.s1 = _mm512_loadu_ps(s + 16);
  return r;
}

// Row k's codes as floats: columns [0, 16) in c0, [16, 32) in c1.
template <int Bits>
inline void codesAt(const uint8_t* q, int64_t k, __m512* c0, __m512* c1) {
  if (Bits == 4) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + k * (kNr / 2)));
    const __m128i nibble = _mm_set1_epi8(15);
    *c0 = toFloats(_mm_and_si128(bytes, nibble));
    *c1 = toFloats(_mm_and_si128(_mm_srli_epi16(bytes, 4), nibble));
  } else {
    *c0 = toFloats(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + k * kNr)));
    *c1 = toFloats(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + k * kNr + 16)));
  }
}

template <int Bits>
inline void weightsAt(const NBitsPanel& p, const Block& b, int64_t k, __m512* w0, __m512* w1) {
  __m512 c0, c1;
  codesAt<Bits>(p.q, k, &c0, &c1);
  *w0 = _mm512_mul_ps(_mm512_sub_ps(c0, b.z0), b.s0);
  *w1 = _mm512_mul_ps(_mm512_sub_ps(c1, b.z1), b.s1);
}

template <int Bits>
void dequant(const NBitsPanel& p, int64_t, int64_t bs, int64_t k0, int64_t k1, float* out) {
  for (int64_t k = k0; k < k1;) {
    const int64_t b = k / bs, end = std::min(k1, (b + 1) * bs);
    const Block blk = blockAt(p, b);
    for (; k < end; ++k) {
      __m512 w0, w1;
      weightsAt<Bits>(p, blk, k, &w0, &w1);
      float* o = out + (k - k0) * kNr;
      _mm512_storeu_ps(o, w0);
      _mm512_storeu_ps(o + 16, w1);
    }
  }
}

// Rows of A against the panel, each weight dequantized once into registers and used by every
// row; with few rows, U sets of accumulators take alternate k so that the FMAs do not wait on
// each other's latency.
template <int Bits, int Rows>
void gemvRows(const NBitsPanel& p, int64_t bs, int64_t K, const float* a, int64_t lda, float* out) {
  constexpr int U = Rows <= 2 ? 2 : 1;
  __m512 acc[U][Rows][2];
  for (int u = 0; u < U; ++u)
    for (int i = 0; i < Rows; ++i) acc[u][i][0] = acc[u][i][1] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K;) {
    const int64_t b = k / bs, end = std::min(K, (b + 1) * bs);
    const Block blk = blockAt(p, b);
    for (; k + U <= end; k += U)
      for (int u = 0; u < U; ++u) {
        __m512 w0, w1;
        weightsAt<Bits>(p, blk, k + u, &w0, &w1);
        for (int i = 0; i < Rows; ++i) {
          const __m512 av = _mm512_set1_ps(a[i * lda + k + u]);
          acc[u][i][0] = _mm512_fmadd_ps(av, w0, acc[u][i][0]);
          acc[u][i][1] = _mm512_fmadd_ps(av, w1, acc[u][i][1]);
        }
      }
    for (; k < end; ++k) {
      __m512 w0, w1;
      weightsAt<Bits>(p, blk, k, &w0, &w1);
      for (int i = 0; i < Rows; ++i) {
        const __m512 av = _mm512_set1_ps(a[i * lda + k]);
        acc[0][i][0] = _mm512_fmadd_ps(av, w0, acc[0][i][0]);
        acc[0][i][1] = _mm512_fmadd_ps(av, w1, acc[0][i][1]);
      }
    }
  }
  for (int i = 0; i < Rows; ++i) {
    __m512 r0 = acc[0][i][0], r1 = acc[0][i][1];
    if (U == 2) r0 = _mm512_add_ps(r0, acc[U - 1][i][0]), r1 = _mm512_add_ps(r1, acc[U - 1][i][1]);
    _mm512_storeu_ps(out + i * kNr, r0);
    _mm512_storeu_ps(out + i * kNr + 16, r1);
  }
}

template <int Bits>
void gemv(const NBitsPanel& p, int64_t, int64_t bs, int64_t K, int64_t rows, const float* a, int64_t lda,
          float* out) {
  switch (rows) {
    case 1: gemvRows<Bits, 1>(p, bs, K, a, lda, out); break;
    case 2: gemvRows<Bits, 2>(p, bs, K, a, lda, out); break;
    case 3: gemvRows<Bits, 3>(p, bs, K, a, lda, out); break;
    default: gemvRows<Bits, 4>(p, bs, K, a, lda, out); break;
  }
}

}  // namespace

void nbits_dequant4_32__avx512f(const NBitsPanel& panel, int64_t nr, int64_t blockSize, int64_t k0, int64_t k1,
                            float* out) {
  dequant<4>(panel, nr, blockSize, k0, k1, out);
}
void nbits_dequant8_32__avx512f(const NBitsPanel& panel, int64_t nr, int64_t blockSize, int64_t k0, int64_t k1,
                            float* out) {
  dequant<8>(panel, nr, blockSize, k0, k1, out);
}
void nbits_gemv4_32__avx512f(const NBitsPanel& panel, int64_t nr, int64_t blockSize, int64_t K, int64_t rows,
                         const float* a, int64_t lda, float* out) {
  gemv<4>(panel, nr, blockSize, K, rows, a, lda, out);
}
void nbits_gemv8_32__avx512f(const NBitsPanel& panel, int64_t nr, int64_t blockSize, int64_t K, int64_t rows,
                         const float* a, int64_t lda, float* out) {
  gemv<8>(panel, nr, blockSize, K, rows, a, lda, out);
}

}  // namespace osprey
