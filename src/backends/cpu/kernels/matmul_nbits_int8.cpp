// MatMulNBits with int8 activations (matmul_nbits_int8.h has the design): the panel packing, the
// portable kernels and the driver. The vector kernels are in matmul_nbits_int8_avx2.cpp and
// matmul_nbits_int8_vnni_avx512.cpp.
#include "backends/cpu/kernels/matmul_nbits_int8.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "backends/cpu/kernels/cpu_kernels.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "core/thread_pool.h"
#include "ops/matmul_nbits.h"

namespace osprey {

namespace {

constexpr int64_t kMaxWidth = 16, kMaxRows = 8;

int64_t divUp(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Int4Layout {
  int64_t panels, kPadded, codes, panelBytes;
};

Int4Layout layoutOf(const Int4Weights& w) {
  Int4Layout l;
  l.panels = divUp(w.N, w.width);
  l.kPadded = w.kBlocks * w.blockSize;
  l.codes = l.kPadded * w.width / 2;
  l.panelBytes = (l.codes + w.kBlocks * w.width * 8 + 63) / 64 * 64;
  return l;
}

void quantizeScalar(const float* a, int64_t K, int64_t bs, int8_t* q, float* scale, int32_t* sum) {
  const int64_t kBlocks = divUp(K, bs);
  for (int64_t b = 0; b < kBlocks; ++b) {
    const int64_t k0 = b * bs, n = std::min(bs, K - k0);
    nbitsQuantizeBlock(a + k0, n, q + k0, scale + b, sum + b);
    std::fill(q + k0 + n, q + k0 + bs, int8_t{0});
  }
}

template <int Width>
void gemmScalar(const Int4Panel& p, int64_t bs, const Int8Rows& a, int64_t rows, float* c, int64_t ldc) {
  const int64_t groups = bs / 8;
  for (int64_t r = 0; r < rows; ++r) {
    float acc[Width] = {};
    const int8_t* ar = a.q + r * a.stride;
    for (int64_t b = 0; b < a.kBlocks; ++b) {
      int32_t dot[Width] = {};
      for (int64_t g = b * groups; g < (b + 1) * groups; ++g) {
        const uint8_t* bytes = p.q + g * 4 * Width;
        for (int64_t j = 0; j < Width; ++j)
          for (int64_t i = 0; i < 4; ++i) {
            const uint8_t byte = bytes[j * 4 + i];
            dot[j] += (byte & 15) * ar[g * 8 + i] + (byte >> 4) * ar[g * 8 + 4 + i];
          }
      }
      const float sa = a.scale[r * a.kBlocks + b];
      const int32_t sum = a.sum[r * a.kBlocks + b];
      for (int64_t j = 0; j < Width; ++j) {
        const int32_t exact = dot[j] - p.zero[b * Width + j] * sum;
        acc[j] = std::fma(static_cast<float>(exact) * p.scale[b * Width + j], sa, acc[j]);
      }
    }
    std::memcpy(c + r * ldc, acc, sizeof(acc));
  }
}

}  // namespace

Int4Kernels int4ScalarKernels(int64_t width) {
  Int4Kernels k;
  k.width = width;
  k.mr = 4;
  k.gemm = width == 16 ? gemmScalar<16> : gemmScalar<8>;
  k.quantize = quantizeScalar;
  return k;
}

const Int4Kernels& int4Kernels() {
  static const Int4Kernels kernels = [] {
    const std::string isa = cpuFunctions().isa;
#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (isa == "avx512f" && cpuSupportsAvx512Vnni())
      return Int4Kernels{"avx512_vnni", 16, 8, int4_gemm_8x16__vnni_avx512, int8_quantize_rows__vnni_avx512};
    if ((isa == "avx512f" || isa == "avx2_fma") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      return Int4Kernels{"avx2", 8, 4, int4_gemm_4x8__avx2, int8_quantize_rows__avx2};
#endif
    return int4ScalarKernels(8);
  }();
  return kernels;
}

Int4Panel Int4Weights::panel(int64_t p) const {
  const Int4Layout l = layoutOf(*this);
  Int4Panel panel;
  const uint8_t* base = data + p * l.panelBytes;
  panel.q = base;
  panel.scale = reinterpret_cast<const float*>(base + l.codes);
  panel.zero = reinterpret_cast<const int32_t*>(base + l.codes + kBlocks * width * 4);
  return panel;
}

size_t int4PackedBytes(const Int4Weights& w) {
  const Int4Layout l = layoutOf(w);
  return static_cast<size_t>(l.panels * l.panelBytes);
}

void int4Pack(const Int4Weights& w, const uint8_t* b, const float* scales, const uint8_t* zeros, uint8_t* dst) {
  const Int4Layout l = layoutOf(w);
  std::memset(dst, 0, static_cast<size_t>(l.panels * l.panelBytes));
  const int64_t width = w.width, bs = w.blockSize, blob = bs / 2, zeroRow = (w.kBlocks + 1) / 2;
  for (int64_t n = 0; n < w.N; ++n) {
    uint8_t* base = dst + (n / width) * l.panelBytes;
    const int64_t c = n % width;
    float* s = reinterpret_cast<float*>(base + l.codes);
    int32_t* z = reinterpret_cast<int32_t*>(base + l.codes + w.kBlocks * width * 4);
    for (int64_t blk = 0; blk < w.kBlocks; ++blk) {
      s[blk * width + c] = scales[n * w.kBlocks + blk];
      z[blk * width + c] = zeros ? (blk % 2 ? zeros[n * zeroRow + blk / 2] >> 4 : zeros[n * zeroRow + blk / 2] & 15) : 8;
    }
    const uint8_t* column = b + n * w.kBlocks * blob;
    for (int64_t k = 0; k < w.K; ++k) {
      const uint8_t byte = column[(k / bs) * blob + (k % bs) / 2];
      const uint8_t code = k % 2 ? byte >> 4 : byte & 15;
      const int64_t g = k / 8, i = k % 8;
      base[g * 4 * width + c * 4 + i % 4] |= static_cast<uint8_t>(i < 4 ? code : code << 4);
    }
  }
}

size_t int4ScratchBytes(const Int4Weights& w, int64_t M) {
  const Int4Layout l = layoutOf(w);
  return static_cast<size_t>(M * (l.kPadded + w.kBlocks * 8) + 64);
}

void int4MatMul(ThreadPool* pool, const CpuFunctions& fn, const Int4Kernels& kernels, const Int4Weights& w, int64_t M,
                const float* a, const float* bias, float* y, const FusedActivation& act, uint8_t* scratch) {
  if (M <= 0) return;
  const Int4Layout l = layoutOf(w);
  Int8Rows rows;
  rows.stride = l.kPadded;
  rows.kBlocks = w.kBlocks;
  int8_t* q = reinterpret_cast<int8_t*>(scratch);
  float* scale = reinterpret_cast<float*>(scratch + (M * l.kPadded + 3) / 4 * 4);
  int32_t* sum = reinterpret_cast<int32_t*>(scale + M * w.kBlocks);
  rows.q = q, rows.scale = scale, rows.sum = sum;
  const int64_t K = w.K, N = w.N, bs = w.blockSize, width = w.width, mr = kernels.mr;
  parallelFor(M > 1 ? pool : nullptr, M, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      kernels.quantize(a + i * K, K, bs, q + i * l.kPadded, scale + i * w.kBlocks, sum + i * w.kBlocks);
  });
  GemmEpilogue epilogue;  // bias then activation, on each finished panel
  epilogue.bias = bias;
  epilogue.biasColStride = 1;
  epilogue.act = act;
  const bool finish = bias || act.kind != FusedActivation::Kind::None;
  const int threads = pool ? pool->threads() : 1;
  const int64_t rowBlocks = divUp(M, mr);
  const int64_t colShares = std::min<int64_t>(threads, l.panels);
  const int64_t rowShares = std::min<int64_t>(std::max<int64_t>(1, threads / colShares), rowBlocks);
  const int64_t shares = colShares * rowShares;
  parallelFor(shares > 1 ? pool : nullptr, shares, [&](int64_t s0, int64_t s1) {
    alignas(64) float stage[kMaxRows * kMaxWidth];
    for (int64_t s = s0; s < s1; ++s) {
      const int64_t cs = s % colShares, rs = s / colShares;
      const int64_t r0 = rowBlocks * rs / rowShares * mr, r1 = std::min(M, rowBlocks * (rs + 1) / rowShares * mr);
      for (int64_t p = l.panels * cs / colShares; p < l.panels * (cs + 1) / colShares; ++p) {
        const Int4Panel panel = w.panel(p);
        const int64_t j0 = p * width, cols = std::min(width, N - j0);
        for (int64_t i = r0; i < r1; i += mr) {
          Int8Rows at = rows;
          at.q += i * l.kPadded, at.scale += i * w.kBlocks, at.sum += i * w.kBlocks;
          const int64_t n = std::min(mr, r1 - i);
          if (cols == width) {
            kernels.gemm(panel, bs, at, n, y + i * N + j0, N);
            continue;
          }
          kernels.gemm(panel, bs, at, n, stage, width);
          for (int64_t r = 0; r < n; ++r) std::memcpy(y + (i + r) * N + j0, stage + r * width, sizeof(float) * cols);
        }
        if (finish) applyEpilogue(fn, epilogue, r0, r1 - r0, j0, cols, y + r0 * N + j0, N);
      }
    }
  });
}

}  // namespace osprey
