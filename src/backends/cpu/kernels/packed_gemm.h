// The f32 GEMM of the CPU backend: C = epilogue(A * B) over the register-blocked micro-kernel
// of the function table, cache-blocked over K and threaded over blocks of C. Either operand may
// be pre-packed (constant weights, packed once at resize into STATIC memory) or read in place
// with any strides (activations, im2col columns).
#pragma once
#include <cstddef>
#include <cstdint>

#include "backends/cpu/kernels/cpu_functions.h"
#include "ops/activation.h"

namespace osprey {

class ThreadPool;

// A [M x K]: packed into panels of mr rows stored k-major ([K][mr], zero-padded rows), mr x nr
// being the register block of the function table used to pack and multiply,
// or in place with element (i, k) at data[i * rowStride + k * colStride].
struct GemmA {
  const float* data = nullptr;
  int64_t rowStride = 0, colStride = 1;
  bool packed = false;
};

// B [K x N]: packed into panels of nr columns ([K][nr], zero-padded columns), or in
// place with row k at data + k * rowStride (columns contiguous).
struct GemmB {
  const float* data = nullptr;
  int64_t rowStride = 0;
  bool packed = false;
};

// Applied to every element of C once its sum is complete:
// C[i][j] = act(alpha * sum + beta * bias[i * biasRowStride + j * biasColStride]
//               + residual[i * residualRowStride + j]), the residual (Conv's Z) optional.
struct GemmEpilogue {
  const float* bias = nullptr;
  int64_t biasRowStride = 0, biasColStride = 0;
  const float* residual = nullptr;
  int64_t residualRowStride = 0;
  float alpha = 1.f, beta = 1.f;
  FusedActivation act;
};

// Floats needed by packGemmA / packGemmB for the table fn.
size_t packedASize(const CpuFunctions& fn, int64_t M, int64_t K);
size_t packedBSize(const CpuFunctions& fn, int64_t K, int64_t N);
// Element (i, k) of A at src[i * rowStride + k * colStride]; (k, n) of B likewise.
void packGemmA(const CpuFunctions& fn, const float* src, int64_t rowStride, int64_t colStride, int64_t M, int64_t K,
               float* dst);
void packGemmB(const CpuFunctions& fn, const float* src, int64_t rowStride, int64_t colStride, int64_t K, int64_t N,
               float* dst);

// The epilogue on rows [i0, i0 + rows) and columns [j0, j0 + cols) of C, whose first element is
// at c (row stride ldc), for kernels that finish their sums outside packedGemm.
void applyEpilogue(const CpuFunctions& fn, const GemmEpilogue& ep, int64_t i0, int64_t rows, int64_t j0, int64_t cols,
                   float* c, int64_t ldc);

// The bounds [lo, hi] that act clamps to when it is None, Relu or Clip (true); false for any other.
bool clampBounds(const FusedActivation& act, float* lo, float* hi);

// x[i] = act(x[i]) for i < n, through the function table's vector kernels where it has one.
void applyActivation(const CpuFunctions& fn, const FusedActivation& act, float* x, int64_t n);

// A result with positions as rows (src[p * lds + c], as a GEMM with positions as its rows leaves
// it) moved into channel planes y[c * planeSize + p], planeSize = runs * runLength, with + bias[c]
// and + residual (laid out as y), then act, in blocks of 16 channels split over the threads, so
// that each block's planes are finished in cache. The positions lie in `runs` runs of runLength;
// run r starts at src + r * runStride * lds (a padded grid of positions leaves gaps between runs).
void transposeToPlanesWithEpilogue(ThreadPool* pool, const CpuFunctions& fn, const float* src, int64_t lds,
                                   int64_t channels, int64_t runs, int64_t runLength, int64_t runStride,
                                   const float* bias, const float* residual, const FusedActivation& act, float* y);

// C [M x N] with row stride ldc; packed operands must have been packed for the same fn.
void packedGemm(ThreadPool* pool, const CpuFunctions& fn, int64_t M, int64_t N, int64_t K, const GemmA& a,
                const GemmB& b, float* c, int64_t ldc, const GemmEpilogue& epilogue);

// The same product stored transposed into channel planes, for a GEMM with output positions as
// its rows and channels as its columns: y[j * ldy + i] = act(sum over k of A[i][k] * B[k][j]
// + bias[j] + residual[j * ldy + i]), bias and residual optional. Needs fn.gemmPlanes.
void packedGemmToPlanes(ThreadPool* pool, const CpuFunctions& fn, int64_t M, int64_t N, int64_t K, const GemmA& a,
                        const GemmB& b, const float* bias, const float* residual, const FusedActivation& act, float* y,
                        int64_t ldy);

}  // namespace osprey
