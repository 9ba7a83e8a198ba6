// The recurrent step's GEMV (recurrent.h) in AVX2 + FMA: one hidden state against R packed into
// panels of 16 or 32 columns. Eight sums are in flight (the panel's vectors times 2 or 4 steps of
// K), all in registers; the table's gemvPanel, written for any panel width, kept the sums of a
// 16-column panel in memory, each FMA waiting on the store of the one before.
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstring>

#include "backends/cpu/kernels/recurrent.h"

namespace osprey {

namespace {

constexpr int kPrefetchBytes = 2048;

// One panel of kVectors * 8 columns: out[j] = sum over k < K of h[k] * panel[k * width + j].
template <int kVectors>
void gemvPanel(int64_t K, const float* h, const float* panel, float* out) {
  constexpr int kWidth = kVectors * 8, kSteps = 8 / kVectors;
  __m256 acc[kSteps][kVectors];
  for (int s = 0; s < kSteps; ++s)
    for (int v = 0; v < kVectors; ++v) acc[s][v] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + kSteps <= K; k += kSteps) {
    // The lines this iteration reads (8 vectors, 4 lines), 2 KiB on: R streams from L2 each
    // step, faster than the hardware prefetcher brings it (a 1 MiB R: 17.5 -> 13.3 us).
    const char* ahead = reinterpret_cast<const char*>(panel + k * kWidth) + kPrefetchBytes;
    for (int line = 0; line < 4; ++line) _mm_prefetch(ahead + 64 * line, _MM_HINT_T0);
    for (int s = 0; s < kSteps; ++s) {
      const __m256 hk = _mm256_broadcast_ss(h + k + s);
      const float* row = panel + (k + s) * kWidth;
      for (int v = 0; v < kVectors; ++v) acc[s][v] = _mm256_fmadd_ps(hk, _mm256_loadu_ps(row + 8 * v), acc[s][v]);
    }
  }
  for (; k < K; ++k) {
    const __m256 hk = _mm256_broadcast_ss(h + k);
    const float* row = panel + k * kWidth;
    for (int v = 0; v < kVectors; ++v) acc[0][v] = _mm256_fmadd_ps(hk, _mm256_loadu_ps(row + 8 * v), acc[0][v]);
  }
  for (int v = 0; v < kVectors; ++v) {
    __m256 sum = acc[0][v];
    for (int s = 1; s < kSteps; ++s) sum = _mm256_add_ps(sum, acc[s][v]);
    _mm256_storeu_ps(out + 8 * v, sum);
  }
}

}  // namespace

void f32_recurrent_gemv__avx2_fma(int64_t K, const float* h, const float* packed, int64_t nr, int64_t columns,
                                  float* out) {
  alignas(32) float partial[32];
  for (int64_t j = 0; j < columns; j += nr) {
    const float* panel = packed + j * K;  // panels of K x nr, one after another
    // The last, partial panel goes through the stack: the columns past `columns` belong to
    // another gate, which another thread may be writing.
    float* dst = columns - j >= nr ? out + j : partial;
    if (nr == 32) gemvPanel<4>(K, h, panel, dst);
    else gemvPanel<2>(K, h, panel, dst);
    if (dst == partial) std::memcpy(out + j, partial, sizeof(float) * (columns - j));
  }
}

}  // namespace osprey

#endif
