#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/pointwise.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/thread_pool.h"

namespace osprey {

namespace {

// K blocks: each one loads and stores C's tiles once more, so longer is better as long as a kc x nr
// panel of B stays near L1 across the rows of a block. C stored into planes takes its A from the
// activations in place, whose K rows are as many streams: 256 there (384 was 2% slower on 7x7 maps).
constexpr int64_t kKc = 384;
constexpr int64_t kKcPlanes = 256;
// Row blocks: a 128 x kc block of A (192 KiB) stays in L2, and a transformer's 128 positions are
// one block, so that its weights stream from memory once per product, not once per block of 64
// rows. Both sizes together (were 256 and 72): BERT-base's (2 layers) per-op minimums -4.2%
// against the build before, the CNNs within noise.
constexpr int64_t kMc = 128;
constexpr int64_t kNc = 256;
constexpr int64_t kMaxRowBlocks = (kMc + 5) / 6 + 1;  // rows of one block of C, in the smallest register block
constexpr int64_t kThinRows = 4;  // up to this many rows of A, a GEMV per row beats padded blocks

int64_t roundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// The block size that cuts `extent` into as few blocks of at most `limit` (rounded up to the
// register block `unit`) as possible, all but the last the same size.
int64_t evenBlock(int64_t extent, int64_t limit, int64_t unit) {
  const int64_t blocks = std::max<int64_t>(1, (extent + limit - 1) / limit);
  return roundUp((extent + blocks - 1) / blocks, unit);
}

// What each row block of gemmBlock needs, found once per K block instead of once per column
// tile: with a short K (16-64) the per-call setup cost a tenth of the micro-kernel's time.
struct RowBlock {
  GemmMicroKernel kernel;
  const float* a;
  int64_t aRowStride, aColStride, first, rows;
  bool exactRows;
  GemmOutputStage stage;
  float bias[kGemmMaxMr];  // the row bias, when it cannot be read in place
};

// Column panel j (nr columns, B's panel at bp) of every row block, C stored transposed
// (element (i, j) at c[j * ldc + i]). A partial panel goes through a whole transposed tile on the
// stack, because the kernel reads a bias and a residual for, and writes, all of its columns.
// nextPanel (optional): B's next panel, prefetched into L2 a slice per row block.
void planesTiles(const CpuFunctions& fn, const GemmEpilogue& ep, const RowBlock* rowBlocks, int64_t nRowBlocks,
                 int64_t j, int64_t nr, int64_t kc, const float* bp, int64_t ldb, float* c, int64_t ldc,
                 bool accumulate, bool useStage, const float* nextPanel) {
  const int64_t blockMr = fn.gemmMr, blockNr = fn.gemmNr;
  const bool whole = nr == blockNr;
  alignas(64) float cStage[kGemmMaxNr * kGemmMaxMr];  // [column][row]
  alignas(64) float zStage[kGemmMaxNr * kGemmMaxMr];
  alignas(64) float biasStage[kGemmMaxNr];
  GemmOutputStage stage;
  if (useStage) {
    stage = rowBlocks[0].stage;  // the bounds; the bias and the residual follow the tile
    if (ep.bias && whole) {
      stage.columnBias = ep.bias + j;
    } else if (ep.bias) {
      std::fill(biasStage, biasStage + blockNr, 0.f);
      std::memcpy(biasStage, ep.bias + j, sizeof(float) * nr);
      stage.columnBias = biasStage;
    }
  }
  const GemmOutputStage* st = useStage ? &stage : nullptr;
  const int64_t nextLines = nextPanel ? kc * blockNr / 16 : 0;  // 64-byte lines
  for (int64_t rb = 0; rb < nRowBlocks; ++rb) {
    const RowBlock& r = rowBlocks[rb];
    const int64_t i = r.first, mr = r.rows;
    float* cp = c + j * ldc + i;
    for (int64_t line = nextLines * rb / nRowBlocks; line < nextLines * (rb + 1) / nRowBlocks; ++line)
      __builtin_prefetch(nextPanel + line * 16, 0, 2);
    if (whole) {
      if (useStage && ep.residual) {
        stage.residual = ep.residual + j * ep.residualRowStride + i;
        stage.residualStride = ep.residualRowStride;
      }
      r.kernel(kc, r.a, r.aRowStride, r.aColStride, bp, ldb, cp, ldc, accumulate, st);
      continue;
    }
    std::fill(cStage, cStage + blockNr * blockMr, 0.f);
    if (accumulate)
      for (int64_t col = 0; col < nr; ++col) std::memcpy(cStage + col * blockMr, cp + col * ldc, sizeof(float) * mr);
    if (useStage && ep.residual) {
      std::fill(zStage, zStage + blockNr * blockMr, 0.f);
      for (int64_t col = 0; col < nr; ++col)
        std::memcpy(zStage + col * blockMr, ep.residual + (j + col) * ep.residualRowStride + i, sizeof(float) * mr);
      stage.residual = zStage;
      stage.residualStride = blockMr;
    }
    r.kernel(kc, r.a, r.aRowStride, r.aColStride, bp, ldb, cStage, blockMr, accumulate, st);
    for (int64_t col = 0; col < nr; ++col) std::memcpy(cp + col * ldc, cStage + col * blockMr, sizeof(float) * mr);
  }
}

// One block of C: rows [i0, i1), columns [j0, j1), all of K. toPlanes: C is stored transposed
// (element (i, j) at c[j * ldc + i]) by fn.gemmPlanes, the bias is per column, the residual is laid
// out as C, and alpha and beta are 1.
void gemmBlock(const CpuFunctions& fn, int64_t M, int64_t N, int64_t K, const GemmA& a, const GemmB& b, float* c,
               int64_t ldc, const GemmEpilogue& ep, int64_t i0, int64_t i1, int64_t j0, int64_t j1, bool toPlanes) {
  const int64_t blockMr = fn.gemmMr, blockNr = fn.gemmNr;
  // Bias per row, a residual and Relu/Clip run inside the micro-kernel, which adds the residual
  // while the block is in registers; another activation runs over the finished block. With an
  // alpha, a beta or a bias per column, the whole epilogue runs in applyEpilogue (`rest`: the
  // epilogue less what the micro-kernel did).
  GemmOutputStage stage;
  const bool simpleAct = clampBounds(ep.act, &stage.lo, &stage.hi);  // else +-infinity: no clamp
  const bool staged = toPlanes || (ep.alpha == 1.f && ep.beta == 1.f && (!ep.bias || ep.biasColStride == 0));
  const bool fused = staged && simpleAct;
  GemmEpilogue rest = ep;
  if (staged) rest.bias = nullptr, rest.residual = nullptr;
  if (fused) rest.act = FusedActivation();
  alignas(64) float aStage[std::max(kKc, kKcPlanes) * kGemmMaxMr];
  alignas(64) float bStage[std::max(kKc, kKcPlanes) * kGemmMaxNr];
  alignas(64) float cStage[kGemmMaxMr * kGemmMaxNr];
  alignas(64) float zStage[kGemmMaxMr * kGemmMaxNr];
  RowBlock rowBlocks[kMaxRowBlocks];
  const int64_t nRowBlocks = (i1 - i0 + blockMr - 1) / blockMr;
  // Rows read in place, where the table has a kernel for every row count, are cut into blocks of
  // equal height: 49 positions (or Winograd tiles) run as 7 blocks of 7 rows, not 6 of 8 and one
  // of a single row, whose two sums wait on each other's latency at a quarter of the FMA rate.
  const bool equalHeights = !a.packed && (toPlanes ? fn.gemmPlanesTail : fn.gemmTail);
  const int64_t kcBlock = evenBlock(K, toPlanes ? kKcPlanes : kKc, 16);
  for (int64_t k0 = 0; k0 < K; k0 += kcBlock) {
    const int64_t kc = std::min(kcBlock, K - k0);
    const bool accumulate = k0 > 0, last = k0 + kc == K;
    for (int64_t rb = 0; rb < nRowBlocks; ++rb) {
      const int64_t i = equalHeights ? i0 + (i1 - i0) * rb / nRowBlocks : i0 + rb * blockMr;
      const int64_t mr = equalHeights ? i0 + (i1 - i0) * (rb + 1) / nRowBlocks - i : std::min(blockMr, M - i);
      RowBlock& r = rowBlocks[rb];
      r.first = i;
      r.rows = mr;
      // A kernel for exactly mr rows computes no padding rows and reads A where it is.
      if (toPlanes)
        r.kernel = mr < blockMr ? fn.gemmPlanesTail[mr] : fn.gemmPlanes;
      else
        r.kernel = mr < blockMr && fn.gemmTail && fn.gemmTail[mr] ? fn.gemmTail[mr] : fn.gemm;
      r.exactRows = mr == blockMr || r.kernel != fn.gemm;
      if (a.packed) {
        r.a = a.data + (i / blockMr) * K * blockMr + k0 * blockMr;
        r.aRowStride = 1, r.aColStride = blockMr;
      } else if (r.exactRows) {
        r.a = a.data + i * a.rowStride + k0 * a.colStride;
        r.aRowStride = a.rowStride, r.aColStride = a.colStride;
      } else {
        // A partial last block of unpacked rows, where the table has no kernel for that many
        // rows, is staged once per K block.
        for (int64_t k = 0; k < kc; ++k)
          for (int64_t row = 0; row < blockMr; ++row)
            aStage[k * blockMr + row] = row < mr ? a.data[(i + row) * a.rowStride + (k0 + k) * a.colStride] : 0.f;
        r.a = aStage;
        r.aRowStride = 1, r.aColStride = blockMr;
      }
      r.stage = stage;  // toPlanes: the bias is per column, set per tile by planesTiles
      if (ep.bias && !toPlanes) {
        if (ep.biasRowStride == 1 && mr == blockMr) {
          r.stage.rowBias = ep.bias + i;
        } else {
          for (int64_t row = 0; row < blockMr; ++row)
            r.bias[row] = row < mr ? ep.bias[(i + row) * ep.biasRowStride] : 0.f;
          r.stage.rowBias = r.bias;
        }
      }
    }
    const bool useStage = last && staged;
    for (int64_t j = j0; j < j1; j += blockNr) {
      const int64_t nr = std::min(blockNr, N - j);
      const float* bp;
      int64_t ldb;
      if (b.packed) {
        bp = b.data + (j / blockNr) * K * blockNr + k0 * blockNr;
        ldb = blockNr;
      } else if (nr == blockNr) {
        bp = b.data + k0 * b.rowStride + j;
        ldb = b.rowStride;
      } else {
        for (int64_t k = 0; k < kc; ++k) {
          const float* src = b.data + (k0 + k) * b.rowStride + j;
          float* dst = bStage + k * blockNr;
          std::memcpy(dst, src, sizeof(float) * nr);
          std::fill(dst + nr, dst + blockNr, 0.f);
        }
        bp = bStage;
        ldb = blockNr;
      }
      if (toPlanes) {
        // Packed weights as B (positions as rows, small maps) are read from memory once per
        // panel and then from cache by the panel's other row blocks: the next panel is fetched
        // into L2 meanwhile, a slice per row block (ResNet-50's 7x7 1x1 convolutions, whose 4 MiB
        // of weights miss in cache every run: 0.59-0.62 -> 0.55-0.58 ms per-op minimums).
        const float* next = nullptr;
        if (b.packed) {
          if (j + blockNr < j1)
            next = bp + K * blockNr;
          else if (k0 + kc < K)
            next = b.data + (j0 / blockNr) * K * blockNr + (k0 + kc) * blockNr;
        }
        planesTiles(fn, ep, rowBlocks, nRowBlocks, j, nr, kc, bp, ldb, c, ldc, accumulate, useStage, next);
        continue;
      }
      for (int64_t rb = 0; rb < nRowBlocks; ++rb) {
        const RowBlock& r = rowBlocks[rb];
        const int64_t i = r.first, mr = r.rows;
        float* cp = c + i * ldc + j;
        const bool whole = r.exactRows && nr == blockNr;
        GemmOutputStage tileStage;
        const GemmOutputStage* st = nullptr;
        if (useStage) {
          tileStage = r.stage;
          if (ep.residual && whole) {
            tileStage.residual = ep.residual + i * ep.residualRowStride + j;
            tileStage.residualStride = ep.residualRowStride;
          } else if (ep.residual) {  // the kernel reads whole rows of blockNr: stage the tile's residual
            for (int64_t row = 0; row < blockMr; ++row) {
              float* dst = zStage + row * blockNr;
              const int64_t cols = row < mr ? nr : 0;
              if (cols) std::memcpy(dst, ep.residual + (i + row) * ep.residualRowStride + j, sizeof(float) * cols);
              std::fill(dst + cols, dst + blockNr, 0.f);
            }
            tileStage.residual = zStage;
            tileStage.residualStride = blockNr;
          }
          st = &tileStage;
        }
        if (whole) {
          r.kernel(kc, r.a, r.aRowStride, r.aColStride, bp, ldb, cp, ldc, accumulate, st);
          continue;
        }
        if (accumulate)
          for (int64_t row = 0; row < mr; ++row) std::memcpy(cStage + row * blockNr, cp + row * ldc, sizeof(float) * nr);
        r.kernel(kc, r.a, r.aRowStride, r.aColStride, bp, ldb, cStage, blockNr, accumulate, st);
        for (int64_t row = 0; row < mr; ++row) std::memcpy(cp + row * ldc, cStage + row * blockNr, sizeof(float) * nr);
      }
    }
  }
  // The rest of the epilogue once over the block, still in cache: per register block, the calls
  // into vector activations (Swish, Sigmoid, GELU) cost more than the activations themselves.
  if (fused) return;
  if (toPlanes) {
    for (int64_t j = j0; j < j1; ++j) applyActivation(fn, ep.act, c + j * ldc + i0, i1 - i0);
  } else {
    applyEpilogue(fn, rest, i0, i1 - i0, j0, j1 - j0, c + i0 * ldc + j0, ldc);
  }
}

// The largest share over the average when `extent` in register blocks of `unit` is dealt out to
// `threads` in contiguous runs (the last block may be partial).
double shareImbalance(int64_t extent, int64_t unit, int threads) {
  const int64_t panels = (extent + unit - 1) / unit, shares = std::min<int64_t>(threads, panels);
  int64_t largest = 0;
  for (int64_t s = 0; s < shares; ++s)
    largest = std::max(largest, std::min(extent, panels * (s + 1) / shares * unit) - panels * s / shares * unit);
  return static_cast<double>(largest) * threads / static_cast<double>(extent);
}

// Whether the threads' shares of C are runs of column panels (else of row panels). A and B
// share K, so cutting the longer of M and N leaves each thread the least of A and B to read
// (packed weights, usually the longer, are streamed once in all); the other dimension is cut
// instead when it deals out clearly more evenly.
bool shareByColumns(int64_t M, int64_t N, int64_t mr, int64_t nr, int threads) {
  const double rows = shareImbalance(M, mr, threads), columns = shareImbalance(N, nr, threads);
  constexpr double kMargin = 0.05;
  return N >= M ? columns <= rows + kMargin : columns + kMargin < rows;
}

// Each thread takes one contiguous share of C, cut along one dimension in whole register
// blocks (a boundary elsewhere would split a tile), as equal as those blocks allow; within its
// share it walks blocks of mc x nc that keep A's block in L2. Equal shares matter more than
// anything the blocks do inside them: the run lasts as long as the larger share (a classifier's
// 169 x 1000 in blocks of 64 rows, dealt out six to a thread, gave one thread 57% of the work).
void gemmShares(ThreadPool* pool, const CpuFunctions& fn, int64_t M, int64_t N, int64_t K, const GemmA& a,
                const GemmB& b, float* c, int64_t ldc, const GemmEpilogue& epilogue, bool toPlanes) {
  const int threads = pool ? pool->threads() : 1;
  const int64_t mr = fn.gemmMr, nr = fn.gemmNr;
  const bool byColumns = shareByColumns(M, N, mr, nr, threads);
  const int64_t panels = byColumns ? (N + nr - 1) / nr : (M + mr - 1) / mr;
  const int64_t shares = std::min<int64_t>(threads, panels);
  parallelFor(shares > 1 ? pool : nullptr, shares, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      const int64_t p0 = panels * s / shares, p1 = panels * (s + 1) / shares;
      int64_t i0 = 0, i1 = M, j0 = 0, j1 = N;
      if (byColumns)
        j0 = p0 * nr, j1 = std::min(N, p1 * nr);
      else
        i0 = p0 * mr, i1 = std::min(M, p1 * mr);
      const int64_t mc = evenBlock(i1 - i0, kMc, mr), nc = evenBlock(j1 - j0, kNc, nr);
      for (int64_t i = i0; i < i1; i += mc)
        for (int64_t j = j0; j < j1; j += nc)
          gemmBlock(fn, M, N, K, a, b, c, ldc, epilogue, i, std::min(i1, i + mc), j, std::min(j1, j + nc), toPlanes);
    }
  });
}

}  // namespace

void applyEpilogue(const CpuFunctions& fn, const GemmEpilogue& ep, int64_t i0, int64_t rows, int64_t j0, int64_t cols,
                   float* c, int64_t ldc) {
  for (int64_t i = 0; i < rows; ++i) {
    float* row = c + i * ldc;
    if (ep.alpha != 1.f)
      for (int64_t j = 0; j < cols; ++j) row[j] *= ep.alpha;
    if (ep.bias) {
      const float* bias = ep.bias + (i0 + i) * ep.biasRowStride + j0 * ep.biasColStride;
      const float beta = ep.beta;
      if (ep.biasColStride == 0) {
        const float v = beta * bias[0];
        for (int64_t j = 0; j < cols; ++j) row[j] += v;
      } else if (ep.biasColStride == 1) {
        for (int64_t j = 0; j < cols; ++j) row[j] += beta * bias[j];
      } else {
        for (int64_t j = 0; j < cols; ++j) row[j] += beta * bias[j * ep.biasColStride];
      }
    }
    if (ep.residual) {
      const float* z = ep.residual + (i0 + i) * ep.residualRowStride + j0;
      for (int64_t j = 0; j < cols; ++j) row[j] += z[j];
    }
    applyActivation(fn, ep.act, row, cols);
  }
}

void transposeToPlanesWithEpilogue(ThreadPool* pool, const CpuFunctions& fn, const float* src, int64_t lds,
                                   int64_t channels, int64_t runs, int64_t runLength, int64_t runStride,
                                   const float* bias, const float* residual, const FusedActivation& act, float* y) {
  constexpr int64_t kBlock = 16;
  const int64_t planeSize = runs * runLength;
  float lo, hi;
  const bool clampOnly = clampBounds(act, &lo, &hi);
  parallelFor(pool, (channels + kBlock - 1) / kBlock, [&](int64_t begin, int64_t end) {
    for (int64_t blk = begin; blk < end; ++blk) {
      const int64_t c0 = blk * kBlock, count = std::min(channels, c0 + kBlock) - c0;
      // Bias, the residual and Relu / Clip on the way; another activation over the block's
      // planes after, while they are in cache.
      for (int64_t r = 0; r < runs; ++r)
        fn.transposeToPlanes(src + r * runStride * lds + c0, lds, runLength, count, bias ? bias + c0 : nullptr,
                             residual ? residual + c0 * planeSize + r * runLength : nullptr, lo, hi,
                             y + c0 * planeSize + r * runLength, planeSize);
      if (!clampOnly) applyActivation(fn, act, y + c0 * planeSize, count * planeSize);
    }
  });
}

bool clampBounds(const FusedActivation& act, float* lo, float* hi) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  *lo = act.kind == FusedActivation::Kind::Relu ? 0.f : act.kind == FusedActivation::Kind::Clip ? act.a : -kInf;
  *hi = act.kind == FusedActivation::Kind::Clip ? act.b : kInf;
  return act.kind == FusedActivation::Kind::None || act.kind == FusedActivation::Kind::Relu ||
         act.kind == FusedActivation::Kind::Clip;
}

void applyActivation(const CpuFunctions& fn, const FusedActivation& act, float* x, int64_t n) {
  using Kind = FusedActivation::Kind;
  if (act.kind == Kind::None) {
    return;
  } else if (act.kind == Kind::Relu) {
    for (int64_t j = 0; j < n; ++j) x[j] = x[j] > 0.f ? x[j] : 0.f;
  } else if (act.kind == Kind::Clip) {
    const float lo = act.a, hi = act.b;
    for (int64_t j = 0; j < n; ++j) x[j] = std::min(std::max(x[j], lo), hi);
  } else if (act.kind == Kind::Gelu && act.a == 0.f) {
    fn.gelu(x, x, n);  // vectorised erf: libm's erf per element would cost more than the GEMM
  } else if (act.kind == Kind::Sigmoid) {
    fn.sigmoid(x, x, n);
  } else if (act.kind == Kind::Swish && act.a == 1.f) {
    fn.swish(x, x, n);
  } else if (Pointwise p; pointwiseOfActivation(act, &p)) {
    fn.pointwise(p, x, x, n);
  } else {
    for (int64_t j = 0; j < n; ++j) x[j] = act.apply(x[j]);
  }
}

size_t packedASize(const CpuFunctions& fn, int64_t M, int64_t K) { return static_cast<size_t>(roundUp(M, fn.gemmMr) * K); }
size_t packedBSize(const CpuFunctions& fn, int64_t K, int64_t N) { return static_cast<size_t>(roundUp(N, fn.gemmNr) * K); }

void packGemmA(const CpuFunctions& fn, const float* src, int64_t rowStride, int64_t colStride, int64_t M, int64_t K,
               float* dst) {
  const int64_t blockMr = fn.gemmMr;
  for (int64_t p = 0; p < M; p += blockMr) {
    float* panel = dst + (p / blockMr) * K * blockMr;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t r = 0; r < blockMr; ++r)
        panel[k * blockMr + r] = p + r < M ? src[(p + r) * rowStride + k * colStride] : 0.f;
  }
}

void packGemmB(const CpuFunctions& fn, const float* src, int64_t rowStride, int64_t colStride, int64_t K, int64_t N,
               float* dst) {
  const int64_t blockNr = fn.gemmNr;
  for (int64_t p = 0; p < N; p += blockNr) {
    float* panel = dst + (p / blockNr) * K * blockNr;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < blockNr; ++j)
        panel[k * blockNr + j] = p + j < N ? src[k * rowStride + (p + j) * colStride] : 0.f;
  }
}

void packedGemm(ThreadPool* pool, const CpuFunctions& fn, int64_t M, int64_t N, int64_t K, const GemmA& a,
                const GemmB& b, float* c, int64_t ldc, const GemmEpilogue& epilogue) {
  if (M <= 0 || N <= 0) return;
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i) std::fill(c + i * ldc, c + i * ldc + N, 0.f);
    applyEpilogue(fn, epilogue, 0, M, 0, N, c, ldc);
    return;
  }
  // One or a few rows of A against packed weights (a classifier's Gemm at batch 1): the
  // micro-kernel would compute mostly padding rows; stream each weight panel once per row.
  if (b.packed && !a.packed && M <= kThinRows && M < fn.gemmMr) {
    const int64_t nr = fn.gemmNr, panels = (N + nr - 1) / nr;
    parallelFor(panels >= 4 ? pool : nullptr, panels, [&](int64_t begin, int64_t end) {
      alignas(64) float row[kGemmMaxNr];
      for (int64_t p = begin; p < end; ++p) {
        const int64_t j0 = p * nr, cols = std::min(nr, N - j0);
        for (int64_t i = 0; i < M; ++i) {
          fn.gemvPanel(K, a.data + i * a.rowStride, a.colStride, b.data + p * K * nr, nr, row);
          std::memcpy(c + i * ldc + j0, row, sizeof(float) * cols);
        }
        applyEpilogue(fn, epilogue, 0, M, j0, cols, c + j0, ldc);
      }
    });
    return;
  }
  // Packed weights against one or a few columns (a 1x1 convolution on a 1x1 map, as in
  // squeeze-and-excitation blocks): a GEMV per column over each packed row panel of A.
  if (a.packed && !b.packed && N <= kThinRows && N < fn.gemmNr) {
    const int64_t mr = fn.gemmMr, panels = (M + mr - 1) / mr;
    parallelFor(panels >= 4 ? pool : nullptr, panels, [&](int64_t begin, int64_t end) {
      alignas(64) float col[kGemmMaxMr];
      for (int64_t p = begin; p < end; ++p) {
        const int64_t i0 = p * mr, rows = std::min(mr, M - i0);
        const float* panel = a.data + p * K * mr;
        for (int64_t j = 0; j < N; ++j) {
          if (mr % 8 == 0) {
            fn.gemvPanel(K, b.data + j, b.rowStride, panel, mr, col);
          } else {
            std::fill(col, col + mr, 0.f);
            for (int64_t k = 0; k < K; ++k)
              for (int64_t r = 0; r < mr; ++r) col[r] += b.data[k * b.rowStride + j] * panel[k * mr + r];
          }
          for (int64_t r = 0; r < rows; ++r) c[(i0 + r) * ldc + j] = col[r];
        }
        applyEpilogue(fn, epilogue, i0, rows, 0, N, c + i0 * ldc, ldc);
      }
    });
    return;
  }
  gemmShares(pool, fn, M, N, K, a, b, c, ldc, epilogue, false);
}

void packedGemmToPlanes(ThreadPool* pool, const CpuFunctions& fn, int64_t M, int64_t N, int64_t K, const GemmA& a,
                        const GemmB& b, const float* bias, const float* residual, const FusedActivation& act, float* y,
                        int64_t ldy) {
  GemmEpilogue ep;
  ep.bias = bias;
  ep.biasColStride = 1;
  ep.residual = residual;
  ep.residualRowStride = ldy;
  ep.act = act;
  if (M <= 0 || N <= 0) return;
  if (K == 0) {
    for (int64_t j = 0; j < N; ++j) {
      for (int64_t i = 0; i < M; ++i) y[j * ldy + i] = (bias ? bias[j] : 0.f) + (residual ? residual[j * ldy + i] : 0.f);
      applyActivation(fn, act, y + j * ldy, M);
    }
    return;
  }
  gemmShares(pool, fn, M, N, K, a, b, y, ldy, ep, true);
}

}  // namespace osprey
