// Broadcast iteration for the elementwise ops (binary, variadic, Where). The output is walked
// as rows of its innermost dimension after merging every run of dimensions that all inputs
// traverse the same way, so [B, S, 768] + [768] becomes rows of 768 contiguous elements and
// [N, C, H, W] * [N, C, 1, 1] becomes rows of H*W against one scalar. The per-row loops are
// then plain contiguous or scalar loops that the compiler vectorizes.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "core/small_vector.h"
#include "core/thread_pool.h"
#include "ops/op_util.h"

namespace osprey {

template <int N>
struct BroadcastRows {
  SmallVector<int64_t, 8> dims;                          // merged output dims, rank >= 1
  std::array<SmallVector<int64_t, 8>, N> strides;        // per input and merged dim; 0 = broadcast
};

// Plans the walk over `outShape` of N inputs, each broadcastable to it. Runs at every execution
// of an elementwise op, so it allocates nothing for ranks up to 8.
template <int N>
BroadcastRows<N> planBroadcastRows(const Shape& outShape, const std::array<const Shape*, N>& inputs) {
  const size_t rank = outShape.size();
  std::array<SmallVector<int64_t, 8>, N> full;
  for (int k = 0; k < N; ++k) {
    full[k].resize(rank);
    broadcastStrides(*inputs[k], rank, outShape, full[k].data());
  }
  BroadcastRows<N> p;
  for (size_t d = 0; d < rank; ++d) {
    if (outShape[d] == 1) continue;  // contributes no index
    bool merge = !p.dims.empty();
    for (int k = 0; k < N && merge; ++k) merge = p.strides[k].back() == full[k][d] * outShape[d];
    if (merge) {
      p.dims.back() *= outShape[d];
      for (int k = 0; k < N; ++k) p.strides[k].back() = full[k][d];
    } else {
      p.dims.push_back(outShape[d]);
      for (int k = 0; k < N; ++k) p.strides[k].push_back(full[k][d]);
    }
  }
  if (p.dims.empty()) {
    p.dims.push_back(1);
    for (int k = 0; k < N; ++k) p.strides[k].push_back(0);
  }
  return p;
}

// Below this many output elements the work runs on the calling thread.
inline constexpr int64_t kParallelMinElements = int64_t{1} << 15;

// Calls rowFn(outOffset, inOffsets, count, innerStrides) for pieces of rows that together
// cover the output once. Long rows are cut so that a single large row still spreads over
// the pool.
template <int N, class RowFn>
void forEachBroadcastRow(const BroadcastRows<N>& p, ThreadPool* pool, RowFn&& rowFn) {
  const int64_t inner = p.dims.back();
  int64_t total = 1;
  for (size_t d = 0; d < p.dims.size(); ++d) total *= p.dims[d];
  if (total == 0) return;
  const int64_t rows = total / inner;
  const size_t outerRank = p.dims.size() - 1;
  std::array<int64_t, N> innerStrides;
  for (int k = 0; k < N; ++k) innerStrides[k] = p.strides[k].back();
  int64_t pieces = 1;
  if (rows < 64) pieces = std::max<int64_t>(1, std::min<int64_t>((inner + 4095) / 4096, (64 + rows - 1) / rows));
  const int64_t pieceLen = (inner + pieces - 1) / pieces;
  auto work = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t row = t / pieces, begin = (t % pieces) * pieceLen;
      if (begin >= inner) continue;
      std::array<int64_t, N> off{};
      int64_t rest = row;
      for (size_t d = outerRank; d-- > 0;) {
        const int64_t i = rest % p.dims[d];
        rest /= p.dims[d];
        for (int k = 0; k < N; ++k) off[k] += i * p.strides[k][d];
      }
      for (int k = 0; k < N; ++k) off[k] += begin * innerStrides[k];
      rowFn(row * inner + begin, off, std::min(pieceLen, inner - begin), innerStrides);
    }
  };
  if (total >= kParallelMinElements) {
    parallelFor(pool, rows * pieces, work);
  } else {
    work(0, rows * pieces);
  }
}

// o[i] = f(a[i*sa], b[i*sb]) with the common stride patterns spelled out for vectorization.
template <class O, class A, class B, class F>
inline void binaryRow(O* o, const A* a, int64_t sa, const B* b, int64_t sb, int64_t n, F&& f) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const B bv = *b;
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    const A av = *a;
    for (int64_t i = 0; i < n; ++i) o[i] = f(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i * sa], b[i * sb]);
  }
}

// Elementwise o = f(a, b) over broadcast inputs of shapes aShape / bShape into outShape.
template <class O, class A, class B, class F>
void broadcastBinary(const Shape& outShape, O* o, const A* a, const Shape& aShape, const B* b, const Shape& bShape,
                     ThreadPool* pool, F&& f) {
  const auto plan = planBroadcastRows<2>(outShape, {&aShape, &bShape});
  forEachBroadcastRow<2>(
      plan, pool, [&](int64_t out, const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& s) {
        binaryRow(o + out, a + off[0], s[0], b + off[1], s[1], n, f);
      });
}

// y[i] = f(x[i]) in chunks spread over the pool (unary elementwise ops).
template <class X, class Y, class F>
void mapElements(const X* x, Y* y, int64_t n, ThreadPool* pool, F&& f) {
  constexpr int64_t kChunk = 8192;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  auto work = [&](int64_t c0, int64_t c1) {
    const int64_t end = std::min(n, c1 * kChunk);
    for (int64_t i = c0 * kChunk; i < end; ++i) y[i] = f(x[i]);
  };
  if (n >= kParallelMinElements) {
    parallelFor(pool, chunks, work);
  } else if (chunks > 0) {
    work(0, chunks);
  }
}

}  // namespace osprey
