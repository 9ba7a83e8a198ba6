#include "converter/tensorflow/tf_context.h"

#include <cstring>

#include "converter/tflite/layout.h"

namespace osprey::tf {

std::string canonicalRef(const std::string& input) {
  const size_t colon = input.rfind(':');
  if (colon != std::string::npos && colon + 1 < input.size() &&
      input.find_first_not_of("0123456789", colon + 1) == std::string::npos)
    return input;
  return input + ":0";
}

std::string refNode(const std::string& ref) { return ref.substr(0, ref.rfind(':')); }

int64_t NodeView::attrInt(const std::string& key, int64_t fallback) const {
  const AttrValue* a = attr(key);
  return a && a->kind == AttrValue::Kind::I ? a->i : fallback;
}
float NodeView::attrFloat(const std::string& key, float fallback) const {
  const AttrValue* a = attr(key);
  return a && a->kind == AttrValue::Kind::F ? a->f : fallback;
}
bool NodeView::attrBool(const std::string& key, bool fallback) const {
  const AttrValue* a = attr(key);
  return a && a->kind == AttrValue::Kind::B ? a->b : fallback;
}
std::string NodeView::attrString(const std::string& key, const std::string& fallback) const {
  const AttrValue* a = attr(key);
  return a && a->kind == AttrValue::Kind::S ? a->s : fallback;
}
int32_t NodeView::attrType(const std::string& key, int32_t fallback) const {
  const AttrValue* a = attr(key);
  return a && a->kind == AttrValue::Kind::Type ? a->type : fallback;
}
std::vector<int64_t> NodeView::attrInts(const std::string& key) const {
  const AttrValue* a = attr(key);
  return a && a->kind == AttrValue::Kind::List ? a->listI : std::vector<int64_t>{};
}

Status NodeView::requireInputs(size_t count) const {
  if (inputs.size() < count)
    return error("has " + std::to_string(inputs.size()) + " inputs; it needs " + std::to_string(count));
  return Status::ok();
}

Status ImportContext::find(const std::string& ref, Value** v) {
  auto it = values_.find(ref);
  if (it == values_.end() && outer_ && outer_->isDefined(ref)) {
    int source;
    OSPREY_RETURN_IF_ERROR(outer_->asTf(ref, &source));
    TensorInfo t;
    t.name = uniqueName(refNode(ref));
    t.dtype = outer_->graph().tensors[source].dtype;
    t.hasShape = false;
    Value captured;
    captured.index = graph_->addTensor(std::move(t));
    captured.rank = outer_->rank(ref);
    graph_->inputs.push_back(captured.index);
    captured_.push_back(source);
    it = values_.emplace(ref, captured).first;
  }
  if (it == values_.end()) return Status::invalidModel("value '" + ref + "' is read before any node produces it");
  *v = &it->second;
  return Status::ok();
}

Status ImportContext::value(const std::string& ref, int* index, Held* held) {
  Value* v;
  OSPREY_RETURN_IF_ERROR(find(ref, &v));
  *index = v->index;
  if (held) *held = v->held;
  return Status::ok();
}

Held ImportContext::heldAs(const std::string& ref) const {
  auto it = values_.find(ref);
  return it == values_.end() ? Held::AsTf : it->second.held;
}

int ImportContext::rank(const std::string& ref) const {
  auto it = values_.find(ref);
  return it == values_.end() ? -1 : it->second.rank;
}

const TensorInfo* ImportContext::constant(const std::string& ref) const {
  auto it = values_.find(ref);
  if (it == values_.end() || it->second.held != Held::AsTf) return nullptr;
  const TensorInfo& t = graph_->tensors[it->second.index];
  return t.isConstant ? &t : nullptr;
}

Status ImportContext::constantInts(const std::string& ref, std::vector<int64_t>* out) const {
  const TensorInfo* c = constant(ref);
  if (!c) return Status::unsupported("'" + ref + "' must be a constant");
  const size_t n = static_cast<size_t>(shapeElements(c->shape));
  out->resize(n);
  if (c->dtype == DataType::Int32) {
    for (size_t i = 0; i < n; ++i) {
      int32_t v;
      std::memcpy(&v, c->data.bytes.get() + i * 4, 4);
      (*out)[i] = v;
    }
  } else if (c->dtype == DataType::Int64) {
    if (n) std::memcpy(out->data(), c->data.bytes.get(), n * 8);
  } else {
    return Status::invalidModel("'" + ref + "' must hold int32 or int64 values");
  }
  return Status::ok();
}

Status ImportContext::constantFloats(const std::string& ref, std::vector<float>* out) const {
  const TensorInfo* c = constant(ref);
  if (!c) return Status::unsupported("'" + ref + "' must be a constant");
  if (c->dtype != DataType::Float32) return Status::invalidModel("'" + ref + "' must hold float32 values");
  out->resize(static_cast<size_t>(shapeElements(c->shape)));
  if (!out->empty()) std::memcpy(out->data(), c->data.bytes.get(), out->size() * 4);
  return Status::ok();
}

Status ImportContext::asTf(const std::string& ref, int* index) {
  Value* v;
  OSPREY_RETURN_IF_ERROR(find(ref, &v));
  if (v->held == Held::AsTf) {
    *index = v->index;
    return Status::ok();
  }
  if (v->tfCopy < 0) {
    const int source = v->index;
    const int copy = temp(refNode(ref));
    addNode(OpType::Transpose, refNode(ref) + "_to_nhwc", {source}, {copy}).setInts("perm", kToNhwc);
    values_[ref].tfCopy = copy;  // addNode may not move values_, but keep the lookup explicit
  }
  *index = values_[ref].tfCopy;
  return Status::ok();
}

Status ImportContext::asNchw(const std::string& ref, int* index) {
  Value* v;
  OSPREY_RETURN_IF_ERROR(find(ref, &v));
  if (v->held == Held::Nchw) {
    *index = v->index;
    return Status::ok();
  }
  if (v->nchwCopy >= 0) {
    *index = v->nchwCopy;
    return Status::ok();
  }
  int copy;
  if (const TensorInfo* c = constant(ref); c && c->shape.size() <= 4) {
    Shape padded = c->shape;
    padded.insert(padded.begin(), 4 - padded.size(), 1);
    std::vector<uint8_t> moved;
    tfl::permuteBytes(c->data.bytes.get(), padded, dataTypeSize(c->dtype), kToNchw, &moved);
    const DataType dtype = c->dtype;
    copy = addConstant(c->name + ".nchw", dtype, tfl::permuteShape(padded, kToNchw), moved.data(), moved.size());
  } else if (v->rank >= 0 && v->rank < 4) {
    // Broadcast like a constant: leading 1s, then NCHW. What constants feed (a batch norm's
    // scale computed from its variance) folds to a constant later.
    const int source = v->index;
    std::vector<int64_t> lead;
    for (int i = 0; i < 4 - v->rank; ++i) lead.push_back(i);
    const int padded = temp(refNode(ref) + ".4d");
    addNode(OpType::Unsqueeze, refNode(ref) + "_to_4d", {source, addInt64Constant(refNode(ref) + "_lead", lead)}, {padded});
    copy = temp(refNode(ref) + ".nchw");
    addNode(OpType::Transpose, refNode(ref) + "_to_nchw", {padded}, {copy}).setInts("perm", kToNchw);
  } else {
    if (v->rank != 4 && v->rank != -1)
      return Status::invalidModel("value '" + ref + "' of rank " + std::to_string(v->rank) +
                                  " feeds an NHWC image op, which needs 4 dimensions");
    const int source = v->index;
    copy = temp(refNode(ref) + ".nchw");
    addNode(OpType::Transpose, refNode(ref) + "_to_nchw", {source}, {copy}).setInts("perm", kToNchw);
  }
  values_[ref].nchwCopy = copy;
  *index = copy;
  return Status::ok();
}

int ImportContext::define(const NodeView& node, int k, Held held, int rank) {
  const std::string base = k == 0 ? node.name() : node.name() + ":" + std::to_string(k);
  const int index = temp(held == Held::Nchw ? base + ".nchw" : base);
  bind(node, k, index, held, rank);
  return index;
}

void ImportContext::bind(const NodeView& node, int k, int index, Held held, int rank) {
  Value v;
  v.index = index;
  v.held = held;
  v.rank = rank;
  values_[node.name() + ":" + std::to_string(k)] = v;
}

Status ImportContext::alias(const NodeView& node, int k, const std::string& ref) {
  Value* v;
  OSPREY_RETURN_IF_ERROR(find(ref, &v));
  const Value copy = *v;
  values_[node.name() + ":" + std::to_string(k)] = copy;
  // Two names for one Conv output: a fold through one would change what the other reads.
  foldableConvs_.erase(copy.index);
  return Status::ok();
}

}  // namespace osprey::tf
