#include "ops/activation.h"

#include <limits>

namespace osprey {

namespace {
struct Entry {
  const char* name;
  FusedActivation::Kind kind;
};
const Entry kEntries[] = {
    {"Relu", FusedActivation::Kind::Relu},       {"Clip", FusedActivation::Kind::Clip},
    {"LeakyRelu", FusedActivation::Kind::LeakyRelu}, {"Sigmoid", FusedActivation::Kind::Sigmoid},
    {"HardSigmoid", FusedActivation::Kind::HardSigmoid}, {"HardSwish", FusedActivation::Kind::HardSwish},
    {"Tanh", FusedActivation::Kind::Tanh},       {"Elu", FusedActivation::Kind::Elu},
    {"Gelu", FusedActivation::Kind::Gelu},       {"Swish", FusedActivation::Kind::Swish},
};
}  // namespace

Status FusedActivation::fromNode(const Node& node, FusedActivation* out) {
  *out = FusedActivation();
  const Attribute* a = node.attr("activation");
  if (!a) return Status::ok();
  for (auto& e : kEntries) {
    if (a->s == e.name) {
      out->kind = e.kind;
      std::vector<float> p = node.getFloats("activation_params");
      if (p.size() > 0) out->a = p[0];
      if (p.size() > 1) out->b = p[1];
      return Status::ok();
    }
  }
  return Status::invalidModel("unknown fused activation '" + a->s + "'");
}

bool FusedActivation::fromOp(const Node& node, FusedActivation* out) {
  *out = FusedActivation();
  switch (node.type) {
    case OpType::Relu: out->kind = Kind::Relu; return true;
    case OpType::LeakyRelu: out->kind = Kind::LeakyRelu; out->a = node.getFloat("alpha", 0.01f); return true;
    case OpType::Sigmoid: out->kind = Kind::Sigmoid; return true;
    case OpType::HardSigmoid:
      out->kind = Kind::HardSigmoid;
      out->a = node.getFloat("alpha", 0.2f);
      out->b = node.getFloat("beta", 0.5f);
      return true;
    case OpType::HardSwish: out->kind = Kind::HardSwish; return true;
    case OpType::Tanh: out->kind = Kind::Tanh; return true;
    case OpType::Elu: out->kind = Kind::Elu; out->a = node.getFloat("alpha", 1.f); return true;
    case OpType::Gelu: out->kind = Kind::Gelu; out->a = node.getString("approximate", "none") == "tanh" ? 1.f : 0.f; return true;
    case OpType::Swish: out->kind = Kind::Swish; out->a = node.getFloat("alpha", 1.f); return true;
    default: return false;  // Clip's bounds are inputs: the converter handles it
  }
}

void FusedActivation::store(Node& node) const {
  for (auto& e : kEntries) {
    if (e.kind == kind) {
      node.setString("activation", e.name);
      node.setFloats("activation_params", {a, b});
      return;
    }
  }
}

}  // namespace osprey
