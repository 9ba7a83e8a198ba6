// The integer GEMM behind the CPU's quantized executions (QLinearConv, QLinearMatMul, QGemm,
// MatMulIntegerToFloat, DynamicQuantizeMatMul):
//   C[m][n] = sum over k < K of (a[m][k] - za[m]) * (b[k][n] - zb[n])   exactly, in int32,
// then an output stage that scales each row or column and either requantises to bytes or
// writes floats. One operand holds the activations as uint8, the other the weights as int8: for
// a MatMul A is the activations (rows are positions), for a convolution A is the weights (rows
// are output channels, so C's rows are NCHW planes). A uint8 weight or an int8 activation is
// moved into its operand's type by flipping the top bit and shifting the zero point by 128,
// which leaves every difference from the zero point as it was; so one kernel serves all four
// type pairs.
//
// Each table picks its operand format: Quads (AVX-512 VNNI `vpdpbusd` and the scalar reference)
// multiplies the raw bytes, four k at a time, and corrects for the zero points in the output
// stage; Pairs16 (AVX2) widens both operands to int16 with the zero points already subtracted
// and multiplies pairs with `vpmaddwd`, which cannot overflow (the u8 x s8 `vpmaddubsw` can: it
// saturates its int16 pair sums, 255 * (|b0| + |b1|) > 32767 for real weights).
#pragma once
#include <cstddef>
#include <cstdint>

namespace osprey {

class ThreadPool;

enum class QGemmFormat { Quads, Pairs16 };

// What happens to the int32 result v of element (m, n); arrays are indexed by the global m and
// n, column arrays hold at least N rounded up to the table's nr, and every array may be null
// (its term is then left out):
//   v += rowOffset[m] + columnOffset[n] - rowZeroPoints[m] * columnSums[n]
//        - columnZeroPoints[n] * rowSums[m]                (the last two: Quads zero points)
//   int32 output: y = v
//   f  = float(v) * (scalePerRow ? scale[m] : scale[n])
//   float output: y = f + floatBias[n]
//   byte output:  y = round_half_even(clamp(f, lo - zeroPoint, hi - zeroPoint)) + zeroPoint,
//                 stored as int8 when signedOutput, else uint8 (lo/hi within the type)
// This is ONNX Runtime's requantisation (MlasRequantizeOutput), so outputs match its kernels.
struct QGemmOutputStage {
  const int32_t* rowOffset = nullptr;
  const int32_t* columnOffset = nullptr;
  const int32_t* rowZeroPoints = nullptr;
  const int32_t* columnSums = nullptr;
  const int32_t* columnZeroPoints = nullptr;
  const int32_t* rowSums = nullptr;
  const float* scale = nullptr;
  bool scalePerRow = false;
  const float* floatBias = nullptr;
  bool floatOutput = false;
  bool int32Output = false;  // v itself (MatMulInteger, ConvInteger): no scale, no requantisation
  bool signedOutput = false;
  int32_t zeroPoint = 0, lo = 0, hi = 255;
  bool unsignedA = true;  // A holds the uint8 operand (else B does)
};

// How an operand's bytes reach its GEMM type (isSigned: int8, the weights; else uint8, the
// activations): flip the top bit (an int8 activation into uint8, a uint8 weight into int8), and
// for Pairs16 subtract the zero point of each row of A / column of B (zeroPoints[i *
// zeroPointStride], already in the GEMM type's range; stride 0: one for all).
struct QGemmOperandBytes {
  bool isSigned = false;
  bool flip = false;
  const int32_t* zeroPoints = nullptr;
  int64_t zeroPointStride = 0;
  int32_t zeroPoint(int64_t i) const { return zeroPoints ? zeroPoints[i * zeroPointStride] : 0; }
};

// A byte already in the operand's GEMM type, as a number.
inline int32_t bytesValue(uint8_t v, const QGemmOperandBytes& bytes) {
  return bytes.isSigned ? static_cast<int32_t>(static_cast<int8_t>(v)) : static_cast<int32_t>(v);
}

// The byte output stage for one value f = float(v) * scale (the scalar kernels' form of it).
inline int32_t qgemmRequantize(float f, const QGemmOutputStage& s) {
  const float lo = static_cast<float>(s.lo - s.zeroPoint), hi = static_cast<float>(s.hi - s.zeroPoint);
  f = f > lo ? f : lo;  // _mm_max_ps: lo for NaN
  f = f < hi ? f : hi;
  // Round half to even as cvtps does: adding and taking away 1.5 * 2^23 leaves no fraction bits,
  // exact for |f| < 2^22 (f is inside [lo - zeroPoint, hi - zeroPoint] here); no libm call.
  const float shifted = f + 12582912.0f;  // IEEE float math: the compiler keeps both steps
  return static_cast<int32_t>(shifted - 12582912.0f) + s.zeroPoint;
}

// The whole output stage for element (m, n) with int32 sum v (the scalar kernels' form of it).
inline void qgemmStore(int32_t v, const QGemmOutputStage& s, int64_t m, int64_t n, void* y, int64_t ldy) {
  if (s.rowOffset) v += s.rowOffset[m];
  if (s.columnOffset) v += s.columnOffset[n];
  if (s.rowZeroPoints && s.columnSums) v -= s.rowZeroPoints[m] * s.columnSums[n];
  if (s.columnZeroPoints && s.rowSums) v -= s.columnZeroPoints[n] * s.rowSums[m];
  if (s.int32Output) {
    static_cast<int32_t*>(y)[m * ldy + n] = v;
    return;
  }
  const float f = static_cast<float>(v) * s.scale[s.scalePerRow ? m : n];
  if (s.floatOutput) {
    static_cast<float*>(y)[m * ldy + n] = s.floatBias ? f + s.floatBias[n] : f;
    return;
  }
  const int32_t q = qgemmRequantize(f, s);
  if (s.signedOutput)
    static_cast<int8_t*>(y)[m * ldy + n] = static_cast<int8_t>(q);
  else
    static_cast<uint8_t*>(y)[m * ldy + n] = static_cast<uint8_t>(q);
}

// Rows [m0, m0 + rows) (rows <= mr) against one packed panel of B, columns [n0, n0 + columns)
// (columns <= nr). `a` is the first row of the packed A (a[0] is row m0), rows `aRowBytes`
// apart; y is element (0, 0) of the whole output, row stride ldy elements.
using QGemmMicroKernel = void (*)(int64_t rows, int64_t kPadded, const void* a, int64_t aRowBytes,
                                  const void* bPanel, int64_t columns, const QGemmOutputStage& stage, int64_t m0,
                                  int64_t n0, void* y, int64_t ldy);

// B's rows contiguous (element (k, n) at b[k * rowStride + n]) into panels; the fast form of
// qgemmPackBRows, null where the table has none.
using QGemmPackPanels = void (*)(const uint8_t* b, int64_t rowStride, int64_t K, int64_t N,
                                 const QGemmOperandBytes& bytes, void* dst);

// out[i] = float(x[i] - zeroPoint) for n bytes x of type int8 (isSigned) or uint8.
using QBytesToFloats = void (*)(const uint8_t* x, int64_t n, bool isSigned, int32_t zeroPoint, float* out);
// y[i] = the byte output stage of int32(sums[i]) + bias times scale (sums hold whole numbers).
using QRequantizeFloats = void (*)(const float* sums, int64_t n, int32_t bias, float scale,
                                   const QGemmOutputStage& stage, uint8_t* y);

struct QGemmFunctions {
  QGemmFormat format = QGemmFormat::Quads;
  int64_t mr = 4, nr = 16;
  QGemmMicroKernel kernel = nullptr;
  QGemmPackPanels packPanels = nullptr;
  QBytesToFloats bytesToFloats = nullptr;
  QRequantizeFloats requantizeFloats = nullptr;
};

// K rounded up to what the format multiplies at once (4 for Quads, 2 for Pairs16).
int64_t qgemmPaddedK(const QGemmFunctions& f, int64_t K);
int64_t qgemmPaddedN(const QGemmFunctions& f, int64_t N);
size_t qgemmPackedBBytes(const QGemmFunctions& f, int64_t K, int64_t N);
size_t qgemmPackedARowBytes(const QGemmFunctions& f, int64_t K);

// B's element (k, n) at b[k * rowStride + n * colStride] into the table's panels (dst holds
// qgemmPackedBBytes); zero past K and N. Any strides, at the speed of a scalar loop: for weights.
void qgemmPackB(const QGemmFunctions& f, const uint8_t* b, int64_t rowStride, int64_t colStride, int64_t K, int64_t N,
                const QGemmOperandBytes& bytes, void* dst);
// The same for B's rows contiguous (element (k, n) at b[k * rowStride + n]), as activations are
// packed at every run: the table's packPanels where it has one.
void qgemmPackBRows(const QGemmFunctions& f, const uint8_t* b, int64_t rowStride, int64_t K, int64_t N,
                    const QGemmOperandBytes& bytes, void* dst);
// sums[n] = sum over k of B's values in its GEMM type (after the flip), for the Quads output
// stage (qgemmPaddedN values, zero past N).
void qgemmColumnSums(const QGemmFunctions& f, const uint8_t* b, int64_t rowStride, int64_t colStride, int64_t K,
                     int64_t N, const QGemmOperandBytes& bytes, int32_t* sums);

// M rows of A (row m at a + m * lda, K bytes) into the kernel's rows (qgemmPackedARowBytes each).
// rowSums, when not null, gets each row's sum in its GEMM type.
void qgemmPackA(const QGemmFunctions& f, const uint8_t* a, int64_t lda, int64_t M, int64_t K,
                const QGemmOperandBytes& bytes, void* dst, int32_t* rowSums);

// The zero-point offsets of one operand's rows or columns for the Quads format, plus a bias:
// out[i] = bias[i] + otherZeroPoint * (K * zeroPoints[i] - sums[i]) where `sums` and
// `zeroPoints` are this operand's, `otherZeroPoint` the other operand's (one value). Pairs16
// operands carry their zero points, so there out[i] = bias[i]. bias may be null; `count` values
// are written, zero past `valid`.
void qgemmZeroPointOffsets(const QGemmFunctions& f, int64_t K, int64_t valid, int64_t count, const int32_t* bias,
                           int32_t otherZeroPoint, const int32_t* sums, const int32_t* zeroPoints, int32_t* out);
// Whether the output stage needs the other operand's sums: Quads with any non-zero zero point
// among these `count`.
bool qgemmNeedsSums(const QGemmFunctions& f, const int32_t* zeroPoints, int64_t count);

// C for all M x N over the thread pool (tiles of mr x nr).
void qgemm(ThreadPool* pool, const QGemmFunctions& f, int64_t M, int64_t N, int64_t K, const void* aPacked,
           const void* bPacked, const QGemmOutputStage& stage, void* y, int64_t ldy);

// The kernels, one per format and ISA.
void qgemm_quads_4x16__scalar(int64_t rows, int64_t kPadded, const void* a, int64_t aRowBytes, const void* bPanel,
                              int64_t columns, const QGemmOutputStage& stage, int64_t m0, int64_t n0, void* y,
                              int64_t ldy);
void qgemm_bytes_to_floats__scalar(const uint8_t* x, int64_t n, bool isSigned, int32_t zeroPoint, float* out);
void qgemm_requantize_floats__scalar(const float* sums, int64_t n, int32_t bias, float scale,
                                     const QGemmOutputStage& stage, uint8_t* y);
#if defined(__x86_64__) || defined(_M_X64)
void qgemm_bytes_to_floats__avx2(const uint8_t* x, int64_t n, bool isSigned, int32_t zeroPoint, float* out);
void qgemm_requantize_floats__avx2(const float* sums, int64_t n, int32_t bias, float scale,
                                   const QGemmOutputStage& stage, uint8_t* y);
void qgemm_pairs16_5x16__avx2(int64_t rows, int64_t kPadded, const void* a, int64_t aRowBytes, const void* bPanel,
                              int64_t columns, const QGemmOutputStage& stage, int64_t m0, int64_t n0, void* y,
                              int64_t ldy);
void qgemm_pack_pairs16_16__avx2(const uint8_t* b, int64_t rowStride, int64_t K, int64_t N,
                                 const QGemmOperandBytes& bytes, void* dst);
void qgemm_quads_8x32__avx512vnni(int64_t rows, int64_t kPadded, const void* a, int64_t aRowBytes,
                                  const void* bPanel, int64_t columns, const QGemmOutputStage& stage, int64_t m0,
                                  int64_t n0, void* y, int64_t ldy);
void qgemm_pack_quads_32__avx512vnni(const uint8_t* b, int64_t rowStride, int64_t K, int64_t N,
                                     const QGemmOperandBytes& bytes, void* dst);
#endif

}  // namespace osprey
