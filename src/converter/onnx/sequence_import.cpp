// ONNX sequences and optionals: the Optional op, and which tensors hold such values.
#include <algorithm>

#include "converter/onnx/import_context.h"

namespace osprey::onnx {

Status importOptional(ImportContext& ctx, const NodeProto& node, int64_t) {
  std::vector<int> ins, outs;
  for (auto& name : node.inputs) ins.push_back(ctx.tensor(name));
  while (!ins.empty() && ins.back() == -1) ins.pop_back();
  for (auto& name : node.outputs) outs.push_back(ctx.tensor(name));
  ctx.addNode(OpType::Optional, node.name, ins, outs);
  return Status::ok();
}

namespace {

void makeSequence(TensorInfo& t, DataType element) {
  t.dtype = DataType::Sequence;
  if (element != DataType::Undefined) t.elementDtype = element;
  t.hasShape = false;
  t.shape.clear();
  t.dimNames.clear();
}

// Gives `to` the kind of `from` (a sequence, an optional) where `from` has one.
void copyKind(const TensorInfo& from, TensorInfo& to, bool optional) {
  if (from.dtype == DataType::Sequence) makeSequence(to, from.elementDtype);
  to.optional = to.optional || optional;
}

}  // namespace

void markHostValues(Graph& g) {
  auto input = [&](const Node& n, size_t i) -> const TensorInfo* {
    return i < n.inputs.size() && n.inputs[i] >= 0 ? &g.tensors[n.inputs[i]] : nullptr;
  };
  for (const Node& n : g.nodes) {
    auto out = [&](size_t i) -> TensorInfo* {
      return i < n.outputs.size() && n.outputs[i] >= 0 ? &g.tensors[n.outputs[i]] : nullptr;
    };
    switch (n.type) {
      case OpType::SequenceEmpty:
        if (TensorInfo* o = out(0)) makeSequence(*o, static_cast<DataType>(n.getInt("dtype", 1)));
        break;
      case OpType::SequenceConstruct:
      case OpType::SequenceInsert:
      case OpType::SplitToSequence:
        if (TensorInfo* o = out(0)) {
          const TensorInfo* item = input(n, n.type == OpType::SequenceInsert ? 1 : 0);
          makeSequence(*o, item ? item->dtype : DataType::Undefined);
        }
        break;
      case OpType::SequenceErase:
        if (TensorInfo* o = out(0)) makeSequence(*o, input(n, 0) ? input(n, 0)->elementDtype : DataType::Undefined);
        break;
      case OpType::SequenceAt:
        if (TensorInfo* o = out(0); o && input(n, 0) && o->dtype == DataType::Undefined) o->dtype = input(n, 0)->elementDtype;
        break;
      case OpType::ZipMap:
        if (TensorInfo* o = out(0)) makeSequence(*o, DataType::Map);
        break;
      case OpType::SequenceMap:
        for (size_t i = 0; i < n.outputs.size(); ++i)
          if (TensorInfo* o = out(i)) makeSequence(*o, DataType::Undefined);
        break;
      case OpType::Optional:
        if (TensorInfo* o = out(0)) {
          if (const TensorInfo* in = input(n, 0)) copyKind(*in, *o, true);
          o->optional = true;
        }
        break;
      case OpType::OptionalGetElement:
        if (TensorInfo* o = out(0); o && input(n, 0)) copyKind(*input(n, 0), *o, false);
        break;
      case OpType::Identity:
        if (TensorInfo* o = out(0); o && input(n, 0)) copyKind(*input(n, 0), *o, input(n, 0)->optional);
        break;
      case OpType::If:
        for (const char* branch : {"then_branch", "else_branch"}) {
          const Attribute* a = n.attr(branch);
          if (!a || !a->graph) continue;
          for (size_t i = 0; i < n.outputs.size() && i < a->graph->outputs.size(); ++i) {
            const TensorInfo& declared = a->graph->tensors[a->graph->outputs[i]];
            if (TensorInfo* o = out(i)) copyKind(declared, *o, declared.optional);
          }
        }
        break;
      case OpType::Loop: {
        // Loop-carried values keep the kind of their initial value or of the body's output.
        const Attribute* a = n.attr("body");
        const size_t carried = n.inputs.size() - std::min<size_t>(n.inputs.size(), 2 + n.getInt("num_captured", 0));
        for (size_t i = 0; i < carried && i < n.outputs.size(); ++i) {
          TensorInfo* o = out(i);
          if (!o) continue;
          if (const TensorInfo* in = input(n, i + 2)) copyKind(*in, *o, in->optional);
          if (a && a->graph && i + 1 < a->graph->outputs.size()) {
            const TensorInfo& declared = a->graph->tensors[a->graph->outputs[i + 1]];
            copyKind(declared, *o, declared.optional);
          }
        }
        break;
      }
      default: break;
    }
  }
}

}  // namespace osprey::onnx
