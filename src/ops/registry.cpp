#include <string>
#include <unordered_map>

#include "ops/op_def.h"

namespace osprey {

namespace {
const OpDef* const kOpDefs[] = {
#define OSPREY_OP(name) &kOpDef_##name,
#include "core/ops.def"
#undef OSPREY_OP
};
}  // namespace

const OpDef& opDef(OpType type) { return *kOpDefs[static_cast<int>(type)]; }

Status checkOpArity(const Graph& graph) {
  for (const Node& n : graph.nodes) {
    const OpDef& def = opDef(n.type);
    int ins = static_cast<int>(n.inputs.size()), outs = static_cast<int>(n.outputs.size());
    if (ins < def.minInputs || (def.maxInputs >= 0 && ins > def.maxInputs))
      return Status::invalidModel(n.describe() + " has " + std::to_string(ins) + " inputs; " + def.name + " takes " +
                                  std::to_string(def.minInputs) + " to " +
                                  (def.maxInputs < 0 ? std::string("any number") : std::to_string(def.maxInputs)));
    if (outs < def.minOutputs || (def.maxOutputs >= 0 && outs > def.maxOutputs))
      return Status::invalidModel(n.describe() + " has " + std::to_string(outs) + " outputs; " + def.name +
                                  " gives " + std::to_string(def.minOutputs) + " to " +
                                  (def.maxOutputs < 0 ? std::string("any number") : std::to_string(def.maxOutputs)));
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] == -1 && static_cast<int>(i) < def.minInputs && !(def.mayBeEmpty >> i & 1))
        return Status::invalidModel(n.describe() + " is missing its required input " + std::to_string(i));
  }
  return Status::ok();
}

}  // namespace osprey
