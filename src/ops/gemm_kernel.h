// The plain matrix product behind the reference kernels of Conv, ConvTranspose, Gemm and
// MatMul. Row-major, i-k-j order with the j loop innermost over contiguous memory so the
// compiler vectorises it; tiled so that a tile of B stays in L2 while every row of the range
// streams past it, and four rows of C share each load of B.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "ops/activation.h"

namespace osprey {

namespace gemm_detail {

// Separate functions with restrict parameters: the promise of no aliasing is what lets the
// compiler vectorise without run-time overlap checks. The fixed 8-wide inner blocks vectorise
// even under -O2, whose cost model leaves loops of unknown trip count scalar.
constexpr int64_t kBlock = 8;

template <class T>
inline void rowUpdate4(int64_t n, T a0, T a1, T a2, T a3, const T* __restrict b, T* __restrict c0, T* __restrict c1,
                       T* __restrict c2, T* __restrict c3) {
  int64_t j = 0;
  for (; j + kBlock <= n; j += kBlock) {
    for (int64_t t = j; t < j + kBlock; ++t) {
      const T bt = b[t];
      c0[t] += a0 * bt;
      c1[t] += a1 * bt;
      c2[t] += a2 * bt;
      c3[t] += a3 * bt;
    }
  }
  for (; j < n; ++j) {
    const T bj = b[j];
    c0[j] += a0 * bj;
    c1[j] += a1 * bj;
    c2[j] += a2 * bj;
    c3[j] += a3 * bj;
  }
}

template <class T>
inline void rowUpdate1(int64_t n, T a, const T* __restrict b, T* __restrict c) {
  int64_t j = 0;
  for (; j + kBlock <= n; j += kBlock)
    for (int64_t t = j; t < j + kBlock; ++t) c[t] += a * b[t];
  for (; j < n; ++j) c[j] += a * b[j];
}

}  // namespace gemm_detail

// Rows [rowBegin, rowEnd) of C = A * B, overwriting C. A is M x K (row stride lda), B is
// K x N (row stride ldb), C is M x N (row stride ldc).
template <class T>
void gemmRows(int64_t rowBegin, int64_t rowEnd, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
              T* C, int64_t ldc) {
  constexpr int64_t kTileN = 256;  // a 4-row strip of C (4 KiB of floats) stays in L1
  constexpr int64_t kTileK = 128;  // a 128 x 256 tile of B (128 KiB of floats) stays in L2
  for (int64_t i = rowBegin; i < rowEnd; ++i) std::fill(C + i * ldc, C + i * ldc + N, T(0));
  for (int64_t j0 = 0; j0 < N; j0 += kTileN) {
    const int64_t nb = std::min(kTileN, N - j0);
    for (int64_t k0 = 0; k0 < K; k0 += kTileK) {
      const int64_t k1 = std::min(K, k0 + kTileK);
      int64_t i = rowBegin;
      for (; i + 4 <= rowEnd; i += 4) {
        const T* a = A + i * lda;
        T* c = C + i * ldc + j0;
        for (int64_t k = k0; k < k1; ++k)
          gemm_detail::rowUpdate4(nb, a[k], a[lda + k], a[2 * lda + k], a[3 * lda + k], B + k * ldb + j0, c, c + ldc,
                                  c + 2 * ldc, c + 3 * ldc);
      }
      for (; i < rowEnd; ++i) {
        const T* a = A + i * lda;
        for (int64_t k = k0; k < k1; ++k) gemm_detail::rowUpdate1(nb, a[k], B + k * ldb + j0, C + i * ldc + j0);
      }
    }
  }
}

// C[b] = A[b] * B[b] for `batches` products of the same M x K by K x N shape, with C[b]
// contiguous at C + b*M*N and A[b], B[b] at the given element offsets (repeated offsets express
// broadcasting). The rows of all products are split over the pool; epilogue(b, row, rowPtr)
// runs on each finished row of C from the thread that computed it.
template <class T, class Epilogue>
void batchedGemm(ThreadPool* pool, int64_t batches, int64_t M, int64_t N, int64_t K, const T* A,
                 const std::vector<int64_t>& aOffsets, const T* B, const std::vector<int64_t>& bOffsets, T* C,
                 Epilogue&& epilogue) {
  parallelFor(pool, batches * M, [&](int64_t begin, int64_t end) {
    while (begin < end) {
      const int64_t b = begin / M, r0 = begin % M, r1 = std::min(M, r0 + (end - begin));
      T* c = C + b * M * N;
      gemmRows(r0, r1, N, K, A + aOffsets[b], K, B + bOffsets[b], N, c, N);
      for (int64_t r = r0; r < r1; ++r) epilogue(b, r, c + r * N);
      begin += r1 - r0;
    }
  });
}

// A fused activation on one value of T: Relu exactly in T, the others through float (they are
// float functions; the converter fuses them into float ops).
template <class T>
inline T applyActivation(const FusedActivation& act, T v) {
  if (act.kind == FusedActivation::Kind::None) return v;
  if (act.kind == FusedActivation::Kind::Relu) return v > T(0) ? v : T(0);
  return static_cast<T>(act.apply(static_cast<float>(v)));
}

}  // namespace osprey
