// CPU Conv by Winograd F(2x2, 3x3) for 3x3 stride-1 undilated ungrouped convolutions with enough
// channels: 16 GEMMs of [Cout x Cin] by [Cin x tiles] replace one of [Cout x 9 Cin] by
// [9 Cin x positions], 2.25x fewer multiplications for two cheap transforms. The transformed
// weights U = G g G^T are packed once at resize (STATIC); the transformed input V and the GEMM
// products M live in planned scratch. F(2x2, 3x3)'s coefficients (0, +-1, 1/2) keep fp32 results
// within a few ulps of the direct sum, unlike larger tiles.
#include <algorithm>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels/cpu_kernels.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/winograd_kernel.h"
#include "core/thread_pool.h"
#include "ops/window.h"

namespace osprey {

namespace {

constexpr int64_t kPositions = 16;  // the 4x4 transformed tile
constexpr int64_t kMinChannels = 8;  // below this the transforms cost more than they save
// Below this many tiles each transformed weight serves too few columns: the 16/9 larger weights
// are read from memory at the speed of memory. ResNet's 7x7 maps (16 tiles) lost to the taps until
// packed weights were prefetched 4 KiB ahead; now 512 channels there run 1.18-1.30 -> 1.00-1.09 ms
// (two threads, per-op minimums; 2.43 -> 1.99 at one).
constexpr int64_t kMinTiles = 16;
constexpr int64_t kTileRowsMaxTiles = 256;

// The distance between two positions' matrices: a multiple of 4 KiB would put the 16 streams
// that a transform writes at once into the same cache sets (a 56x56 map of 64 channels does).
int64_t paddedStride(int64_t floats) {
  floats = (floats + 15) / 16 * 16;
  return floats % 1024 < 64 || floats % 1024 > 1024 - 64 ? floats + 128 : floats;
}

class WinogradConvExecution : public Execution {
 public:
  WinogradConvExecution(CPUBackend* backend, const OpRef& op) : Execution(backend), node_(*op.node) {}

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor &x = *inputs[0], &w = *inputs[1];
    OSPREY_RETURN_IF_ERROR(readConvWindow(node_, x.shape, w.shape, &window_));
    OSPREY_RETURN_IF_ERROR(FusedActivation::fromNode(node_, &act_));
    batch_ = x.shape[0];
    cin_ = x.shape[1];
    cout_ = w.shape[0];
    inH_ = window_.in[1], inW_ = window_.in[2];
    outH_ = window_.out[1], outW_ = window_.out[2];
    padTop_ = window_.padBegin[1], padLeft_ = window_.padBegin[2];
    tilesY_ = (outH_ + 1) / 2, tilesX_ = (outW_ + 1) / 2;
    tiles_ = tilesY_ * tilesX_;
    vStride_ = paddedStride(cin_ * tiles_);
    mStride_ = paddedStride(cout_ * tiles_);
    const bool tileRows = preferTileRows(cpuFunctions(), tiles_);
    if (!packedMem_ || tileRows != tileRows_) {
      tileRows_ = tileRows;
      OSPREY_RETURN_IF_ERROR(packWeights(reinterpret_cast<const float*>(w.host())));
    }
    std::unique_ptr<MemObj> scratch;  // released on return
    return acquireConvScratch(backend(), {kPositions * (vStride_ + mStride_) + (tileRows_ ? 4 * tiles_ * cout_ : 0)},
                              "Winograd scratch", node_.name, &scratch_, &scratch);
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    const CpuFunctions& fn = cpuFunctions();
    const float* x = reinterpret_cast<const float*>(inputs[0]->host());
    const float* bias = optionalFloats(inputs, 2);
    const float* z = optionalFloats(inputs, 3);
    float* y = reinterpret_cast<float*>(outputs[0]->host());
    float* v = reinterpret_cast<float*>(scratch_.host());
    float* m = v + kPositions * vStride_;
    const float* packed = reinterpret_cast<const float*>(packed_.host());
    const size_t perPosition = perPositionSize();
    const int64_t inPlane = inH_ * inW_, outPlane = outH_ * outW_;
    for (int64_t n = 0; n < batch_; ++n) {
      const float* xn = x + n * cin_ * inPlane;
      parallelFor(pool, cin_ * tilesY_, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) transformInputRow(fn, xn + (r / tilesY_) * inPlane, r % tilesY_,
                                                                 v + (r / tilesY_) * tiles_);
      }, kFineRangesPerThread);
      float* yn = y + n * cout_ * outPlane;
      const float* zn = z ? z + n * cout_ * outPlane : nullptr;
      if (tileRows_) {
        runTileRows(pool, v, bias, zn, yn);
        continue;
      }
      parallelFor(pool, kPositions, [&](int64_t begin, int64_t end) {
        for (int64_t p = begin; p < end; ++p) {
          GemmA a;
          a.data = packed + p * perPosition;
          a.packed = true;
          GemmB b;
          b.data = v + p * vStride_;
          b.rowStride = tiles_;
          packedGemm(nullptr, fn, cout_, tiles_, cin_, a, b, m + p * mStride_, tiles_, GemmEpilogue());
        }
      }, kPositions);  // one range per position (at most n ranges)
      float lo, hi;
      const bool clampOnly = clampBounds(act_, &lo, &hi);
      parallelFor(pool, cout_, [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
          float* plane = yn + o * outPlane;
          WinogradOutputStage stage;
          stage.bias = bias ? bias[o] : 0.f;
          stage.lo = lo, stage.hi = hi;
          for (int64_t ty = 0; ty < tilesY_; ++ty)
            transformOutputRow(fn, m + o * tiles_, ty, stage, zn ? zn + o * outPlane : nullptr, plane);
          // Other activations over the finished plane, still in cache.
          if (!clampOnly) applyActivation(fn, act_, plane, outPlane);
        }
      }, kFineRangesPerThread);
    }
    return Status::ok();
  }

 private:
  // Tiles as the GEMM's rows and output channels as its columns (as conv.cpp's 1x1 convolutions
  // on small maps): 49 tiles of a 13x13 or 14x14 map fill 7 blocks of 8 rows but only 2 blocks
  // of 32 columns at 77%, and with weights as B each packed panel serves every tile of a row
  // block; the products then go through the output transform by channel and a transpose into planes.
  // With the 16-wide tile (AVX2) only where the tiles leave a partial block of 16 columns: 49
  // tiles ran 12-20% faster as rows, 196 3-9%, but 16 (7x7 maps, no padding as columns) 5% slower.
  // Rows need kernels for the last few rows (gemmTail), so that the tiles are not padded instead.
  static bool preferTileRows(const CpuFunctions& fn, int64_t tiles) {
    return fn.transposeToPlanes && fn.gemmTail && tiles <= kTileRowsMaxTiles &&
           (fn.gemmNr >= 32 || tiles % fn.gemmNr != 0);
  }

  size_t perPositionSize() const {
    const CpuFunctions& fn = cpuFunctions();
    return tileRows_ ? packedBSize(fn, cin_, cout_) : packedASize(fn, cout_, cin_);
  }

  // M[p] = V[p]^T U[p]^T for every position, then the outputs of every tile by channel into
  // rows of positions (a 2 x 2 tile grid, odd edges included), transposed into planes with the epilogue.
  void runTileRows(ThreadPool* pool, float* v, const float* bias, const float* z, float* y) const {
    const CpuFunctions& fn = cpuFunctions();
    float* m = v + kPositions * vStride_;
    float* rows = m + kPositions * mStride_;
    const float* packed = reinterpret_cast<const float*>(packed_.host());
    const size_t perPosition = perPositionSize();
    parallelFor(pool, kPositions, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        GemmA a;
        a.data = v + p * vStride_;
        a.rowStride = 1;
        a.colStride = tiles_;
        GemmB b;
        b.data = packed + p * perPosition;
        b.packed = true;
        packedGemm(nullptr, fn, tiles_, cout_, cin_, a, b, m + p * mStride_, cout_, GemmEpilogue());
      }
    }, kPositions);  // one range per position (at most n ranges)
    const int64_t gridW = 2 * tilesX_;
    parallelFor(pool, tilesY_, [&](int64_t begin, int64_t end) {
      for (int64_t ty = begin; ty < end; ++ty)
        for (int64_t tx = 0; tx < tilesX_; ++tx) {
          float* top = rows + (2 * ty * gridW + 2 * tx) * cout_;
          float* bottom = top + gridW * cout_;
          fn.winogradOutputChannels2x3(m + (ty * tilesX_ + tx) * cout_, mStride_, cout_, top, top + cout_, bottom,
                                       bottom + cout_);
        }
    }, kFineRangesPerThread);
    // An even row length leaves no grid column out: the whole plane is one run of positions.
    const bool oneRun = outW_ == gridW;
    transposeToPlanesWithEpilogue(pool, fn, rows, cout_, cout_, oneRun ? 1 : outH_, oneRun ? outH_ * outW_ : outW_,
                                  gridW, bias, z, act_, y);
  }

  // U[p] = (G g G^T)[p] for every (out, in) channel pair, each position packed as a GEMM's A
  // (B with tiles as rows).
  Status packWeights(const float* w) {
    const CpuFunctions& fn = cpuFunctions();
    const size_t perPosition = perPositionSize();
    const int64_t floats = static_cast<int64_t>(perPosition * kPositions);
    bool fresh = false;
    OSPREY_RETURN_IF_ERROR(acquirePackedWeights(backend(), floats, node_.name,
                                                packKey(w, nullptr, "winograd",
                                                        {tileRows_, cout_, cin_, static_cast<int64_t>(perPosition)}),
                                                &packed_, &packedMem_, &fresh));
    if (!fresh) return Status::ok();
    std::vector<float> u(static_cast<size_t>(kPositions * cout_ * cin_));
    for (int64_t o = 0; o < cout_; ++o) {
      for (int64_t c = 0; c < cin_; ++c) {
        const float* g = w + (o * cin_ + c) * 9;
        float gg[4][3];  // G g
        for (int j = 0; j < 3; ++j) {
          gg[0][j] = g[j];
          gg[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
          gg[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
          gg[3][j] = g[6 + j];
        }
        for (int a = 0; a < 4; ++a) {
          const float t[4] = {gg[a][0], 0.5f * (gg[a][0] + gg[a][1] + gg[a][2]), 0.5f * (gg[a][0] - gg[a][1] + gg[a][2]),
                              gg[a][2]};
          for (int b = 0; b < 4; ++b) u[((4 * a + b) * cout_ + o) * cin_ + c] = t[b];
        }
      }
    }
    float* dst = reinterpret_cast<float*>(packed_.host());
    for (int64_t p = 0; p < kPositions; ++p) {
      const float* up = u.data() + p * cout_ * cin_;
      if (tileRows_)
        packGemmB(fn, up, 1, cin_, cin_, cout_, dst + p * perPosition);
      else
        packGemmA(fn, up, cin_, 1, cout_, cin_, dst + p * perPosition);
    }
    return Status::ok();
  }

  // The transformed tiles of tile row ty of one channel plane, into v[p * vStride + ty * tilesX + tx].
  void transformInputRow(const CpuFunctions& fn, const float* plane, int64_t ty, float* v) const {
    const int64_t posStride = vStride_;
    float* vr = v + ty * tilesX_;
    const float* rows[4];
    for (int i = 0; i < 4; ++i) {
      const int64_t iy = 2 * ty - padTop_ + i;
      rows[i] = iy >= 0 && iy < inH_ ? plane + iy * inW_ : nullptr;
    }
    // Tiles whose four columns 2tx - padLeft .. +3 all lie inside the image read the rows in place.
    const int64_t first = std::min(tilesX_, (padLeft_ + 1) / 2);
    const int64_t last = std::max(first, std::min(tilesX_, (inW_ - 4 + padLeft_) / 2 + 1));
    bool allRows = true;
    for (const float* r : rows) allRows = allRows && r;
    if (allRows && last > first) {
      const float* shifted[4];
      for (int i = 0; i < 4; ++i) shifted[i] = rows[i] + 2 * first - padLeft_;
      fn.winogradInput2x3(shifted, last - first, vr + first, posStride);
    }
    // The rest (image borders, rows of padding) one tile at a time from a zero-filled copy.
    for (int64_t tx = 0; tx < tilesX_; ++tx) {
      if (allRows && tx >= first && tx < last) continue;
      float tile[4][4];
      for (int i = 0; i < 4; ++i)
        for (int k = 0; k < 4; ++k) {
          const int64_t ix = 2 * tx - padLeft_ + k;
          tile[i][k] = rows[i] && ix >= 0 && ix < inW_ ? rows[i][ix] : 0.f;
        }
      const float* tileRows[4] = {tile[0], tile[1], tile[2], tile[3]};
      fn.winogradInput2x3(tileRows, 1, vr + tx, posStride);
    }
  }

  // Output rows 2ty and 2ty + 1 of one output channel from its products m[p * mStride + t],
  // finished by the stage with the residual plane z (null: none).
  void transformOutputRow(const CpuFunctions& fn, const float* m, int64_t ty, WinogradOutputStage stage,
                          const float* z, float* plane) const {
    const int64_t posStride = mStride_, row = 2 * ty * outW_;
    const float* mr = m + ty * tilesX_;
    float* y0 = plane + row;
    const bool secondRow = 2 * ty + 1 < outH_;
    float* y1 = secondRow ? y0 + outW_ : nullptr;
    const int64_t whole = secondRow ? outW_ / 2 : 0;  // tiles whose four outputs all lie inside
    if (whole > 0) {
      stage.z0 = z ? z + row : nullptr;
      stage.z1 = z ? z + row + outW_ : nullptr;
      fn.winogradOutput2x3(mr, posStride, whole, y0, y1, stage);
    }
    // An odd last column or row, one tile at a time into a pair of its own (the residual is read
    // only where an output lies).
    for (int64_t t = whole; t < tilesX_; ++t) {
      float pair0[2], pair1[2];
      fn.winogradOutput2x3(mr + t, posStride, 1, pair0, pair1, WinogradOutputStage());
      for (int64_t s = 0; s < 2 && 2 * t + s < outW_; ++s) {
        const int64_t i = 2 * t + s;
        y0[i] = winogradFinish(pair0[s], z ? z + row : nullptr, i, stage);
        if (secondRow) y1[i] = winogradFinish(pair1[s], z ? z + row + outW_ : nullptr, i, stage);
      }
    }
  }

  const Node& node_;
  Window window_;
  FusedActivation act_;
  int64_t batch_ = 0, cin_ = 0, cout_ = 0, inH_ = 0, inW_ = 0, outH_ = 0, outW_ = 0, padTop_ = 0, padLeft_ = 0;
  int64_t tilesY_ = 0, tilesX_ = 0, tiles_ = 0, vStride_ = 0, mStride_ = 0;
  bool tileRows_ = false;
  RuntimeTensor packed_, scratch_;
  std::unique_ptr<MemObj> packedMem_;
};

}  // namespace

std::unique_ptr<Execution> createWinogradConvExecution(CPUBackend* backend, const OpRef& op,
                                                       const std::vector<RuntimeTensor*>& inputs,
                                                       const std::vector<RuntimeTensor*>& outputs) {
  // Its transforms round beyond plain fp32 arithmetic (about 1e-6 of the output's scale).
  if (!cpuKernelChoices().winograd || backend->config().precision == BackendConfig::Precision::High) return nullptr;
  const RuntimeTensor &x = *inputs[0], &w = *inputs[1];
  if (x.shape.size() != 4 || w.shape[2] != 3 || w.shape[3] != 3 || op.node->getInt("group", 1) != 1) return nullptr;
  if (x.shape[1] < kMinChannels || w.shape[0] < kMinChannels) return nullptr;
  Window window;
  if (!readConvWindow(*op.node, x.shape, w.shape, &window)) return nullptr;
  for (int i = 1; i < 3; ++i)
    if (window.stride[i] != 1 || window.dilation[i] != 1 || window.padBegin[i] > 1 || window.padEnd[i] > 1 ||
        window.out[i] < 1)
      return nullptr;
  if (((window.out[1] + 1) / 2) * ((window.out[2] + 1) / 2) < kMinTiles) return nullptr;
  return std::make_unique<WinogradConvExecution>(backend, op);
}

}  // namespace osprey
