// Layout choice: a backend may keep its 4-D activations in another layout than NCHW (NHWC for
// tensor-core convolution, packed channels for SIMD) where every execution touching them can
// run in it. Tensors that must share a layout (those of one execution) form groups; a group
// takes the backend's layout only when all of its executions agree, and stays NCHW otherwise.
// Copies between backends convert (onCopyBuffer), so groups end at them; so do graph inputs
// and outputs, which run() converts from and to the caller's layout, and executions that bridge
// layouts (Execution::bridgesLayouts), whose NCHW-wanting tensors stay outside the group.
// Executions that adapt to any layout by converting (Execution::joinsLayoutGroups false) join no
// group. A group takes its layout only where executions that favor it (Execution::favorsLayout)
// are at least as many as the adapting ones that would convert its tensors.
#include <unordered_map>
#include <unordered_set>

#include "core/layout.h"
#include "runtime/session_impl.h"

namespace osprey {

namespace {

class TensorGroups {
 public:
  RuntimeTensor* find(RuntimeTensor* t) {
    auto it = parent_.find(t);
    if (it == parent_.end()) {
      parent_[t] = t;
      return t;
    }
    if (it->second == t) return t;
    RuntimeTensor* root = find(it->second);
    parent_[t] = root;
    return root;
  }
  void unite(RuntimeTensor* a, RuntimeTensor* b) { parent_[find(a)] = find(b); }
  bool has(RuntimeTensor* t) const { return parent_.count(t) != 0; }
  std::vector<RuntimeTensor*> members() const {
    std::vector<RuntimeTensor*> all;
    for (auto& [t, p] : parent_) all.push_back(t);
    return all;
  }

 private:
  std::unordered_map<RuntimeTensor*, RuntimeTensor*> parent_;
};

}  // namespace

void SessionImpl::chooseLayouts() {
  std::unordered_set<const RuntimeTensor*> weights;  // device mirrors of constants: packed by their executions
  for (const auto& cmd : commands_)
    if (cmd.isCopy && cmd.inputs[0]->constData) weights.insert(cmd.outputs[0]);

  TensorGroups groups;
  std::unordered_map<RuntimeTensor*, Layout> wish;  // per group root, after the pass below
  std::unordered_set<RuntimeTensor*> refused;       // tensors whose group must stay NCHW
  struct Bound {
    const Command* cmd;
    Layout layout;
    RuntimeTensor* member;
  };
  std::vector<Bound> bound;
  for (const auto& cmd : commands_) {
    if (cmd.isCopy || !cmd.execution || !cmd.execution->joinsLayoutGroups(cmd.inputs, cmd.outputs)) continue;
    std::vector<RuntimeTensor*> activations;
    for (const auto* list : {&cmd.inputs, &cmd.outputs})
      for (RuntimeTensor* t : *list)
        if (t && !t->constData && !weights.count(t) && t->shape.size() == 4) activations.push_back(t);
    Layout layout = Layout::NCHW;
    bool conflict = false;
    for (RuntimeTensor* t : activations) {
      const Layout wanted = cmd.backend->activationLayout(*t);
      if (wanted == Layout::NCHW) continue;
      conflict |= layout != Layout::NCHW && layout != wanted;
      layout = wanted;
    }
    if (layout == Layout::NCHW) continue;
    const bool bridge = !conflict && cmd.execution->bridgesLayouts();
    RuntimeTensor* first = nullptr;
    for (RuntimeTensor* t : activations) {
      if (!layoutMatters(t->shape, layout)) continue;
      if (bridge && cmd.backend->activationLayout(*t) == Layout::NCHW) continue;  // stays NCHW on its own
      if (first) groups.unite(t, first);
      else first = t;
      if (conflict || cmd.backend->activationLayout(*t) != layout) refused.insert(t);
    }
    if (first) bound.push_back({&cmd, layout, first});
  }
  for (RuntimeTensor* t : refused) wish[groups.find(t)] = Layout::NCHW;
  // Per group: its executions that favor its layout, and those outside it that convert its
  // tensors around themselves; a group takes its layout only where the first outnumber the second.
  std::unordered_map<RuntimeTensor*, int> favoring, converting;
  for (const Bound& b : bound) {
    RuntimeTensor* root = groups.find(b.member);
    auto it = wish.find(root);
    if (it == wish.end()) it = wish.emplace(root, b.layout).first;
    const Execution& exe = *b.cmd->execution;
    if (it->second != b.layout || !exe.supportsLayout(b.layout, b.cmd->inputs, b.cmd->outputs))
      it->second = Layout::NCHW;
    else if (exe.favorsLayout(b.layout, b.cmd->inputs, b.cmd->outputs))
      ++favoring[root];
  }
  for (const auto& cmd : commands_) {
    if (cmd.isCopy || !cmd.execution || cmd.execution->joinsLayoutGroups(cmd.inputs, cmd.outputs)) continue;
    std::unordered_set<RuntimeTensor*> roots;
    for (const auto* list : {&cmd.inputs, &cmd.outputs})
      for (RuntimeTensor* t : *list)
        if (t && groups.has(t)) roots.insert(groups.find(t));
    for (RuntimeTensor* root : roots) ++converting[root];
  }
  for (RuntimeTensor* t : groups.members()) {
    RuntimeTensor* root = groups.find(t);
    const int favors = favoring.count(root) ? favoring[root] : 0, converts = converting.count(root) ? converting[root] : 0;
    const Layout chosen = favors > 0 && favors >= converts ? wish[root] : Layout::NCHW;
    if (chosen == Layout::NCHW) continue;
    t->layout = chosen;
    ++stats_.relaidTensors;
  }
}

}  // namespace osprey
