// MatMulNBits on the CPU (matmul_nbits.h has the design): the panel packing, the portable
// kernels, the driver that cuts the product into panels, K-slices and register blocks, the
// execution and its creator. The vector kernels are in matmul_nbits_avx2.cpp / _avx512.cpp.
#include "backends/cpu/kernels/matmul_nbits.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "backends/cpu/kernels/cpu_kernels.h"
#include "backends/cpu/kernels/matmul_nbits_int8.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "core/thread_pool.h"
#include "ops/matmul_nbits.h"

namespace osprey {

namespace {

constexpr int64_t kGemvRows = 4;  // up to this many rows of A, dequantize in registers (GEMV)
// A K-slice of one panel dequantized: 256 x 32 floats (32 KiB) stay in L1 while the
// micro-kernel walks the rows; the rows of A it reads (256 x 256 floats) stay in L2.
constexpr int64_t kKc = 256;
constexpr int64_t kMc = 256;
// Panels are walked in groups of 256 columns, K-slice by K-slice, so that one K-slice of those
// rows of A is read from L2 by every panel of the group (the f32 GEMM's blocking): A whole
// (128 x 3072 floats, 1.5 MiB) would not stay in a smaller L2 from one panel to the next.
constexpr int64_t kNc = 256;

int64_t divUp(int64_t a, int64_t b) { return (a + b - 1) / b; }

template <int Bits>
void dequantScalar(const NBitsPanel& p, int64_t nr, int64_t bs, int64_t k0, int64_t k1, float* out) {
  const int64_t half = nr / 2;
  for (int64_t k = k0; k < k1; ++k) {
    const int64_t b = k / bs;
    const float* s = p.scale + b * nr;
    const uint8_t* z = p.zero + b * nr;
    float* o = out + (k - k0) * nr;
    if (Bits == 8) {
      const uint8_t* row = p.q + k * nr;
      for (int64_t j = 0; j < nr; ++j) o[j] = static_cast<float>(row[j] - z[j]) * s[j];
    } else {
      const uint8_t* row = p.q + k * half;
      for (int64_t j = 0; j < half; ++j) {
        o[j] = static_cast<float>((row[j] & 15) - z[j]) * s[j];
        o[j + half] = static_cast<float>((row[j] >> 4) - z[j + half]) * s[j + half];
      }
    }
  }
}

template <int Bits>
void gemvScalar(const NBitsPanel& p, int64_t nr, int64_t bs, int64_t K, int64_t rows, const float* a, int64_t lda,
                float* out) {
  float w[kGemmMaxNr];
  std::fill(out, out + rows * nr, 0.f);
  for (int64_t k = 0; k < K; ++k) {
    dequantScalar<Bits>(p, nr, bs, k, k + 1, w);
    for (int64_t i = 0; i < rows; ++i) {
      const float ai = a[i * lda + k];
      for (int64_t j = 0; j < nr; ++j) out[i * nr + j] += ai * w[j];
    }
  }
}

// Byte offsets of the three parts of the packed block: all panels' codes, then their scales,
// then their zero points.
struct PanelLayout {
  int64_t panels, qPanel, meta, scaleOffset, zeroOffset, total;
};

PanelLayout layoutOf(const NBitsWeights& w) {
  PanelLayout l;
  l.panels = divUp(w.N, w.nr);
  l.qPanel = w.K * w.nr * w.bits / 8;
  l.meta = w.kBlocks * w.nr;
  l.scaleOffset = (l.panels * l.qPanel + 63) / 64 * 64;
  l.zeroOffset = l.scaleOffset + l.panels * l.meta * static_cast<int64_t>(sizeof(float));
  l.total = l.zeroOffset + l.panels * l.meta;
  return l;
}

// C[rows x cols] (row stride ldc) (+)= A[rows x kc] (row stride lda) x the dequantized slice bp
// [kc x nr], through the table's micro-kernel; partial blocks go through stack tiles.
void tile(const CpuFunctions& fn, int64_t kc, const float* a, int64_t lda, int64_t rows, const float* bp, float* c,
          int64_t ldc, int64_t cols, bool accumulate, float* aStage, float* cStage) {
  const int64_t mr = fn.gemmMr, nr = fn.gemmNr;
  GemmMicroKernel kernel = fn.gemm;
  const float* ap = a;
  int64_t aRowStride = lda;
  if (rows < mr) {
    if (fn.gemmTail && fn.gemmTail[rows]) {
      kernel = fn.gemmTail[rows];
    } else {
      for (int64_t r = 0; r < mr; ++r)
        if (r < rows)
          std::memcpy(aStage + r * kc, a + r * lda, sizeof(float) * kc);
        else
          std::fill(aStage + r * kc, aStage + (r + 1) * kc, 0.f);
      ap = aStage;
      aRowStride = kc;
    }
  }
  const bool exactRows = rows == mr || kernel != fn.gemm;
  if (exactRows && cols == nr) {
    kernel(kc, ap, aRowStride, 1, bp, nr, c, ldc, accumulate, nullptr);
    return;
  }
  std::fill(cStage, cStage + mr * nr, 0.f);
  if (accumulate)
    for (int64_t r = 0; r < rows; ++r) std::memcpy(cStage + r * nr, c + r * ldc, sizeof(float) * cols);
  kernel(kc, ap, aRowStride, 1, bp, nr, cStage, nr, accumulate, nullptr);
  for (int64_t r = 0; r < rows; ++r) std::memcpy(c + r * ldc, cStage + r * nr, sizeof(float) * cols);
}

class MatMulNBitsExecution : public Execution {
 public:
  MatMulNBitsExecution(CPUBackend* backend, const OpRef& op, FusedActivation act)
      : Execution(backend), node_(*op.node), act_(act) {}

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const NBitsKernels& kernels = nbitsKernels();
    w_.K = node_.getInt("K", 0);
    w_.N = node_.getInt("N", 0);
    w_.bits = node_.getInt("bits", 4);
    w_.blockSize = node_.getInt("block_size", 0);
    w_.kBlocks = divUp(w_.K, w_.blockSize);
    w_.nr = kernels.nr;
    M_ = inputs[0]->elements() / w_.K;
    if (nbitsUsesInt8Activations(node_.getInt("accuracy_level", 0), w_.bits, w_.blockSize))
      return resizeInt8(inputs);
    if (!mem_) {
      const uint8_t* b = inputs[1]->host();
      const float* scales = reinterpret_cast<const float*>(inputs[2]->host());
      const uint8_t* zeros = inputs.size() > 3 && inputs[3] ? inputs[3]->host() : nullptr;
      const int64_t floats = static_cast<int64_t>((nbitsPackedBytes(w_) + sizeof(float) - 1) / sizeof(float));
      bool fresh = false;
      OSPREY_RETURN_IF_ERROR(acquirePackedWeights(
          backend(), floats, node_.name,
          packKey(b, scales, "matmul-nbits",
                  {w_.K, w_.N, w_.bits, w_.blockSize, w_.nr, static_cast<int64_t>(reinterpret_cast<intptr_t>(zeros))}),
          &packed_, &mem_, &fresh));
      if (fresh) nbitsPack(w_, b, scales, zeros, packed_.host());
    }
    w_.data = packed_.host();
    return Status::ok();
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    if (int8_.data) {
      int4MatMul(static_cast<CPUBackend*>(backend())->threadPool(), cpuFunctions(), int4Kernels(), int8_, M_,
                 reinterpret_cast<const float*>(inputs[0]->host()), optionalFloats(inputs, 5),
                 reinterpret_cast<float*>(outputs[0]->host()), act_, scratch_.host());
      return Status::ok();
    }
    nbitsMatMul(static_cast<CPUBackend*>(backend())->threadPool(), cpuFunctions(), nbitsKernels(), w_, M_,
                reinterpret_cast<const float*>(inputs[0]->host()), optionalFloats(inputs, 5),
                reinterpret_cast<float*>(outputs[0]->host()), act_);
    return Status::ok();
  }

 private:
  // accuracy_level 4: the codes in matmul_nbits_int8.h's panels, A quantized into DYNAMIC scratch.
  Status resizeInt8(const std::vector<RuntimeTensor*>& inputs) {
    const Int4Kernels& kernels = int4Kernels();
    int8_.K = w_.K, int8_.N = w_.N, int8_.blockSize = w_.blockSize, int8_.kBlocks = w_.kBlocks;
    int8_.width = kernels.width;
    if (!mem_) {
      const uint8_t* b = inputs[1]->host();
      const float* scales = reinterpret_cast<const float*>(inputs[2]->host());
      const uint8_t* zeros = inputs.size() > 3 && inputs[3] ? inputs[3]->host() : nullptr;
      const int64_t floats = static_cast<int64_t>((int4PackedBytes(int8_) + sizeof(float) - 1) / sizeof(float));
      bool fresh = false;
      OSPREY_RETURN_IF_ERROR(acquirePackedWeights(
          backend(), floats, node_.name,
          packKey(b, scales, "matmul-nbits-int8",
                  {w_.K, w_.N, w_.blockSize, int8_.width, static_cast<int64_t>(reinterpret_cast<intptr_t>(zeros))}),
          &packed_, &mem_, &fresh));
      if (fresh) int4Pack(int8_, b, scales, zeros, packed_.host());
    }
    int8_.data = packed_.host();
    const int64_t floats = static_cast<int64_t>((int4ScratchBytes(int8_, M_) + sizeof(float) - 1) / sizeof(float));
    std::unique_ptr<MemObj> scratch;  // lives for this execution only
    return acquireConvScratch(backend(), {floats}, "quantized A", node_.name, &scratch_, &scratch);
  }

  const Node& node_;
  FusedActivation act_;
  Int4Weights int8_;
  RuntimeTensor scratch_;
  NBitsWeights w_;
  int64_t M_ = 0;
  RuntimeTensor packed_;
  std::unique_ptr<MemObj> mem_;
};

bool hasDtype(const RuntimeTensor* t, DataType d) { return t && t->dtype == d; }

}  // namespace

NBitsKernels nbitsScalarKernels(int64_t nr) {
  NBitsKernels k;
  k.isa = "scalar";
  k.nr = nr;
  k.dequant4 = dequantScalar<4>;
  k.dequant8 = dequantScalar<8>;
  k.gemv4 = gemvScalar<4>;
  k.gemv8 = gemvScalar<8>;
  return k;
}

const NBitsKernels& nbitsKernels() {
  static const NBitsKernels kernels = [] {
    const CpuFunctions& fn = cpuFunctions();
    const std::string isa = fn.isa;
#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (isa == "avx512f" && fn.gemmNr == 32 && __builtin_cpu_supports("avx512f"))
      return NBitsKernels{"avx512f", 32, nbits_dequant4_32__avx512f, nbits_dequant8_32__avx512f,
                          nbits_gemv4_32__avx512f, nbits_gemv8_32__avx512f};
    if (isa == "avx2_fma" && fn.gemmNr == 16 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      return NBitsKernels{"avx2_fma", 16, nbits_dequant4_16__avx2, nbits_dequant8_16__avx2, nbits_gemv4_16__avx2,
                          nbits_gemv8_16__avx2};
#endif
    return nbitsScalarKernels(fn.gemmNr);
  }();
  return kernels;
}

NBitsPanel NBitsWeights::panel(int64_t p) const {
  const PanelLayout l = layoutOf(*this);
  NBitsPanel panel;
  panel.q = data + p * l.qPanel;
  panel.scale = reinterpret_cast<const float*>(data + l.scaleOffset) + p * l.meta;
  panel.zero = data + l.zeroOffset + p * l.meta;
  return panel;
}

size_t nbitsPackedBytes(const NBitsWeights& w) { return static_cast<size_t>(layoutOf(w).total); }

void nbitsPack(const NBitsWeights& w, const uint8_t* b, const float* scales, const uint8_t* zeros, uint8_t* dst) {
  const PanelLayout l = layoutOf(w);
  std::memset(dst, 0, static_cast<size_t>(l.total));
  const int64_t nr = w.nr, half = nr / 2, bs = w.blockSize;
  const int64_t blob = bs * w.bits / 8, zeroRow = w.bits == 8 ? w.kBlocks : (w.kBlocks + 1) / 2;
  for (int64_t n = 0; n < w.N; ++n) {
    const int64_t p = n / nr, j = n % nr;
    uint8_t* q = dst + p * l.qPanel;
    float* s = reinterpret_cast<float*>(dst + l.scaleOffset) + p * l.meta;
    uint8_t* z = dst + l.zeroOffset + p * l.meta;
    for (int64_t blk = 0; blk < w.kBlocks; ++blk) {
      s[blk * nr + j] = scales[n * w.kBlocks + blk];
      int32_t zp = 1 << (w.bits - 1);
      if (zeros) {
        const uint8_t* row = zeros + n * zeroRow;
        zp = w.bits == 8 ? row[blk] : blk % 2 ? row[blk / 2] >> 4 : row[blk / 2] & 15;
      }
      z[blk * nr + j] = static_cast<uint8_t>(zp);
    }
    const uint8_t* column = b + n * w.kBlocks * blob;  // its blocks, one after another
    for (int64_t k = 0; k < w.K; ++k) {
      const uint8_t* block = column + (k / bs) * blob;
      const int64_t i = k % bs;
      if (w.bits == 8) {
        q[k * nr + j] = block[i];
        continue;
      }
      const uint8_t code = i % 2 ? block[i / 2] >> 4 : block[i / 2] & 15;
      q[k * half + j % half] |= static_cast<uint8_t>(j < half ? code : code << 4);
    }
  }
}

void nbitsMatMul(ThreadPool* pool, const CpuFunctions& fn, const NBitsKernels& kernels, const NBitsWeights& w,
                 int64_t M, const float* a, const float* bias, float* y, const FusedActivation& act) {
  if (M <= 0) return;
  GemmEpilogue epilogue;  // bias then activation, on each finished block of columns
  epilogue.bias = bias;
  epilogue.biasColStride = 1;
  epilogue.act = act;
  const bool finish = bias || act.kind != FusedActivation::Kind::None;
  const int64_t nr = w.nr, N = w.N, K = w.K, bs = w.blockSize, panels = divUp(N, nr);
  const int threads = pool ? pool->threads() : 1;
  if (M <= kGemvRows) {
    const NBitsGemvKernel gemv = w.bits == 8 ? kernels.gemv8 : kernels.gemv4;
    const int64_t shares = std::min<int64_t>(threads, panels);
    parallelFor(shares > 1 ? pool : nullptr, shares, [&](int64_t s0, int64_t s1) {
      alignas(64) float out[kGemvRows * kGemmMaxNr];
      for (int64_t p = panels * s0 / shares; p < panels * s1 / shares; ++p) {
        gemv(w.panel(p), nr, bs, K, M, a, K, out);
        const int64_t j0 = p * nr, cols = std::min(nr, N - j0);
        for (int64_t i = 0; i < M; ++i) std::memcpy(y + i * N + j0, out + i * nr, sizeof(float) * cols);
        if (finish) applyEpilogue(fn, epilogue, 0, M, j0, cols, y + j0, N);
      }
    });
    return;
  }
  // Each share: a run of column panels, and of rows where the panels are fewer than the threads.
  const NBitsDequantKernel dequant = w.bits == 8 ? kernels.dequant8 : kernels.dequant4;
  const int64_t mr = fn.gemmMr, rowBlocks = divUp(M, mr), mc = std::max<int64_t>(1, kMc / mr) * mr;
  const int64_t group = std::max<int64_t>(1, kNc / nr);
  const int64_t colShares = std::min<int64_t>(threads, panels);
  const int64_t rowShares = std::min<int64_t>(std::max<int64_t>(1, threads / colShares), rowBlocks);
  const int64_t shares = colShares * rowShares;
  parallelFor(shares > 1 ? pool : nullptr, shares, [&](int64_t s0, int64_t s1) {
    alignas(64) float slice[kKc * kGemmMaxNr];
    alignas(64) float aStage[kGemmMaxMr * kKc];
    alignas(64) float cStage[kGemmMaxMr * kGemmMaxNr];
    for (int64_t s = s0; s < s1; ++s) {
      const int64_t cs = s % colShares, rs = s / colShares;
      const int64_t p0 = panels * cs / colShares, p1 = panels * (cs + 1) / colShares;
      const int64_t r0 = rowBlocks * rs / rowShares * mr, r1 = std::min(M, rowBlocks * (rs + 1) / rowShares * mr);
      for (int64_t i0 = r0; i0 < r1; i0 += mc) {
        const int64_t i1 = std::min(r1, i0 + mc);
        for (int64_t g0 = p0; g0 < p1; g0 += group) {
          const int64_t g1 = std::min(p1, g0 + group);
          for (int64_t k0 = 0; k0 < K; k0 += kKc) {
            const int64_t kc = std::min(kKc, K - k0);
            for (int64_t p = g0; p < g1; ++p) {
              const int64_t j0 = p * nr, cols = std::min(nr, N - j0);
              dequant(w.panel(p), nr, bs, k0, k0 + kc, slice);
              for (int64_t i = i0; i < i1; i += mr)
                tile(fn, kc, a + i * K + k0, K, std::min(mr, i1 - i), slice, y + i * N + j0, N, cols, k0 > 0, aStage,
                     cStage);
            }
          }
          if (finish) {
            const int64_t j0 = g0 * nr, j1 = std::min(N, g1 * nr);
            applyEpilogue(fn, epilogue, i0, i1 - i0, j0, j1 - j0, y + i0 * N + j0, N);
          }
        }
      }
    }
  });
}

std::unique_ptr<Execution> createMatMulNBitsExecution(CPUBackend* backend, const OpRef& op,
                                                      const std::vector<RuntimeTensor*>& inputs,
                                                      const std::vector<RuntimeTensor*>& outputs) {
  // The weights must be constants (they are packed once); g_idx runs the reference, which checks it.
  if (!op.node || inputs.size() < 3 || outputs.size() != 1) return nullptr;
  if (!hasDtype(inputs[0], DataType::Float32) || !hasDtype(inputs[1], DataType::UInt8) || !inputs[1]->constData ||
      !hasDtype(inputs[2], DataType::Float32) || !inputs[2]->constData)
    return nullptr;
  if (inputs.size() > 3 && inputs[3] && (!hasDtype(inputs[3], DataType::UInt8) || !inputs[3]->constData))
    return nullptr;
  if (inputs.size() > 4 && inputs[4]) return nullptr;
  if (inputs.size() > 5 && inputs[5] && !hasDtype(inputs[5], DataType::Float32)) return nullptr;
  // The shape function has checked these; an execution built on anything else would read past them.
  const Node& n = *op.node;
  const int64_t K = n.getInt("K", 0), N = n.getInt("N", 0), bits = n.getInt("bits", 4), bs = n.getInt("block_size", 0);
  if (K < 1 || N < 1 || (bits != 4 && bits != 8) || bs < 16 || (bs & (bs - 1)) || n.getInt("weight_prepacked", 0))
    return nullptr;
  const int64_t kBlocks = K / bs + (K % bs != 0), zeroRow = bits == 8 ? kBlocks : (kBlocks + 1) / 2;
  int64_t metas = 0, codes = 0;
  if (__builtin_mul_overflow(N, kBlocks, &metas) || __builtin_mul_overflow(metas, bs * bits / 8, &codes))
    return nullptr;
  if (inputs[0]->shape.empty() || inputs[0]->shape.back() != K || inputs[1]->elements() != codes ||
      inputs[2]->elements() != metas ||
      (inputs.size() > 3 && inputs[3] && inputs[3]->elements() != N * zeroRow) ||
      (inputs.size() > 5 && inputs[5] && inputs[5]->elements() != N))
    return nullptr;
  FusedActivation act;
  if (!FusedActivation::fromNode(n, &act).isOk()) return nullptr;
  return std::make_unique<MatMulNBitsExecution>(backend, op, act);
}

}  // namespace osprey
