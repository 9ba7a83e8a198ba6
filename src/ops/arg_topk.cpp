// ArgMax, ArgMin, TopK: pick extreme elements along one axis. NonZero and Unique: outputs
// whose shapes depend on the input's values (the session plans them once values are known).
//
// Ordering of NaN follows numpy (the ONNX reference): ArgMax/ArgMin return the first NaN
// (the last with select_last_index), and TopK ranks NaN above every number. Equal values keep
// the lower index first in TopK.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "core/run_limits.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

template <class C>
bool isNan(C v) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(v);
  return false;
}

bool isNumericNotBool(DataType t) { return t != DataType::Bool && dispatchNumeric(t, [](auto) {}); }

// ---- ArgMax / ArgMin ----

Status argAxis(const Node& node, const TensorView& x, int64_t* axis) {
  if (x.rank() == 0) return Status::invalidModel("data must have rank 1 or more, got a scalar");
  return normalizeAxis(node.getInt("axis", 0), x.rank(), axis).withContext("data shape " + shapeToString(x.shape));
}

Status argShape(const Node& node, const TensorViews& in, TensorViews& out) {
  if (!dispatchNumeric(in[0].dtype, [](auto) {})) return Status::unsupported(dtypeError(in[0], "data"));
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(argAxis(node, in[0], &axis));
  const AxisSplit s = splitAt(in[0].shape, axis);
  if (s.n == 0 && s.outer * s.inner > 0)
    return Status::invalidModel("cannot take the arg-extreme over axis " + std::to_string(axis) + " of size 0 (data shape " +
                                shapeToString(in[0].shape) + ")");
  out[0].dtype = DataType::Int64;
  out[0].shape = in[0].shape;
  if (node.getInt("keepdims", 1) != 0)
    out[0].shape[axis] = 1;
  else
    out[0].shape.erase(out[0].shape.begin() + axis);
  return Status::ok();
}

template <bool kMax>
Status argKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(argAxis(node, in[0], &axis));
  const AxisSplit s = splitAt(in[0].shape, axis);
  const bool last = node.getInt("select_last_index", 0) != 0;
  int64_t* y = out[0].as<int64_t>();
  dispatchNumeric(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* x = in[0].as<const T>();
    // Does v replace the current best?
    auto better = [&](C v, C best) {
      if (isNan(v)) return !isNan(best) || last;
      if (isNan(best)) return false;
      if (v == best) return last;
      return kMax ? v > best : v < best;
    };
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        const T* p = x + o * s.n * s.inner + i;
        int64_t bestIdx = 0;
        C best = C(p[0]);
        for (int64_t k = 1; k < s.n; ++k) {
          const C v = C(p[k * s.inner]);
          if (better(v, best)) best = v, bestIdx = k;
        }
        y[o * s.inner + i] = bestIdx;
      }
  });
  return Status::ok();
}

// ---- TopK ----

Status topkParams(const Node& node, const TensorViews& in, int64_t* axis, int64_t* k) {
  if (in[0].rank() == 0) return Status::invalidModel("X must have rank 1 or more, got a scalar");
  OSPREY_RETURN_IF_ERROR(normalizeAxis(node.getInt("axis", -1), in[0].rank(), axis).withContext("X shape " + shapeToString(in[0].shape)));
  std::vector<int64_t> ks;
  OSPREY_RETURN_IF_ERROR(in[1].readInts(&ks, "K (input 1)"));
  if (ks.size() != 1) return Status::invalidModel("K (input 1) must hold one value, got shape " + shapeToString(in[1].shape));
  *k = ks[0];
  if (*k < 0 || *k > in[0].shape[*axis])
    return Status::invalidArgument("K = " + std::to_string(*k) + " is out of range for axis " + std::to_string(*axis) +
                                   " of X shape " + shapeToString(in[0].shape));
  return Status::ok();
}

Status topkShape(const Node& node, const TensorViews& in, TensorViews& out) {
  if (!isNumericNotBool(in[0].dtype)) return Status::unsupported(dtypeError(in[0], "X"));
  int64_t axis, k;
  OSPREY_RETURN_IF_ERROR(topkParams(node, in, &axis, &k));
  out[0].dtype = in[0].dtype;
  out[0].shape = in[0].shape;
  out[0].shape[axis] = k;
  if (out.size() > 1) {
    out[1].dtype = DataType::Int64;
    out[1].shape = out[0].shape;
  }
  return Status::ok();
}

Status topkKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  int64_t axis, k;
  OSPREY_RETURN_IF_ERROR(topkParams(node, in, &axis, &k));
  const bool largest = node.getInt("largest", 1) != 0;
  const AxisSplit s = splitAt(in[0].shape, axis);
  int64_t* indices = out.size() > 1 && out[1].present ? out[1].as<int64_t>() : nullptr;
  dispatchNumeric(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* x = in[0].as<const T>();
    T* values = out[0].as<T>();
    std::vector<int64_t> order(static_cast<size_t>(s.n));
    std::vector<C> row(static_cast<size_t>(s.n));
    // Strict order: the element that comes first in the output; NaN counts as the largest.
    auto before = [&](int64_t a, int64_t b) {
      const C va = row[a], vb = row[b];
      const bool na = isNan(va), nb = isNan(vb);
      if (na || nb) {
        if (na && nb) return a < b;
        return largest ? na : nb;
      }
      if (va != vb) return largest ? va > vb : va < vb;
      return a < b;
    };
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        const int64_t base = o * s.n * s.inner + i;
        for (int64_t j = 0; j < s.n; ++j) row[j] = C(x[base + j * s.inner]);
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        const int64_t outBase = o * k * s.inner + i;
        for (int64_t j = 0; j < k; ++j) {
          values[outBase + j * s.inner] = x[base + order[j] * s.inner];
          if (indices) indices[outBase + j * s.inner] = order[j];
        }
      }
  });
  return Status::ok();
}

// ---- NonZero ----

// Flat positions of the non-zero elements, in row-major order.
std::vector<int64_t> nonZeroPositions(const TensorView& x) {
  std::vector<int64_t> pos;
  dispatchNumeric(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* p = x.as<const T>();
    for (int64_t i = 0; i < x.elements(); ++i)
      if (C(p[i]) != C(0)) pos.push_back(i);
  });
  return pos;
}

Status nonZeroShape(const Node&, const TensorViews& in, TensorViews& out) {
  if (!dispatchNumeric(in[0].dtype, [](auto) {})) return Status::unsupported(dtypeError(in[0], "X"));
  if (!in[0].hasValue()) return Status::invalidArgument("the value of X must be known to compute NonZero's shape");
  // A scalar reports coordinates as a 1-D tensor would (numpy's behaviour).
  const int64_t rank = std::max<int64_t>(in[0].rank(), 1);
  out[0].dtype = DataType::Int64;
  out[0].shape = {rank, static_cast<int64_t>(nonZeroPositions(in[0]).size())};
  return Status::ok();
}

Status nonZeroKernel(const Node&, const TensorViews& in, TensorViews& out, ThreadPool*) {
  const std::vector<int64_t> pos = nonZeroPositions(in[0]);
  const int64_t count = static_cast<int64_t>(pos.size());
  const Shape& shape = in[0].shape;
  int64_t* y = out[0].as<int64_t>();
  if (shape.empty()) {
    std::fill(y, y + count, 0);
    return Status::ok();
  }
  for (int64_t j = 0; j < count; ++j) {
    int64_t rest = pos[j];
    for (size_t d = shape.size(); d-- > 0;) {
      y[d * count + j] = rest % shape[d];
      rest /= shape[d];
    }
  }
  return Status::ok();
}

// ---- Unique ----

struct UniqueResult {
  Shape yShape;
  AxisSplit split;                // slices are index j of [outer, n, inner]
  std::vector<int64_t> firstOf;   // per unique slice, in output order: its first occurrence
  std::vector<int64_t> inverse;   // per input slice: its unique slice
  std::vector<int64_t> counts;
};

Status computeUnique(const Node& node, const TensorView& x, UniqueResult* r) {
  if (!dispatchNumeric(x.dtype, [](auto) {})) return Status::unsupported(dtypeError(x, "X"));
  const bool sorted = node.getInt("sorted", 1) != 0;
  if (node.hasAttr("axis")) {
    int64_t axis;
    if (x.rank() == 0) return Status::invalidModel("X must have rank 1 or more when axis is given, got a scalar");
    OSPREY_RETURN_IF_ERROR(normalizeAxis(node.getInt("axis", 0), x.rank(), &axis).withContext("X shape " + shapeToString(x.shape)));
    r->split = splitAt(x.shape, axis);
    r->yShape = x.shape;
  } else {
    r->split = {1, x.elements(), 1};
  }
  const AxisSplit s = r->split;
  // Seven int64 vectors of one entry per slice (order, groups, ranks, inverse, counts ...).
  OSPREY_RETURN_IF_ERROR(RunMemoryLimit::check(static_cast<uint64_t>(s.n) * 7 * sizeof(int64_t), node.describe()));
  std::vector<int64_t> order(static_cast<size_t>(s.n));
  std::iota(order.begin(), order.end(), 0);
  dispatchNumeric(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* p = x.as<const T>();
    // Slices compare lexicographically, elements in (outer, inner) order.
    auto compare = [&](int64_t a, int64_t b) {
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t i = 0; i < s.inner; ++i) {
          const C va = C(p[(o * s.n + a) * s.inner + i]), vb = C(p[(o * s.n + b) * s.inner + i]);
          if (isNan(va) || isNan(vb)) {  // NaNs equal one another and follow every number
            if (isNan(va) != isNan(vb)) return isNan(va) ? 1 : -1;
            continue;
          }
          if (va < vb) return -1;
          if (vb < va) return 1;
        }
      return 0;
    };
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
    // Groups of equal slices; the stable sort puts each group's first occurrence first.
    std::vector<int64_t> groupOf(static_cast<size_t>(s.n));
    std::vector<int64_t> groupFirst, groupCount;
    for (size_t j = 0; j < order.size(); ++j) {
      if (j == 0 || compare(order[j - 1], order[j]) != 0) {
        groupFirst.push_back(order[j]);
        groupCount.push_back(0);
      }
      groupOf[order[j]] = static_cast<int64_t>(groupFirst.size()) - 1;
      ++groupCount.back();
    }
    std::vector<int64_t> rank(groupFirst.size());  // output position of each group
    std::iota(rank.begin(), rank.end(), 0);
    if (!sorted) {
      std::vector<int64_t> byFirst(groupFirst.size());
      std::iota(byFirst.begin(), byFirst.end(), 0);
      std::sort(byFirst.begin(), byFirst.end(), [&](int64_t a, int64_t b) { return groupFirst[a] < groupFirst[b]; });
      for (size_t q = 0; q < byFirst.size(); ++q) rank[byFirst[q]] = static_cast<int64_t>(q);
    }
    r->firstOf.assign(groupFirst.size(), 0);
    r->counts.assign(groupFirst.size(), 0);
    for (size_t g = 0; g < groupFirst.size(); ++g) {
      r->firstOf[rank[g]] = groupFirst[g];
      r->counts[rank[g]] = groupCount[g];
    }
    r->inverse.resize(static_cast<size_t>(s.n));
    for (int64_t j = 0; j < s.n; ++j) r->inverse[j] = rank[groupOf[j]];
  });
  const int64_t unique = static_cast<int64_t>(r->firstOf.size());
  if (node.hasAttr("axis")) {
    int64_t axis;
    OSPREY_RETURN_IF_ERROR(normalizeAxis(node.getInt("axis", 0), x.rank(), &axis));
    r->yShape[axis] = unique;
  } else {
    r->yShape = {unique};
  }
  return Status::ok();
}

Status uniqueShape(const Node& node, const TensorViews& in, TensorViews& out) {
  if (!in[0].hasValue()) return Status::invalidArgument("the value of X must be known to compute Unique's shapes");
  UniqueResult r;
  OSPREY_RETURN_IF_ERROR(computeUnique(node, in[0], &r));
  const int64_t unique = static_cast<int64_t>(r.firstOf.size());
  out[0].dtype = in[0].dtype;
  out[0].shape = r.yShape;
  const Shape shapes[3] = {{unique}, {r.split.n}, {unique}};
  for (size_t i = 1; i < out.size() && i < 4; ++i) {
    out[i].dtype = DataType::Int64;
    out[i].shape = shapes[i - 1];
  }
  return Status::ok();
}

Status uniqueKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  UniqueResult r;
  OSPREY_RETURN_IF_ERROR(computeUnique(node, in[0], &r));
  const AxisSplit s = r.split;
  const int64_t unique = static_cast<int64_t>(r.firstOf.size());
  const size_t elem = dataTypeSize(in[0].dtype), block = elem * static_cast<size_t>(s.inner);
  const auto* x = static_cast<const uint8_t*>(in[0].data);
  auto* y = static_cast<uint8_t*>(out[0].data);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t u = 0; u < unique; ++u)
      std::memcpy(y + (o * unique + u) * block, x + (o * s.n + r.firstOf[u]) * block, block);
  const std::vector<int64_t>* lists[3] = {&r.firstOf, &r.inverse, &r.counts};
  for (size_t i = 1; i < out.size() && i < 4; ++i)
    if (out[i].present) std::copy(lists[i - 1]->begin(), lists[i - 1]->end(), out[i].as<int64_t>());
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_ArgMax = {OpType::ArgMax, "ArgMax", 1, 1, 1, 1, argShape, argKernel<true>, nullptr, 0, false};
const OpDef kOpDef_ArgMin = {OpType::ArgMin, "ArgMin", 1, 1, 1, 1, argShape, argKernel<false>, nullptr, 0, false};
const OpDef kOpDef_TopK = {OpType::TopK, "TopK", 2, 2, 1, 2, topkShape, topkKernel, nullptr, 0b10, false};
const OpDef kOpDef_NonZero = {OpType::NonZero, "NonZero", 1, 1, 1, 1, nonZeroShape, nonZeroKernel, nullptr, 0, true};
const OpDef kOpDef_Unique = {OpType::Unique, "Unique", 1, 1, 1, 4, uniqueShape, uniqueKernel, nullptr, 0, true};

}  // namespace osprey
