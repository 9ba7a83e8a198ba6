// The integer GEMM's packing, tiling and scalar reference kernel (qgemm.h).
#include "backends/cpu/kernels/qgemm.h"

#include <algorithm>
#include <cstring>

#include "core/thread_pool.h"

namespace osprey {

namespace {

int64_t roundUp(int64_t v, int64_t step) { return (v + step - 1) / step * step; }

int64_t kStep(const QGemmFunctions& f) { return f.format == QGemmFormat::Quads ? 4 : 2; }

}  // namespace

int64_t qgemmPaddedK(const QGemmFunctions& f, int64_t K) { return roundUp(std::max<int64_t>(K, 1), kStep(f)); }
int64_t qgemmPaddedN(const QGemmFunctions& f, int64_t N) { return roundUp(std::max<int64_t>(N, 1), f.nr); }

size_t qgemmPackedBBytes(const QGemmFunctions& f, int64_t K, int64_t N) {
  const size_t elementBytes = f.format == QGemmFormat::Quads ? 1 : 2;
  return static_cast<size_t>(qgemmPaddedK(f, K) * qgemmPaddedN(f, N)) * elementBytes;
}

size_t qgemmPackedARowBytes(const QGemmFunctions& f, int64_t K) {
  return static_cast<size_t>(qgemmPaddedK(f, K)) * (f.format == QGemmFormat::Quads ? 1 : 2);
}

// Panel p, k-group starting at k0, column j, slot s: (p * kp + k0) * nr + j * step + s elements.
void qgemmPackB(const QGemmFunctions& f, const uint8_t* b, int64_t rowStride, int64_t colStride, int64_t K, int64_t N,
                const QGemmOperandBytes& bytes, void* dst) {
  const int64_t kp = qgemmPaddedK(f, K), np = qgemmPaddedN(f, N), nr = f.nr, step = kStep(f);
  const uint8_t flip = bytes.flip ? 0x80 : 0;
  const bool quads = f.format == QGemmFormat::Quads;
  for (int64_t p = 0; p < np / nr; ++p)
    for (int64_t k0 = 0; k0 < kp; k0 += step)
      for (int64_t j = 0; j < nr; ++j) {
        const int64_t n = p * nr + j;
        for (int64_t s = 0; s < step; ++s) {
          const int64_t k = k0 + s, at = (p * kp + k0) * nr + j * step + s;
          const bool inside = k < K && n < N;
          const uint8_t v = inside ? static_cast<uint8_t>(b[k * rowStride + n * colStride] ^ flip) : 0;
          if (quads)
            static_cast<uint8_t*>(dst)[at] = v;
          else
            static_cast<int16_t*>(dst)[at] = static_cast<int16_t>(inside ? bytesValue(v, bytes) - bytes.zeroPoint(n) : 0);
        }
      }
}

void qgemmPackBRows(const QGemmFunctions& f, const uint8_t* b, int64_t rowStride, int64_t K, int64_t N,
                    const QGemmOperandBytes& bytes, void* dst) {
  if (f.packPanels && bytes.zeroPointStride == 0)  // the fast packers subtract one zero point
    f.packPanels(b, rowStride, K, N, bytes, dst);
  else
    qgemmPackB(f, b, rowStride, 1, K, N, bytes, dst);
}

void qgemmColumnSums(const QGemmFunctions& f, const uint8_t* b, int64_t rowStride, int64_t colStride, int64_t K,
                     int64_t N, const QGemmOperandBytes& bytes, int32_t* sums) {
  const uint8_t mask = bytes.flip ? 0x80 : 0;
  std::fill(sums, sums + qgemmPaddedN(f, N), 0);
  if (colStride == 1 && bytes.isSigned) {  // contiguous rows (activations packed at each run): a loop that vectorizes
    for (int64_t k = 0; k < K; ++k) {
      const uint8_t* row = b + k * rowStride;
      for (int64_t n = 0; n < N; ++n) sums[n] += static_cast<int8_t>(static_cast<uint8_t>(row[n] ^ mask));
    }
    return;
  }
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) sums[n] += bytesValue(static_cast<uint8_t>(b[k * rowStride + n * colStride] ^ mask), bytes);
}

void qgemmPackA(const QGemmFunctions& f, const uint8_t* a, int64_t lda, int64_t M, int64_t K,
                const QGemmOperandBytes& bytes, void* dst, int32_t* rowSums) {
  const int64_t kp = qgemmPaddedK(f, K);
  const uint8_t flip = bytes.flip ? 0x80 : 0;
  for (int64_t m = 0; m < M; ++m) {
    const uint8_t* src = a + m * lda;
    if (f.format == QGemmFormat::Quads) {
      // Plain loops the compiler vectorizes (this runs on every activation row of every run).
      uint8_t* row = static_cast<uint8_t*>(dst) + m * kp;
      for (int64_t k = 0; k < K; ++k) row[k] = src[k] ^ flip;
      std::memset(row + K, 0, static_cast<size_t>(kp - K));
      if (!rowSums) continue;
      int32_t sum = 0;
      if (bytes.isSigned)
        for (int64_t k = 0; k < K; ++k) sum += static_cast<int8_t>(row[k]);
      else
        for (int64_t k = 0; k < K; ++k) sum += row[k];
      rowSums[m] = sum;
    } else {
      int16_t* row = static_cast<int16_t*>(dst) + m * kp;
      const int32_t zp = bytes.zeroPoint(m);
      for (int64_t k = 0; k < K; ++k) row[k] = static_cast<int16_t>(bytesValue(src[k] ^ flip, bytes) - zp);
      for (int64_t k = K; k < kp; ++k) row[k] = 0;
    }
  }
}

void qgemmZeroPointOffsets(const QGemmFunctions& f, int64_t K, int64_t valid, int64_t count, const int32_t* bias,
                           int32_t otherZeroPoint, const int32_t* sums, const int32_t* zeroPoints, int32_t* out) {
  for (int64_t i = 0; i < count; ++i) {
    int32_t v = bias && i < valid ? bias[i] : 0;
    if (f.format == QGemmFormat::Quads && i < valid)
      v += otherZeroPoint * (static_cast<int32_t>(K) * zeroPoints[i] - sums[i]);
    out[i] = v;
  }
}

bool qgemmNeedsSums(const QGemmFunctions& f, const int32_t* zeroPoints, int64_t count) {
  if (f.format != QGemmFormat::Quads) return false;
  for (int64_t i = 0; i < count; ++i)
    if (zeroPoints[i] != 0) return true;
  return false;
}

void qgemm(ThreadPool* pool, const QGemmFunctions& f, int64_t M, int64_t N, int64_t K, const void* aPacked,
           const void* bPacked, const QGemmOutputStage& stage, void* y, int64_t ldy) {
  const int64_t kp = qgemmPaddedK(f, K), panels = qgemmPaddedN(f, N) / f.nr;
  const int64_t rowBytes = static_cast<int64_t>(qgemmPackedARowBytes(f, K));
  const int64_t panelBytes = static_cast<int64_t>(qgemmPackedBBytes(f, K, f.nr));
  // Tiles of a few row blocks by one panel: each keeps its panel in cache while it walks rows.
  const int64_t rowBlocks = (M + f.mr - 1) / f.mr;
  const int64_t blocksPerTile = std::max<int64_t>(1, std::min<int64_t>(rowBlocks, 16));
  const int64_t rowTiles = (rowBlocks + blocksPerTile - 1) / blocksPerTile;
  parallelFor(pool, rowTiles * panels, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t p = t % panels, rt = t / panels;
      const int64_t n0 = p * f.nr, columns = std::min(f.nr, N - n0);
      const uint8_t* panel = static_cast<const uint8_t*>(bPacked) + p * panelBytes;
      const int64_t mEnd = std::min(M, (rt + 1) * blocksPerTile * f.mr);
      for (int64_t m0 = rt * blocksPerTile * f.mr; m0 < mEnd; m0 += f.mr)
        f.kernel(std::min(f.mr, M - m0), kp, static_cast<const uint8_t*>(aPacked) + m0 * rowBytes, rowBytes, panel,
                 columns, stage, m0, n0, y, ldy);
    }
  }, kFineRangesPerThread);
}

void qgemm_quads_4x16__scalar(int64_t rows, int64_t kPadded, const void* a, int64_t aRowBytes, const void* bPanel,
                              int64_t columns, const QGemmOutputStage& stage, int64_t m0, int64_t n0, void* y,
                              int64_t ldy) {
  constexpr int64_t kNr = 16;
  const uint8_t* b = static_cast<const uint8_t*>(bPanel);
  // The uint8 operand's bytes as they are, the int8 one's as signed.
  QGemmOperandBytes unsignedBytes, signedBytes;
  signedBytes.isSigned = true;
  const QGemmOperandBytes& aBytes = stage.unsignedA ? unsignedBytes : signedBytes;
  const QGemmOperandBytes& bBytes = stage.unsignedA ? signedBytes : unsignedBytes;
  for (int64_t i = 0; i < rows; ++i) {
    const uint8_t* ar = static_cast<const uint8_t*>(a) + i * aRowBytes;
    int32_t acc[kNr] = {};
    for (int64_t k0 = 0; k0 < kPadded; k0 += 4)
      for (int64_t j = 0; j < kNr; ++j)
        for (int64_t s = 0; s < 4; ++s)
          acc[j] += bytesValue(ar[k0 + s], aBytes) * bytesValue(b[k0 * kNr + j * 4 + s], bBytes);
    const int64_t m = m0 + i;
    for (int64_t j = 0; j < columns; ++j)
      qgemmStore(acc[j], stage, m, n0 + j, y, ldy);
  }
}

void qgemm_bytes_to_floats__scalar(const uint8_t* x, int64_t n, bool isSigned, int32_t zeroPoint, float* out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<float>((isSigned ? static_cast<int32_t>(static_cast<int8_t>(x[i])) : x[i]) - zeroPoint);
}

void qgemm_requantize_floats__scalar(const float* sums, int64_t n, int32_t bias, float scale,
                                     const QGemmOutputStage& stage, uint8_t* y) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = static_cast<uint8_t>(
        qgemmRequantize(static_cast<float>(static_cast<int32_t>(sums[i]) + bias) * scale, stage));
}

}  // namespace osprey
