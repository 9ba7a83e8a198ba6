// MatMulNBits on the CPU (the op: src/ops/matmul_nbits.cpp). The 4- or 8-bit weights stay
// quantized: they are repacked once, at resize, into panels of nr columns (nr = the f32 GEMM's
// register block), still 4 or 8 bits a weight, in STATIC memory shared through PackedWeights.
// At run time each thread dequantizes a K-slice of one panel into a small float buffer that stays
// in L1 and runs the f32 GEMM micro-kernel of the function table over all rows of A with it, so
// the dequantization is paid once per panel per 256 rows; up to four rows (token generation)
// dequantize in registers instead (a GEMV that reads each weight's 4 bits once).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels/cpu_functions.h"
#include "ops/activation.h"

namespace osprey {

class ThreadPool;

// One panel of nr columns: row k's codes at q + k * nr * bits / 8 (4 bits: byte j holds column j
// in its low nibble and column j + nr / 2 in its high one; 8 bits: byte j is column j); block b's
// zero points (bytes) at zero + b * nr and scales at scale + b * nr. Columns past N have code,
// zero point and scale 0.
struct NBitsPanel {
  const uint8_t* q = nullptr;
  const uint8_t* zero = nullptr;
  const float* scale = nullptr;
};

// out[(k - k0) * nr + j] = (code(k, j) - zero(k / blockSize, j)) * scale(k / blockSize, j) for
// k in [k0, k1), j < nr: a K-slice of the panel as the f32 GEMM's packed B panel.
using NBitsDequantKernel = void (*)(const NBitsPanel& panel, int64_t nr, int64_t blockSize, int64_t k0, int64_t k1,
                                    float* out);
// out[i * nr + j] = sum over k < K of a[i * lda + k] * W(k, j), for i < rows (1 to 4).
using NBitsGemvKernel = void (*)(const NBitsPanel& panel, int64_t nr, int64_t blockSize, int64_t K, int64_t rows,
                                 const float* a, int64_t lda, float* out);

// The kernels of one instruction set; nr must equal the f32 table's gemmNr they run with.
struct NBitsKernels {
  const char* isa = "scalar";
  int64_t nr = 16;
  NBitsDequantKernel dequant4 = nullptr, dequant8 = nullptr;
  NBitsGemvKernel gemv4 = nullptr, gemv8 = nullptr;
};

// The kernels that go with cpuFunctions(): AVX-512 where its isa is "avx512f", AVX2 where it is
// "avx2_fma" (so the ISA limit holds), else the portable ones.
const NBitsKernels& nbitsKernels();
// The portable kernels for panels of nr columns (any multiple of 2 up to kGemmMaxNr).
NBitsKernels nbitsScalarKernels(int64_t nr);

// Quantized B in the panel layout.
struct NBitsWeights {
  int64_t K = 0, N = 0, bits = 4, blockSize = 0, kBlocks = 0, nr = 16;
  const uint8_t* data = nullptr;  // nbitsPackedBytes of them, from nbitsPack
  NBitsPanel panel(int64_t p) const;
};
size_t nbitsPackedBytes(const NBitsWeights& w);
// MatMulNBits' B ([N, k_blocks, blob_size]), scales ([N * k_blocks]) and zero points (packed as
// B, null for the default 2^(bits - 1)) into the panels at dst (nbitsPackedBytes of them).
void nbitsPack(const NBitsWeights& w, const uint8_t* b, const float* scales, const uint8_t* zeros, uint8_t* dst);
// y [M x N] = act(a [M x K] (rows contiguous) x W + bias (null: none)), on the table fn whose
// gemmNr is w.nr, threaded over column panels (and rows where there are fewer panels than threads).
void nbitsMatMul(ThreadPool* pool, const CpuFunctions& fn, const NBitsKernels& kernels, const NBitsWeights& w,
                 int64_t M, const float* a, const float* bias, float* y, const FusedActivation& act = {});

std::unique_ptr<Execution> createMatMulNBitsExecution(CPUBackend* backend, const OpRef& op,
                                                      const std::vector<RuntimeTensor*>& inputs,
                                                      const std::vector<RuntimeTensor*>& outputs);

#if defined(__x86_64__) || defined(_M_X64)
// matmul_nbits_avx2.cpp (nr 16) and matmul_nbits_avx512.cpp (nr 32); only called after a CPU check.
void nbits_dequant4_16__avx2(const NBitsPanel& panel, int64_t nr, int64_t blockSize, int64_t k0, int64_t k1,
                             float* out);
void nbits_dequant8_16__avx2(const NBitsPanel& panel, int64_t nr, int64_t blockSize, int64_t k0, int64_t k1,
                             float* out);
void nbits_gemv4_16__avx2(const NBitsPanel& panel, int64_t nr, int64_t blockSize, int64_t K, int64_t rows,
                          const float* a, int64_t lda, float* out);
void nbits_gemv8_16__avx2(const NBitsPanel& panel, int64_t nr, int64_t blockSize, int64_t K, int64_t rows,
                          const float* a, int64_t lda, float* out);
void nbits_dequant4_32__avx512f(const NBitsPanel& panel, int64_t nr, int64_t blockSize, int64_t k0, int64_t k1,
                                float* out);
void nbits_dequant8_32__avx512f(const NBitsPanel& panel, int64_t nr, int64_t blockSize, int64_t k0, int64_t k1,
                                float* out);
void nbits_gemv4_32__avx512f(const NBitsPanel& panel, int64_t nr, int64_t blockSize, int64_t K, int64_t rows,
                             const float* a, int64_t lda, float* out);
void nbits_gemv8_32__avx512f(const NBitsPanel& panel, int64_t nr, int64_t blockSize, int64_t K, int64_t rows,
                             const float* a, int64_t lda, float* out);
#endif

}  // namespace osprey
