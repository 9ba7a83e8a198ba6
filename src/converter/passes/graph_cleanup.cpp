#include <algorithm>
#include <string>
#include <unordered_set>

#include "converter/passes/passes.h"

namespace osprey::passes {

std::vector<int> readerCounts(const Graph& g) {
  std::vector<int> n(g.tensors.size(), 0);
  for (auto& node : g.nodes)
    for (int i : node.inputs)
      if (i >= 0) ++n[i];
  for (int o : g.outputs) ++n[o];
  return n;
}

std::vector<int> producers(const Graph& g) {
  std::vector<int> p(g.tensors.size(), -1);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (int o : g.nodes[k].outputs)
      if (o >= 0) p[o] = static_cast<int>(k);
  return p;
}

namespace {
bool isGraphIo(const Graph& g, int t) {
  return std::find(g.outputs.begin(), g.outputs.end(), t) != g.outputs.end() ||
         std::find(g.inputs.begin(), g.inputs.end(), t) != g.inputs.end();
}
}  // namespace

int removeIdentities(Graph& g) {
  int removed = 0;
  std::vector<Node> kept;
  std::vector<int> replace(g.tensors.size());
  for (size_t i = 0; i < replace.size(); ++i) replace[i] = static_cast<int>(i);
  auto resolve = [&](int t) { return t < 0 ? t : replace[t]; };
  for (auto& node : g.nodes) {
    for (int& i : node.inputs) i = resolve(i);
    bool passThrough = node.type == OpType::Identity ||
                       (node.type == OpType::Dropout && (node.outputs.size() < 2 || node.outputs[1] < 0) &&
                        (node.inputs.size() < 3 || node.inputs[2] < 0));
    // A graph output keeps its name, so an Identity that writes one stays.
    if (passThrough && !node.inputs.empty() && node.inputs[0] >= 0 && !isGraphIo(g, node.outputs[0])) {
      replace[node.outputs[0]] = node.inputs[0];
      ++removed;
      continue;
    }
    kept.push_back(std::move(node));
  }
  g.nodes = std::move(kept);
  return removed;
}

int removeDeadCode(Graph& g) {
  int removed = 0;
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<int> readers = readerCounts(g);
    for (size_t k = g.nodes.size(); k-- > 0;) {
      bool used = false;
      for (int o : g.nodes[k].outputs) used |= o >= 0 && readers[o] > 0;
      if (!used) {
        for (int i : g.nodes[k].inputs)
          if (i >= 0) --readers[i];
        g.nodes.erase(g.nodes.begin() + static_cast<long>(k));
        ++removed;
        changed = true;
      }
    }
  }
  return removed;
}

void compactTensors(Graph& g) {
  std::vector<bool> used(g.tensors.size(), false);
  for (int i : g.inputs) used[i] = true;
  for (int o : g.outputs) used[o] = true;
  for (auto& n : g.nodes) {
    for (int i : n.inputs)
      if (i >= 0) used[i] = true;
    for (int o : n.outputs)
      if (o >= 0) used[o] = true;
  }
  std::vector<int> remap(g.tensors.size(), -1);
  std::vector<TensorInfo> kept;
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    if (!used[i]) continue;
    remap[i] = static_cast<int>(kept.size());
    kept.push_back(std::move(g.tensors[i]));
  }
  g.tensors = std::move(kept);
  auto map = [&](std::vector<int>& v) {
    for (int& i : v)
      if (i >= 0) i = remap[i];
  };
  map(g.inputs);
  map(g.outputs);
  for (auto& n : g.nodes) {
    map(n.inputs);
    map(n.outputs);
  }
  // Names the passes made ("w_bnfolded" for two convolutions sharing w ...) may repeat; sessions
  // find tensors by name (Graph::validate refuses repeats). The graph's inputs and outputs keep
  // theirs, another tensor gets a suffix.
  std::unordered_set<std::string> taken;
  std::vector<bool> fixed(g.tensors.size(), false);
  for (const std::vector<int>* ends : {&g.inputs, &g.outputs})
    for (int i : *ends)
      if (i >= 0 && taken.insert(g.tensors[i].name).second) fixed[i] = true;
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    std::string& name = g.tensors[i].name;
    if (fixed[i] || name.empty() || taken.insert(name).second) continue;
    const std::string base = name;
    for (int k = 1; !taken.insert(name = base + "__" + std::to_string(k)).second; ++k) {
    }
  }
}

}  // namespace osprey::passes
