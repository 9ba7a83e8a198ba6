// Einsum: the equation names every input dimension with a letter ('...' stands for the
// broadcast leading dimensions); letters in the output are kept, the others summed over, and a
// letter repeated within one input takes its diagonal. Without '->' the output is the
// ellipsis dimensions followed by the letters used exactly once, in ASCII order (numpy's rule).
// The reference kernel is one loop over every combination of label values; floats
// accumulate in double, integers wrap like their type.
#include <algorithm>
#include <map>
#include <string>
#include <type_traits>

#include "ops/op_util.h"

namespace osprey {

namespace {

constexpr int kLetters = 128;  // label ids below this are characters; ellipsis dims follow

struct EinsumPlan {
  std::vector<std::vector<int>> inputLabels;  // per input dimension: its label
  std::vector<int> outputLabels;
  std::vector<int> sumLabels;  // labels absent from the output
  std::map<int, int64_t> size;
};

bool isLabel(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Splits one term into letters with an optional ellipsis (-1 in `labels`).
Status parseTerm(const std::string& term, std::vector<int>* labels) {
  labels->clear();
  bool ellipsis = false;
  for (size_t i = 0; i < term.size();) {
    if (term.compare(i, 3, "...") == 0) {
      if (ellipsis) return Status::invalidModel("term '" + term + "' has more than one ellipsis");
      ellipsis = true;
      labels->push_back(-1);
      i += 3;
    } else if (isLabel(term[i])) {
      labels->push_back(static_cast<unsigned char>(term[i]));
      ++i;
    } else {
      return Status::invalidModel("term '" + term + "' holds '" + std::string(1, term[i]) + "', which is not a letter or '...'");
    }
  }
  return Status::ok();
}

Status buildPlan(const Node& node, const TensorViews& in, EinsumPlan* plan) {
  std::string eq;
  for (char c : node.getString("equation", "")) {
    if (c != ' ') eq += c;
  }
  if (eq.empty()) return Status::invalidModel("equation attribute is missing or empty");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',')
      terms.emplace_back();
    else
      terms.back() += c;
  }
  if (terms.size() != in.size())
    return Status::invalidModel("equation '" + eq + "' has " + std::to_string(terms.size()) + " input terms but the op has " +
                                std::to_string(in.size()) + " inputs");
  // Label every input dimension; the ellipsis covers the dims the letters leave over.
  std::vector<std::vector<int>> parsed(in.size());
  int64_t ellipsisRank = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    OSPREY_RETURN_IF_ERROR(parseTerm(terms[i], &parsed[i]));
    const int64_t letters = static_cast<int64_t>(std::count_if(parsed[i].begin(), parsed[i].end(), [](int l) { return l >= 0; }));
    const bool hasEllipsis = letters != static_cast<int64_t>(parsed[i].size());
    if (letters > in[i].rank() || (!hasEllipsis && letters != in[i].rank()))
      return Status::invalidModel("term '" + terms[i] + "' does not match input " + std::to_string(i) + " of shape " +
                                  shapeToString(in[i].shape));
    if (hasEllipsis) ellipsisRank = std::max(ellipsisRank, in[i].rank() - letters);
  }
  std::map<int, int> uses;
  plan->inputLabels.assign(in.size(), {});
  for (size_t i = 0; i < in.size(); ++i) {
    const int64_t covered = in[i].rank() - static_cast<int64_t>(parsed[i].size()) + 1;  // dims under '...'
    std::vector<int>& labels = plan->inputLabels[i];
    for (int l : parsed[i]) {
      if (l >= 0) {
        labels.push_back(l);
        ++uses[l];
        continue;
      }
      for (int64_t k = 0; k < covered; ++k) labels.push_back(kLetters + static_cast<int>(ellipsisRank - covered + k));
    }
    for (size_t d = 0; d < labels.size(); ++d) {
      const int64_t dim = in[i].shape[d];
      auto [it, fresh] = plan->size.emplace(labels[d], dim);
      if (fresh || it->second == dim || dim == 1) continue;
      if (it->second != 1)
        return Status::invalidModel("label '" + (labels[d] < kLetters ? std::string(1, static_cast<char>(labels[d])) : std::string("...")) +
                                    "' has sizes " + std::to_string(it->second) + " and " + std::to_string(dim) +
                                    " (input " + std::to_string(i) + " of shape " + shapeToString(in[i].shape) + ")");
      it->second = dim;
    }
  }
  plan->outputLabels.clear();
  if (arrow == std::string::npos) {
    for (int64_t k = 0; k < ellipsisRank; ++k) plan->outputLabels.push_back(kLetters + static_cast<int>(k));
    for (auto [label, count] : uses)  // std::map iterates in ASCII order
      if (count == 1) plan->outputLabels.push_back(label);
  } else {
    std::vector<int> out;
    OSPREY_RETURN_IF_ERROR(parseTerm(eq.substr(arrow + 2), &out));
    for (int l : out) {
      if (l < 0) {
        for (int64_t k = 0; k < ellipsisRank; ++k) plan->outputLabels.push_back(kLetters + static_cast<int>(k));
        continue;
      }
      if (!uses.count(l))
        return Status::invalidModel("output label '" + std::string(1, static_cast<char>(l)) + "' of '" + eq + "' is in no input");
      if (std::count(out.begin(), out.end(), l) > 1)
        return Status::invalidModel("output label '" + std::string(1, static_cast<char>(l)) + "' of '" + eq + "' is repeated");
      plan->outputLabels.push_back(l);
    }
  }
  plan->sumLabels.clear();
  for (auto& [label, sz] : plan->size)
    if (std::find(plan->outputLabels.begin(), plan->outputLabels.end(), label) == plan->outputLabels.end())
      plan->sumLabels.push_back(label);
  return Status::ok();
}

bool einsumDtype(DataType t) { return t != DataType::Bool && dispatchNumeric(t, [](auto) {}); }

Status einsumShape(const Node& node, const TensorViews& in, TensorViews& out) {
  if (!einsumDtype(in[0].dtype)) return Status::unsupported(dtypeError(in[0], "input 0"));
  OSPREY_RETURN_IF_ERROR(requireSameDtype(in, 0, in.size() - 1));
  EinsumPlan plan;
  OSPREY_RETURN_IF_ERROR(buildPlan(node, in, &plan));
  out[0].dtype = in[0].dtype;
  out[0].shape.clear();
  for (int l : plan.outputLabels) out[0].shape.push_back(plan.size[l]);
  return Status::ok();
}

template <class T>
void einsumFor(const EinsumPlan& plan, const TensorViews& in, TensorView& out) {
  using C = ComputeType<T>;
  using Acc = std::conditional_t<isFloatLike<T>, double, uint64_t>;  // uint64: integers wrap
  // Loop dims: output labels first (row-major over the output), then the summed ones.
  std::vector<int> loop = plan.outputLabels;
  loop.insert(loop.end(), plan.sumLabels.begin(), plan.sumLabels.end());
  const size_t rank = loop.size(), nIn = in.size();
  std::vector<int64_t> sizes(rank);
  for (size_t d = 0; d < rank; ++d) sizes[d] = plan.size.at(loop[d]);
  // strides[i][d]: how far input i moves when loop dim d steps (0 where it broadcasts).
  std::vector<std::vector<int64_t>> strides(nIn, std::vector<int64_t>(rank, 0));
  for (size_t i = 0; i < nIn; ++i) {
    int64_t stride = 1;
    for (size_t d = in[i].shape.size(); d-- > 0;) {
      const int label = plan.inputLabels[i][d];
      const size_t at = std::find(loop.begin(), loop.end(), label) - loop.begin();
      if (in[i].shape[d] != 1) strides[i][at] += stride;
      stride *= in[i].shape[d];
    }
  }
  int64_t outCount = 1, sumCount = 1;
  for (size_t d = 0; d < rank; ++d) (d < plan.outputLabels.size() ? outCount : sumCount) *= sizes[d];
  T* y = out.as<T>();
  if (outCount == 0) return;
  std::vector<const T*> base(nIn);
  for (size_t i = 0; i < nIn; ++i) base[i] = in[i].as<const T>();
  std::vector<int64_t> idx(rank, 0), offset(nIn, 0);
  for (int64_t o = 0; o < outCount; ++o) {
    Acc acc = Acc(0);
    for (int64_t s = 0; s < sumCount; ++s) {
      Acc product = Acc(1);
      for (size_t i = 0; i < nIn; ++i) product = Acc(product * static_cast<Acc>(C(base[i][offset[i]])));
      acc = Acc(acc + product);
      // Step the odometer (the summed dims are innermost, so they wrap back to 0 before o moves on).
      for (size_t d = rank; d-- > 0;) {
        for (size_t i = 0; i < nIn; ++i) offset[i] += strides[i][d];
        if (++idx[d] < sizes[d]) break;
        for (size_t i = 0; i < nIn; ++i) offset[i] -= strides[i][d] * sizes[d];
        idx[d] = 0;
      }
    }
    if (sumCount == 0) {  // nothing to sum: still move on to the next output element
      for (size_t d = plan.outputLabels.size(); d-- > 0;) {
        for (size_t i = 0; i < nIn; ++i) offset[i] += strides[i][d];
        if (++idx[d] < sizes[d]) break;
        for (size_t i = 0; i < nIn; ++i) offset[i] -= strides[i][d] * sizes[d];
        idx[d] = 0;
      }
    }
    y[o] = T(static_cast<C>(acc));
  }
}

Status einsumKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  EinsumPlan plan;
  OSPREY_RETURN_IF_ERROR(buildPlan(node, in, &plan));
  bool done = false;
  dispatchNumeric(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      einsumFor<T>(plan, in, out[0]);
      done = true;
    }
  });
  return done ? Status::ok() : Status::unsupported(dtypeError(in[0], "input 0"));
}

}  // namespace

const OpDef kOpDef_Einsum = {OpType::Einsum, "Einsum", 1, -1, 1, 1, einsumShape, einsumKernel, nullptr, 0, false};

}  // namespace osprey
