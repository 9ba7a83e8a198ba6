// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceLogSum,
// ReduceLogSumExp, ReduceSumSquare (opset 18+ form): the axes come as optional int64 input 1,
// whose value shape computation needs. No axes (absent or empty) reduces every axis, unless
// noop_with_empty_axes is set, which makes the op an identity. keepdims (default 1) keeps
// reduced axes as size 1. Over an empty set ReduceSum, L1, L2 and SumSquare give 0, ReduceProd
// 1, ReduceMax -inf (the lowest value for integers, false for bool), ReduceMin +inf (the
// highest, true), ReduceLogSum and ReduceLogSumExp -inf, and ReduceMean NaN (0 for integers).
// Float sums accumulate in double; integer sums and products wrap like the element type; L2,
// LogSum and LogSumExp of integers are computed in double and truncated.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/thread_pool.h"
#include "ops/op_util.h"

namespace osprey {

Status reducedAxes(const Node& node, const TensorViews& in, std::vector<bool>* reduced, bool* noop) {
  const int64_t rank = in[0].rank();
  std::vector<int64_t> axes;
  if (in.size() > 1 && in[1].present) {
    if (in[1].rank() > 1)
      return Status::invalidModel("axes (input 1) must be 1-D, got shape " + shapeToString(in[1].shape));
    OSPREY_RETURN_IF_ERROR(in[1].readInts(&axes, "axes (input 1)"));
  } else {
    axes = node.getInts("axes");  // the attribute form of older opsets, if it survived import
  }
  *noop = false;
  reduced->assign(static_cast<size_t>(rank), false);
  if (axes.empty()) {
    if (node.getInt("noop_with_empty_axes", 0) != 0) {
      *noop = true;
    } else {
      reduced->assign(static_cast<size_t>(rank), true);
    }
    return Status::ok();
  }
  std::vector<int64_t> norm;
  Status st = normalizeAxes(axes, rank, &norm);
  if (!st.isOk())
    return Status::invalidModel("axes: " + st.message() + " (data has shape " + shapeToString(in[0].shape) + ")");
  for (int64_t a : norm) (*reduced)[static_cast<size_t>(a)] = true;
  return Status::ok();
}

namespace {

enum class Reduce { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

constexpr bool isExtreme(Reduce k) { return k == Reduce::Max || k == Reduce::Min; }
// Reductions finished by a float function: accumulated in double whatever the element type.
constexpr bool inDouble(Reduce k) { return k == Reduce::L2 || k == Reduce::LogSum || k == Reduce::LogSumExp; }

// log(sum(exp(x))) accumulated online: s = sum(exp(x - m)) with m the largest x so far.
struct LogSumExpAcc {
  double m = -std::numeric_limits<double>::infinity();
  double s = 0.0;
};

Status reduceShape(const Node& node, const TensorViews& in, TensorViews& out) {
  const DataType t = in[0].dtype;
  bool ok = dispatchNumeric(t, [](auto) {}) &&
            (t != DataType::Bool || node.type == OpType::ReduceMax || node.type == OpType::ReduceMin);
  if (!ok) return Status::unsupported(dtypeError(in[0], "input data"));
  std::vector<bool> reduced;
  bool noop;
  OSPREY_RETURN_IF_ERROR(reducedAxes(node, in, &reduced, &noop));
  const bool keep = node.getInt("keepdims", 1) != 0;
  out[0].dtype = t;
  out[0].shape.clear();
  for (size_t d = 0; d < reduced.size(); ++d) {
    if (!reduced[d] || noop)
      out[0].shape.push_back(in[0].shape[d]);
    else if (keep)
      out[0].shape.push_back(1);
  }
  return Status::ok();
}

template <Reduce K, class T>
struct Reducer {
  using C = ComputeType<T>;
  using Acc = std::conditional_t<
      isExtreme(K), C,
      std::conditional_t<K == Reduce::LogSumExp, LogSumExpAcc,
                         std::conditional_t<isFloatLike<T> || inDouble(K), double,
                                            std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>>>;
  static Acc init() {
    if constexpr (K == Reduce::Max) {
      if constexpr (std::numeric_limits<C>::has_infinity)
        return -std::numeric_limits<C>::infinity();
      else
        return std::numeric_limits<C>::lowest();
    } else if constexpr (K == Reduce::Min) {
      if constexpr (std::numeric_limits<C>::has_infinity)
        return std::numeric_limits<C>::infinity();
      else
        return std::numeric_limits<C>::max();
    } else if constexpr (K == Reduce::LogSumExp) {
      return LogSumExpAcc();
    } else if constexpr (K == Reduce::Prod) {
      return Acc(1);
    } else {
      return Acc(0);
    }
  }
  static Acc step(Acc a, T x) {
    const C v = C(x);
    if constexpr (K == Reduce::Max) {
      return (v > a || v != v) ? v : a;
    } else if constexpr (K == Reduce::Min) {
      return (v < a || v != v) ? v : a;
    } else if constexpr (K == Reduce::LogSumExp) {
      const double d = static_cast<double>(v);
      if (d == a.m) {
        a.s += 1.0;
      } else if (d > a.m || d != d) {
        a.s = a.s * std::exp(a.m - d) + 1.0;
        a.m = d;
      } else {
        a.s += std::exp(d - a.m);
      }
      return a;
    } else if constexpr (std::is_same_v<Acc, double>) {
      const double d = static_cast<double>(v);
      if constexpr (K == Reduce::L1) return a + std::fabs(d);
      else if constexpr (K == Reduce::L2 || K == Reduce::SumSquare) return a + d * d;
      else if constexpr (K == Reduce::Prod) return a * d;
      else return a + d;
    } else {
      // Integers: modular arithmetic in uint64, so overflow wraps instead of being undefined.
      const uint64_t u = static_cast<uint64_t>(v), ua = static_cast<uint64_t>(a);
      if constexpr (K == Reduce::L1) {
        uint64_t mag = u;
        if constexpr (std::is_signed_v<T>) {
          if (v < 0) mag = uint64_t(0) - u;
        }
        return static_cast<Acc>(ua + mag);
      } else if constexpr (K == Reduce::SumSquare) {
        return static_cast<Acc>(ua + u * u);
      } else if constexpr (K == Reduce::Prod) {
        return static_cast<Acc>(ua * u);
      } else {
        return static_cast<Acc>(ua + u);
      }
    }
  }
  static T finish(Acc a, int64_t count) {
    if constexpr (K == Reduce::Mean) {
      if constexpr (isFloatLike<T>) {
        return T(C(a / static_cast<double>(count)));  // 0 / 0: NaN for the empty set
      } else {
        return count ? static_cast<T>(a / static_cast<Acc>(count)) : T(0);
      }
    } else if constexpr (isExtreme(K)) {
      return T(a);
    } else if constexpr (std::is_same_v<Acc, double> || K == Reduce::LogSumExp) {
      double r;
      if constexpr (K == Reduce::LogSumExp) {
        r = a.s == 0.0 ? -std::numeric_limits<double>::infinity() : a.m + std::log(a.s);
      } else if constexpr (K == Reduce::L2) {
        r = std::sqrt(a);
      } else if constexpr (K == Reduce::LogSum) {
        r = std::log(a);
      } else {
        r = a;
      }
      if constexpr (isFloatLike<T>)
        return T(C(r));
      else
        return saturatingCast<T>(r);
    } else {
      return static_cast<T>(a);
    }
  }
};

// Input dims with size-1 dims dropped and neighbours of the same kind (kept / reduced) merged.
struct MergedDims {
  std::vector<int64_t> size;
  std::vector<bool> reduced;
};

MergedDims mergeDims(const Shape& shape, const std::vector<bool>& reduced) {
  MergedDims m;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!m.size.empty() && m.reduced.back() == reduced[d]) {
      m.size.back() *= shape[d];
    } else {
      m.size.push_back(shape[d]);
      m.reduced.push_back(reduced[d]);
    }
  }
  return m;
}

template <Reduce K, class T>
void reduceFor(const TensorView& in, TensorView& out, const std::vector<bool>& reduced, ThreadPool* pool) {
  using R = Reducer<K, T>;
  using Acc = typename R::Acc;
  const T* x = in.as<const T>();
  T* y = out.as<T>();
  const int64_t outN = out.elements();
  const int64_t count = outN ? in.elements() / outN : 0;
  if (in.elements() == 0) {
    for (int64_t i = 0; i < outN; ++i) y[i] = R::finish(R::init(), 0);
    return;
  }
  const MergedDims m = mergeDims(in.shape, reduced);
  int reducedRuns = 0;
  for (bool r : m.reduced) reducedRuns += r;
  if (reducedRuns <= 1) {
    // [outer, n, inner] with one reduced block of n: the shapes that real models produce.
    int64_t outer = 1, n = 1, inner = 1;
    bool seen = false;
    for (size_t d = 0; d < m.size.size(); ++d) {
      if (m.reduced[d])
        n = m.size[d], seen = true;
      else
        (seen ? inner : outer) *= m.size[d];
    }
    auto work = [&](int64_t o0, int64_t o1) {
      std::vector<Acc> acc(static_cast<size_t>(inner));
      for (int64_t o = o0; o < o1; ++o) {
        const T* block = x + o * n * inner;
        if (inner == 1) {
          Acc a = R::init();
          for (int64_t r = 0; r < n; ++r) a = R::step(a, block[r]);
          y[o] = R::finish(a, count);
          continue;
        }
        std::fill(acc.begin(), acc.end(), R::init());
        for (int64_t r = 0; r < n; ++r)
          for (int64_t j = 0; j < inner; ++j) acc[j] = R::step(acc[j], block[r * inner + j]);
        for (int64_t j = 0; j < inner; ++j) y[o * inner + j] = R::finish(acc[j], count);
      }
    };
    if (in.elements() >= 4096) {
      parallelFor(pool, outer, work);
    } else {
      work(0, outer);
    }
    return;
  }
  // Several reduced blocks: walk the input in order, accumulating into the output element
  // each input element belongs to.
  const size_t rank = m.size.size();
  std::vector<int64_t> outStrides(rank, 0), inStrides(rank, 0);
  int64_t os = 1, is = 1;
  for (size_t d = rank; d-- > 0;) {
    inStrides[d] = is;
    is *= m.size[d];
    if (!m.reduced[d]) {
      outStrides[d] = os;
      os *= m.size[d];
    }
  }
  std::vector<Acc> acc(static_cast<size_t>(outN), R::init());
  forEachBroadcast(m.size, outStrides, inStrides,
                   [&](int64_t, int64_t o, int64_t i) { acc[o] = R::step(acc[o], x[i]); });
  for (int64_t i = 0; i < outN; ++i) y[i] = R::finish(acc[i], count);
}

template <Reduce K>
Status reduceKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  std::vector<bool> reduced;
  bool noop;
  OSPREY_RETURN_IF_ERROR(reducedAxes(node, in, &reduced, &noop));
  if (noop) {
    std::memcpy(out[0].data, in[0].data, in[0].bytes());
    return Status::ok();
  }
  bool done = false;
  dispatchNumeric(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool> || isExtreme(K)) {
      reduceFor<K, T>(in[0], out[0], reduced, pool);
      done = true;
    }
  });
  return done ? Status::ok() : Status::unsupported(dtypeError(in[0], "input data"));
}

}  // namespace

const OpDef kOpDef_ReduceSum = {OpType::ReduceSum, "ReduceSum", 1, 2, 1, 1,
    reduceShape, reduceKernel<Reduce::Sum>, nullptr, 0b10, false};
const OpDef kOpDef_ReduceMean = {OpType::ReduceMean, "ReduceMean", 1, 2, 1, 1,
    reduceShape, reduceKernel<Reduce::Mean>, nullptr, 0b10, false};
const OpDef kOpDef_ReduceMax = {OpType::ReduceMax, "ReduceMax", 1, 2, 1, 1,
    reduceShape, reduceKernel<Reduce::Max>, nullptr, 0b10, false};
const OpDef kOpDef_ReduceMin = {OpType::ReduceMin, "ReduceMin", 1, 2, 1, 1,
    reduceShape, reduceKernel<Reduce::Min>, nullptr, 0b10, false};
const OpDef kOpDef_ReduceProd = {OpType::ReduceProd, "ReduceProd", 1, 2, 1, 1,
    reduceShape, reduceKernel<Reduce::Prod>, nullptr, 0b10, false};
const OpDef kOpDef_ReduceL1 = {OpType::ReduceL1, "ReduceL1", 1, 2, 1, 1,
    reduceShape, reduceKernel<Reduce::L1>, nullptr, 0b10, false};
const OpDef kOpDef_ReduceL2 = {OpType::ReduceL2, "ReduceL2", 1, 2, 1, 1,
    reduceShape, reduceKernel<Reduce::L2>, nullptr, 0b10, false};
const OpDef kOpDef_ReduceLogSum = {OpType::ReduceLogSum, "ReduceLogSum", 1, 2, 1, 1,
    reduceShape, reduceKernel<Reduce::LogSum>, nullptr, 0b10, false};
const OpDef kOpDef_ReduceLogSumExp = {OpType::ReduceLogSumExp, "ReduceLogSumExp", 1, 2, 1, 1,
    reduceShape, reduceKernel<Reduce::LogSumExp>, nullptr, 0b10, false};
const OpDef kOpDef_ReduceSumSquare = {OpType::ReduceSumSquare, "ReduceSumSquare", 1, 2, 1, 1,
    reduceShape, reduceKernel<Reduce::SumSquare>, nullptr, 0b10, false};

}  // namespace osprey
