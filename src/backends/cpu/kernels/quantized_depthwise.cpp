// Depthwise QLinearConv on channels in lanes (quantized_depthwise.h): interleaving, the portable
// kernel, and the choice of kernel and path.
#include "backends/cpu/kernels/quantized_depthwise.h"

#include <algorithm>
#include <cstring>

#include "core/thread_pool.h"

namespace osprey {

namespace {
#include "backends/cpu/kernels/quantized_depthwise_lanes.inl"

constexpr int64_t L = kQDepthwiseLanes;

// Planes [c][p] of n <= 16 channels into lanes [p][16] as floats (x - zx), zero past n.
void interleave(const uint8_t* x, int64_t positions, int64_t n, bool signedX, int32_t xZero, float* lanes) {
  if (n < L) std::fill(lanes, lanes + positions * L, 0.f);
  for (int64_t c = 0; c < n; ++c) {
    const uint8_t* plane = x + c * positions;
    if (signedX)
      for (int64_t p = 0; p < positions; ++p)
        lanes[p * L + c] = static_cast<float>(static_cast<int8_t>(plane[p]) - xZero);
    else
      for (int64_t p = 0; p < positions; ++p) lanes[p * L + c] = static_cast<float>(plane[p] - xZero);
  }
}

void deinterleave(const uint8_t* lanes, int64_t positions, int64_t n, uint8_t* y) {
  for (int64_t c = 0; c < n; ++c) {
    uint8_t* plane = y + c * positions;
    for (int64_t p = 0; p < positions; ++p) plane[p] = lanes[p * L + c];
  }
}

}  // namespace

void qdwconv_lanes16__scalar(const QDepthwiseLanesArgs& args, const float* x, const float* w, const int32_t* bias,
                             const float* scale, const QGemmOutputStage& stage, uint8_t* y) {
  depthwiseLanesPortable(args, x, w, bias, scale, stage, y);
}

QDepthwiseLanesKernel qdepthwiseLanesKernel(const char* isa) {
#if defined(__x86_64__) || defined(_M_X64)
  if (std::strcmp(isa, "avx512f") == 0) return qdwconv_lanes16__avx512f;
  if (std::strcmp(isa, "avx2_fma") == 0) return qdwconv_lanes16__avx2;
#endif
  return qdwconv_lanes16__scalar;
}

bool preferDepthwiseLanes(int64_t inPositions, int64_t outPositions, int64_t channels) {
  return channels >= 8 && inPositions <= 256 && outPositions <= 64;
}

void packDepthwiseLanesTaps(const float* taps, int64_t channels, int64_t tapCount, float* dst) {
  const int64_t blocks = (channels + L - 1) / L;
  std::fill(dst, dst + blocks * tapCount * L, 0.f);
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t t = 0; t < tapCount; ++t) dst[((c / L) * tapCount + t) * L + c % L] = taps[c * tapCount + t];
}

int64_t depthwiseLanesScratchBytes(const QDepthwiseLanesArgs& args) {
  const int64_t floats = args.inH * args.inW * L * static_cast<int64_t>(sizeof(float));
  return (floats + args.outH * args.outW * L + 63) / 64 * 64;
}

void runDepthwiseLanes(ThreadPool* pool, int64_t threads, QDepthwiseLanesKernel kernel, const QDepthwiseLanesArgs& args,
                       const uint8_t* x, bool signedX, int32_t xZero, int64_t images, int64_t channels,
                       const float* lanesTaps, const int32_t* bias, const float* scale, const QGemmOutputStage& stage,
                       uint8_t* y, uint8_t* scratch) {
  const int64_t inSize = args.inH * args.inW, outSize = args.outH * args.outW, taps = args.kernelH * args.kernelW;
  const int64_t blocksPerImage = (channels + L - 1) / L, blocks = images * blocksPerImage;
  const int64_t perThread = (blocks + threads - 1) / threads, slotBytes = depthwiseLanesScratchBytes(args);
  parallelFor(pool, threads, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* xLanes = reinterpret_cast<float*>(scratch + t * slotBytes);
      uint8_t* yLanes = reinterpret_cast<uint8_t*>(xLanes + inSize * L);
      for (int64_t b = t * perThread; b < std::min(blocks, (t + 1) * perThread); ++b) {
        const int64_t image = b / blocksPerImage, c0 = (b % blocksPerImage) * L, n = std::min(L, channels - c0);
        const int64_t plane = image * channels + c0;
        interleave(x + plane * inSize, inSize, n, signedX, xZero, xLanes);
        kernel(args, xLanes, lanesTaps + (c0 / L) * taps * L, bias + c0, scale + c0, stage, yLanes);
        deinterleave(yLanes, outSize, n, y + plane * outSize);
      }
    }
  });
}

}  // namespace osprey
