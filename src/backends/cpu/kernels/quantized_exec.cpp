// The quantized executions' shared pieces (quantized_exec.h).
#include "backends/cpu/kernels/quantized_exec.h"

#include <algorithm>

#include "backends/cpu/kernels/cpu_functions.h"
#include "core/thread_pool.h"

namespace osprey {

int32_t byteAt(const RuntimeTensor* t, int64_t i) {
  if (!t || !t->host()) return 0;
  return t->dtype == DataType::Int8 ? static_cast<int32_t>(reinterpret_cast<const int8_t*>(t->host())[i])
                                    : static_cast<int32_t>(t->host()[i]);
}

QGemmOperandBytes QuantizedWeights::prepare(const uint8_t* w, DataType dtype, int64_t kStride, int64_t nStride,
                                             int64_t K, int64_t N, const RuntimeTensor* zeroPoints) {
  const QGemmFunctions& f = cpuFunctions().qgemm;
  const int64_t count = qgemmPaddedN(f, N);  // what qgemmColumnSums writes, and the kernels read of a column array
  zeroPoints_.assign(static_cast<size_t>(count), 0);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t at = zeroPoints && zeroPoints->elements() > 1 ? n : 0;
    zeroPoints_[n] = weightZeroPoint(dtype, zeroPoints ? byteAt(zeroPoints, at) : 0);
  }
  needsActivationSums_ = qgemmNeedsSums(f, zeroPoints_.data(), N);
  QGemmOperandBytes bytes;
  bytes.isSigned = true;
  bytes.flip = dtype == DataType::UInt8;
  bytes.zeroPoints = zeroPoints_.data();
  bytes.zeroPointStride = 1;
  sums_.assign(static_cast<size_t>(count), 0);
  qgemmColumnSums(f, w, kStride, nStride, K, N, bytes, sums_.data());
  return bytes;
}

size_t QuantizedWeights::packedBytes(bool asRows, int64_t K, int64_t N) {
  const QGemmFunctions& f = cpuFunctions().qgemm;
  return asRows ? qgemmPackedARowBytes(f, K) * static_cast<size_t>(N) : qgemmPackedBBytes(f, K, N);
}

void QuantizedWeights::fill(bool asRows, const uint8_t* w, const QGemmOperandBytes& bytes, int64_t kStride,
                            int64_t nStride, int64_t K, int64_t N, void* dst) const {
  const QGemmFunctions& f = cpuFunctions().qgemm;
  // Rows of contiguous columns with one zero point (an activation's, per tensor): the table's
  // fast packer, which subtracts a single zero point.
  bool oneZeroPoint = nStride == 1;
  for (int64_t n = 1; n < N && oneZeroPoint; ++n) oneZeroPoint = bytes.zeroPoint(n) == bytes.zeroPoint(0);
  if (!asRows && oneZeroPoint) {
    QGemmOperandBytes single = bytes;
    single.zeroPointStride = 0;
    qgemmPackBRows(f, w, kStride, K, N, single, dst);
  } else if (!asRows)
    qgemmPackB(f, w, kStride, nStride, K, N, bytes, dst);
  else  // rows have their k contiguous (kStride 1)
    qgemmPackA(f, w, nStride, N, K, bytes, dst, nullptr);
}

Status QuantizedWeights::pack(Backend* backend, const std::string& opName, bool asRows, const uint8_t* w,
                              DataType dtype, const void* source, const char* layout, int64_t kStride, int64_t nStride,
                              int64_t K, int64_t N, const RuntimeTensor* zeroPoints) {
  const QGemmFunctions& f = cpuFunctions().qgemm;
  if (asRows && kStride != 1) return Status::internal("weights packed as rows must have their k contiguous");
  const QGemmOperandBytes bytes = prepare(w, dtype, kStride, nStride, K, N, zeroPoints);
  const std::string kind = std::string(f.format == QGemmFormat::Quads ? "qgemm-quads-" : "qgemm-pairs16-") +
                           (asRows ? "rows-" : "panels-") + layout;
  bool fresh = false;
  OSPREY_RETURN_IF_ERROR(acquirePackedWeights(
      backend, static_cast<int64_t>((packedBytes(asRows, K, N) + 3) / 4), opName,
      packKey(source, zeroPoints ? zeroPoints->host() : nullptr, kind.c_str(), {kStride, nStride, K, N, f.nr}),
      &tensor_, &mem_, &fresh));
  data_ = tensor_.host();
  if (fresh) fill(asRows, w, bytes, kStride, nStride, K, N, tensor_.host());
  return Status::ok();
}

void QuantizedWeights::packInto(bool asRows, const uint8_t* w, DataType dtype, int64_t kStride, int64_t nStride,
                                int64_t K, int64_t N, const RuntimeTensor* zeroPoints, void* dst) {
  const QGemmOperandBytes bytes = prepare(w, dtype, kStride, nStride, K, N, zeroPoints);
  fill(asRows, w, bytes, kStride, nStride, K, N, dst);
  data_ = dst;
}

void rangeWithZero(ThreadPool* pool, const float* x, int64_t n, float* lo, float* hi) {
  constexpr int kRanges = 64;
  constexpr int64_t kMinPerRange = 16384;
  float los[kRanges] = {}, his[kRanges] = {};
  const int ranges = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(kRanges, n / kMinPerRange)));
  parallelFor(pool, ranges, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float mn = 0.f, mx = 0.f;  // a NaN compares false and leaves them as they are
      for (int64_t i = r * n / ranges; i < (r + 1) * n / ranges; ++i) {
        mn = x[i] < mn ? x[i] : mn;
        mx = x[i] > mx ? x[i] : mx;
      }
      los[r] = mn, his[r] = mx;
    }
  });
  *lo = 0.f, *hi = 0.f;
  for (int r = 0; r < ranges; ++r) *lo = std::min(*lo, los[r]), *hi = std::max(*hi, his[r]);
}

Status acquireByteScratch(Backend* backend, int64_t bytes, const char* what, const std::string& opName,
                          RuntimeTensor* scratch, std::unique_ptr<MemObj>* memory) {
  scratch->dtype = DataType::UInt8;
  scratch->shape = {std::max<int64_t>(bytes, 1)};
  *memory = backend->onAcquire(scratch, StorageType::DYNAMIC);
  if (!*memory) return Status::outOfMemory(std::string("cannot allocate ") + what + " for '" + opName + "'");
  return Status::ok();
}

}  // namespace osprey
