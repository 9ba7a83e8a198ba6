#include "runtime/model_io.h"

#include <cstdint>
#include <fstream>
#include <iterator>

#include "ops/op_def.h"
#include "osprey_generated.h"

namespace osprey {

namespace {

constexpr int kMaxGraphDepth = 32;

// owner: keeps the buffer being read alive, when constants may point into it (null: they are copied).
using BufferOwner = std::shared_ptr<const void>;
Status readGraph(const fb::Graph* g, Graph* out, int depth, const BufferOwner& owner);

// FlatBuffers 2.0's verifier checks that a vector's length field is 4-byte aligned, not that its
// 8-byte elements are: a damaged offset would have them read misaligned.
template <class T>
bool elementsAligned(const flatbuffers::Vector<T>* v) {
  return !v || v->size() == 0 || reinterpret_cast<uintptr_t>(v->data()) % alignof(T) == 0;
}

Status readTensor(const fb::Tensor* t, TensorInfo* out, const BufferOwner& owner) {
  if (!t) return Status::invalidModel("null tensor entry");
  out->name = t->name() ? t->name()->str() : "";
  // An intermediate's dtype may be left for resize to find; a sequence is never a constant.
  const bool notConstant = (t->dtype() == 0 || t->dtype() == static_cast<int>(DataType::Sequence)) && !t->is_constant();
  if (!notConstant && !isKnownDataType(t->dtype())) return Status::invalidModel("tensor '" + out->name + "' has an unknown dtype " + std::to_string(t->dtype()));
  out->dtype = static_cast<DataType>(t->dtype());
  if (t->element_dtype() != 0 && !isKnownDataType(t->element_dtype()) && t->element_dtype() != static_cast<int>(DataType::Map))
    return Status::invalidModel("tensor '" + out->name + "' has an unknown element dtype " + std::to_string(t->element_dtype()));
  out->elementDtype = static_cast<DataType>(t->element_dtype());
  out->optional = t->is_optional();
  if (!elementsAligned(t->shape())) return Status::invalidModel("corrupt Osprey model: the shape of tensor '" + out->name + "' is misaligned");
  out->hasShape = t->shape() != nullptr;
  if (t->shape()) out->shape.assign(t->shape()->begin(), t->shape()->end());
  if (t->dim_names())
    for (auto* s : *t->dim_names()) out->dimNames.push_back(s ? s->str() : "");
  out->isConstant = t->is_constant();
  if (out->isConstant) {
    if (t->data()) out->data = ConstantData::within(owner, t->data()->data(), t->data()->size());
    if (t->strings())
      for (auto* s : *t->strings()) out->data.strings.push_back(s ? s->str() : "");
  }
  return Status::ok();
}

Status readAttribute(const fb::Attribute* a, Attribute* out, int depth, const BufferOwner& owner) {
  out->name = a->name()->str();
  if (a->kind() < fb::AttrKind_MIN || a->kind() > fb::AttrKind_MAX)
    return Status::invalidModel("attribute '" + out->name + "' has an unknown kind");
  out->kind = static_cast<Attribute::Kind>(a->kind());
  if (!elementsAligned(a->ints()))
    return Status::invalidModel("corrupt Osprey model: the ints of attribute '" + out->name + "' are misaligned");
  out->i = a->i();
  out->f = a->f();
  if (a->s()) out->s = a->s()->str();
  if (a->ints()) out->ints.assign(a->ints()->begin(), a->ints()->end());
  if (a->floats()) out->floats.assign(a->floats()->begin(), a->floats()->end());
  if (a->strings())
    for (auto* s : *a->strings()) out->strings.push_back(s ? s->str() : "");
  if (a->t()) {
    out->tensor = std::make_shared<TensorInfo>();
    OSPREY_RETURN_IF_ERROR(readTensor(a->t(), out->tensor.get(), owner));
  }
  if (a->g()) {
    if (depth >= kMaxGraphDepth) return Status::invalidModel("subgraphs nested too deeply");
    out->graph = std::make_shared<Graph>();
    OSPREY_RETURN_IF_ERROR(readGraph(a->g(), out->graph.get(), depth + 1, owner));
  }
  return Status::ok();
}

Status readGraph(const fb::Graph* g, Graph* out, int depth, const BufferOwner& owner) {
  if (!g) return Status::invalidModel("model has no graph");
  if (g->tensors())
    for (auto* t : *g->tensors()) {
      TensorInfo info;
      OSPREY_RETURN_IF_ERROR(readTensor(t, &info, owner));
      out->tensors.push_back(std::move(info));
    }
  if (g->ops())
    for (auto* op : *g->ops()) {
      if (!op) return Status::invalidModel("null op entry");
      Node node;
      node.name = op->name() ? op->name()->str() : "";
      node.type = opTypeFromName(op->type()->str());
      if (node.type == OpType::Invalid)
        return Status::invalidModel("op '" + node.name + "' has type '" + op->type()->str() +
                                    "', which this build of Osprey does not know");
      if (op->inputs()) node.inputs.assign(op->inputs()->begin(), op->inputs()->end());
      if (op->outputs()) node.outputs.assign(op->outputs()->begin(), op->outputs()->end());
      if (op->attributes())
        for (auto* a : *op->attributes()) {
          if (!a) return Status::invalidModel("null attribute in " + node.describe());
          Attribute attr;
          OSPREY_RETURN_IF_ERROR_IN(readAttribute(a, &attr, depth, owner), node.describe());
          node.attrs.push_back(std::move(attr));
        }
      out->nodes.push_back(std::move(node));
    }
  if (g->inputs()) out->inputs.assign(g->inputs()->begin(), g->inputs()->end());
  if (g->outputs()) out->outputs.assign(g->outputs()->begin(), g->outputs()->end());
  return Status::ok();
}

flatbuffers::Offset<fb::Graph> writeGraph(flatbuffers::FlatBufferBuilder& b, const Graph& g);

flatbuffers::Offset<fb::Tensor> writeTensor(flatbuffers::FlatBufferBuilder& b, const TensorInfo& t) {
  auto name = b.CreateString(t.name);
  auto shape = t.hasShape ? b.CreateVector(t.shape) : 0;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>> dimNames = 0, strings = 0;
  if (!t.dimNames.empty()) dimNames = b.CreateVectorOfStrings(t.dimNames);
  flatbuffers::Offset<flatbuffers::Vector<uint8_t>> data = 0;
  if (t.isConstant) {
    if (t.dtype == DataType::String) {
      strings = b.CreateVectorOfStrings(t.data.strings);
    } else {
      b.ForceVectorAlignment(t.data.size, 1, 16);
      data = b.CreateVector(t.data.bytes.get(), t.data.size);
    }
  }
  return fb::CreateTensor(b, name, static_cast<int>(t.dtype), shape, dimNames, data, strings, t.isConstant,
                          static_cast<int>(t.elementDtype), t.optional);
}

flatbuffers::Offset<fb::Attribute> writeAttribute(flatbuffers::FlatBufferBuilder& b, const Attribute& a) {
  auto name = b.CreateString(a.name);
  auto s = a.kind == Attribute::Kind::String ? b.CreateString(a.s) : 0;
  auto ints = a.ints.empty() && a.kind != Attribute::Kind::Ints ? 0 : b.CreateVector(a.ints);
  auto floats = a.floats.empty() && a.kind != Attribute::Kind::Floats ? 0 : b.CreateVector(a.floats);
  auto strings = a.strings.empty() && a.kind != Attribute::Kind::Strings ? 0 : b.CreateVectorOfStrings(a.strings);
  auto t = a.tensor ? writeTensor(b, *a.tensor) : 0;
  auto g = a.graph ? writeGraph(b, *a.graph) : 0;
  return fb::CreateAttribute(b, name, static_cast<fb::AttrKind>(a.kind), a.i, a.f, s, ints, floats, strings, t, g);
}

flatbuffers::Offset<fb::Graph> writeGraph(flatbuffers::FlatBufferBuilder& b, const Graph& g) {
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  for (auto& t : g.tensors) tensors.push_back(writeTensor(b, t));
  std::vector<flatbuffers::Offset<fb::Op>> ops;
  for (auto& n : g.nodes) {
    std::vector<flatbuffers::Offset<fb::Attribute>> attrs;
    for (auto& a : n.attrs) attrs.push_back(writeAttribute(b, a));
    ops.push_back(fb::CreateOp(b, b.CreateString(opTypeName(n.type)), b.CreateString(n.name), b.CreateVector(n.inputs),
                               b.CreateVector(n.outputs), b.CreateVector(attrs)));
  }
  return fb::CreateGraph(b, b.CreateVector(tensors), b.CreateVector(ops), b.CreateVector(g.inputs),
                         b.CreateVector(g.outputs));
}

}  // namespace

Status readModel(const uint8_t* data, size_t size, Model* out, std::shared_ptr<const void> owner) {
  // Files are size-prefixed so that a truncated file is caught even where the cut removes
  // only padding the verifier would not miss.
  if (!data || size < 12) return Status::invalidModel("not an Osprey model: file is empty or too short");
  if (!flatbuffers::BufferHasIdentifier(data, fb::ModelIdentifier(), /*size_prefixed=*/true))
    return Status::invalidModel("not an Osprey model: the file identifier is not 'OSP1'");
  const size_t declared = flatbuffers::GetPrefixedSize(data) + sizeof(flatbuffers::uoffset_t);
  if (declared != size)
    return Status::invalidModel("corrupt Osprey model: the file holds " + std::to_string(size) + " bytes but declares " +
                                std::to_string(declared) + " (truncated or damaged)");
  flatbuffers::Verifier verifier(data, size, /*max_depth=*/128, /*max_tables=*/100000000);
  if (!fb::VerifySizePrefixedModelBuffer(verifier))
    return Status::invalidModel("corrupt Osprey model: the FlatBuffers verifier rejected the file (truncated or damaged)");
  const fb::Model* m = fb::GetSizePrefixedModel(data);
  if (m->format_version() > kModelFormatVersion)
    return Status::invalidModel("model format version " + std::to_string(m->format_version()) +
                                " is newer than this build reads (" + std::to_string(kModelFormatVersion) + ")");
  out->formatVersion = m->format_version();
  out->producer = m->producer() ? m->producer()->str() : "";
  OSPREY_RETURN_IF_ERROR(readGraph(m->graph(), &out->graph, 0, owner));
  OSPREY_RETURN_IF_ERROR(out->graph.validate());
  return checkOpArity(out->graph);
}

Status writeModel(const Model& model, std::vector<uint8_t>* out) {
  flatbuffers::FlatBufferBuilder b(1 << 20);
  auto graph = writeGraph(b, model.graph);
  auto root = fb::CreateModel(b, kModelFormatVersion, b.CreateString(model.producer), graph);
  fb::FinishSizePrefixedModelBuffer(b, root);
  out->assign(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  return Status::ok();
}

}  // namespace osprey
