// Integer Winograd F(2x2, 3x3) for channels-last QLinearConv (3x3, stride 1, no dilation, one
// group) on the AVX2 table, whose integer GEMM (Pairs16, `vpmaddwd`) multiplies int16 pairs:
// 16 products per 2x2 outputs instead of 36.
//
// With G' = 2G = [[2,0,0],[1,1,1],[1,-1,1],[0,0,2]] the weight transform U = G' g G'^T is
// integral and 4 times the textbook one, so A^T [sum over c of U_c * V_c] A = 4 Y exactly, where
// V = B^T d B is the input transform of the 4x4 window d (activations less their zero point).
// Every step is a ring operation, so int32 arithmetic that wraps gives 4Y modulo 2^32: exact
// wherever |4Y| < 2^31, which qwinogradExact checks from the weights for any activations. The
// operands fit int16: |d| <= 255, |V| <= 4 * 255, |U| <= 9 * 255. So outputs equal the direct
// GEMM's bit for bit (the same int32 sums, the same output stage).
#pragma once
#include <cstddef>
#include <cstdint>

#include "backends/cpu/kernels/qgemm.h"

namespace osprey {

class ThreadPool;

struct QWinogradShape {
  int64_t H = 0, W = 0, C = 0, O = 0;  // input map, input and output channels
  int64_t outH = 0, outW = 0, padTop = 0, padLeft = 0;
};

// Bytes of the transformed weights: for each of the 16 transform positions a Pairs16 B operand
// of C rows and O columns (panels of 16 columns).
size_t qwinogradPackedBytes(int64_t C, int64_t O);

// w [O][C][3][3] bytes (int8 when wSigned, else uint8), wZero one zero point (zeroCount 1) or one
// per output channel. Whether 4 * |sum over c and taps of d * (w - wZero)| < 2^31 for every
// output channel and every d with |d| <= 255.
bool qwinogradExact(const uint8_t* w, bool wSigned, const int32_t* wZero, int64_t zeroCount, int64_t O, int64_t C);

// The transformed weights into dst (qwinogradPackedBytes).
void qwinogradPackWeights(const uint8_t* w, bool wSigned, const int32_t* wZero, int64_t zeroCount, int64_t O,
                          int64_t C, int16_t* dst);

// Tiles (2x2 outputs) taken at once: their transformed inputs (16 rows of C rounded up to 16
// int16 each) and products (16 rows of O rounded up to 16 int32) stay in L2.
int64_t qwinogradBlockTiles(const QWinogradShape& s);
// Scratch for one thread: those rows for one block of tiles.
size_t qwinogradScratchBytes(const QWinogradShape& s);

#if defined(__x86_64__) || defined(_M_X64)
// One image: x [H][W][C] bytes, each XOR flip (0x80 turns int8 activations into the GEMM's
// uint8), less za (the zero point after the flip); padding reads as za. y [outH][outW][O] bytes
// through `stage` (qgemm.h: columnOffset the bias, a scale per column, byte output). scratch
// holds `threads` * qwinogradScratchBytes; the work is split over `threads` of the pool.
void qwinogradConv__avx2(ThreadPool* pool, int threads, const QWinogradShape& s, const uint8_t* x, uint8_t flip,
                         int32_t za, const int16_t* weights, const QGemmOutputStage& stage, uint8_t* y,
                         uint8_t* scratch);
#endif

}  // namespace osprey
