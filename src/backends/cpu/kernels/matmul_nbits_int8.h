// MatMulNBits with int8 activations on the CPU (accuracy_level 4 on 4-bit weights; ops/matmul_nbits.h
// defines the arithmetic, which these kernels follow to the bit). The codes are repacked once, at
// resize, into panels of `width` columns (8 for AVX2, 16 for AVX-512 VNNI) in groups of eight
// values of k: byte 4c + j of group g holds code(8g + j, c) in its low nibble and code(8g + 4 + j,
// c) in its high one, so one load unpacks (mask; shift and mask) into two vectors whose 32-bit
// lane c holds column c's four codes, the unsigned operand of vpdpbusd / vpmaddubsw against four
// bytes of quantized A broadcast (4-bit codes times int8 never saturate vpmaddubsw's int16 pairs).
// After the codes: each block's weight scales (float) and zero points (int32), `width` of each.
// At run time A is quantized row by row into DYNAMIC scratch, then each thread walks its panels,
// every row of A against one panel while its codes stay in L1.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/cpu/kernels/cpu_functions.h"
#include "ops/activation.h"

namespace osprey {

class ThreadPool;

struct Int4Panel {
  const uint8_t* q = nullptr;  // groups of 8 k, 4 * width bytes each
  const float* scale = nullptr;  // [kBlocks][width]
  const int32_t* zero = nullptr;  // [kBlocks][width]
};

// Quantized A: row r's codes at q + r * stride (zero past K), its block b's scale and code sum at
// scale[r * kBlocks + b], sum[r * kBlocks + b].
struct Int8Rows {
  const int8_t* q = nullptr;
  int64_t stride = 0, kBlocks = 0;
  const float* scale = nullptr;
  const int32_t* sum = nullptr;
};

// c[r * ldc + j] for r < rows (1 to the kernel's mr), j < width: rows [0, rows) of `a` times the
// panel (ops/matmul_nbits.h's sum, without bias).
using Int4GemmKernel = void (*)(const Int4Panel& panel, int64_t blockSize, const Int8Rows& a, int64_t rows, float* c,
                                int64_t ldc);
// Quantizes one row a[0, K) into q[0, kBlocks * blockSize) (zero past K), scale[kBlocks], sum[kBlocks].
using Int8RowQuantizer = void (*)(const float* a, int64_t K, int64_t blockSize, int8_t* q, float* scale, int32_t* sum);

struct Int4Kernels {
  const char* isa = "scalar";
  int64_t width = 8, mr = 4;
  Int4GemmKernel gemm = nullptr;
  Int8RowQuantizer quantize = nullptr;
};

// VNNI where the table is AVX-512 and the CPU has it, AVX2 where the table is AVX2 or AVX-512
// (so the ISA limit holds), else the portable kernels.
const Int4Kernels& int4Kernels();
Int4Kernels int4ScalarKernels(int64_t width);

struct Int4Weights {
  int64_t K = 0, N = 0, blockSize = 0, kBlocks = 0, width = 8;
  const uint8_t* data = nullptr;  // int4PackedBytes of them, 64-byte aligned
  Int4Panel panel(int64_t p) const;
};
size_t int4PackedBytes(const Int4Weights& w);
// MatMulNBits' B, scales and zero points (null: 8) into the panels at dst.
void int4Pack(const Int4Weights& w, const uint8_t* b, const float* scales, const uint8_t* zeros, uint8_t* dst);
// Bytes of scratch int4MatMul needs for M rows (quantized A with its scales and sums).
size_t int4ScratchBytes(const Int4Weights& w, int64_t M);
// y [M x N] = act(a [M x K] x W + bias (null: none)); fn supplies the epilogue.
void int4MatMul(ThreadPool* pool, const CpuFunctions& fn, const Int4Kernels& kernels, const Int4Weights& w, int64_t M,
                const float* a, const float* bias, float* y, const FusedActivation& act, uint8_t* scratch);

#if defined(__x86_64__) || defined(_M_X64)
void int4_gemm_4x8__avx2(const Int4Panel& panel, int64_t blockSize, const Int8Rows& a, int64_t rows, float* c,
                         int64_t ldc);
void int8_quantize_rows__avx2(const float* a, int64_t K, int64_t blockSize, int8_t* q, float* scale, int32_t* sum);
void int4_gemm_8x16__vnni_avx512(const Int4Panel& panel, int64_t blockSize, const Int8Rows& a, int64_t rows, float* c,
                                 int64_t ldc);
void int8_quantize_rows__vnni_avx512(const float* a, int64_t K, int64_t blockSize, int8_t* q, float* scale,
                                     int32_t* sum);
#endif

}  // namespace osprey
