// The net walk of the Caffe frontend (caffe_import.h): inputs, each layer through its importer,
// outputs; the CaffeContext the importers share.
#include "converter/caffe/caffe_import.h"

#include "converter/caffe/caffe_layers.h"

#include <algorithm>

namespace osprey::caffe {

LayerImporter findLayerImporter(const std::string& type) {
#define OSPREY_CAFFE_ENTRY(name) {#name, import##name},
  static const std::map<std::string, LayerImporter> kImporters = {OSPREY_CAFFE_LAYERS(OSPREY_CAFFE_ENTRY)};
#undef OSPREY_CAFFE_ENTRY
  auto it = kImporters.find(type);
  return it == kImporters.end() ? nullptr : it->second;
}

Status layerError(const Layer& layer, const std::string& what) {
  return Status::invalidModel("layer '" + layer.name + "' (" + layer.type + "): " + what);
}

std::string CaffeContext::unique(const std::string& hint) {
  std::string name = hint;
  for (int k = 1; names_.count(name); ++k) name = hint + "/" + std::to_string(k);
  names_.insert(name);
  return name;
}

Status CaffeContext::bottom(const std::string& layer, const std::string& name, int* out) const {
  auto it = blobs_.find(name);
  if (it == blobs_.end())
    return Status::invalidModel("layer '" + layer + "' reads blob '" + name + "', which no input or earlier layer writes");
  *out = it->second;
  return Status::ok();
}

int CaffeContext::top(const std::string& name) {
  TensorInfo t;
  t.name = unique(name);
  t.hasShape = false;
  const int index = g_->addTensor(std::move(t));
  if (!blobs_.count(name)) order_.push_back(name);
  blobs_[name] = index;
  return index;
}

int CaffeContext::temp(const std::string& hint, int rank) {
  TensorInfo t;
  t.name = unique(hint);
  t.hasShape = false;
  const int index = g_->addTensor(std::move(t));
  if (rank >= 0) setRank(index, rank);
  return index;
}

int CaffeContext::constant(const std::string& hint, const Shape& shape, const std::vector<float>& values) {
  TensorInfo t;
  t.name = unique(hint);
  t.dtype = DataType::Float32;
  t.shape = shape;
  t.isConstant = true;
  t.data = ConstantData::copyOf(values.data(), values.size() * sizeof(float));
  const int index = g_->addTensor(std::move(t));
  setRank(index, static_cast<int>(shape.size()));
  return index;
}

int CaffeContext::ints(const std::string& hint, const std::vector<int64_t>& values) {
  TensorInfo t;
  t.name = unique(hint);
  t.dtype = DataType::Int64;
  t.shape = {static_cast<int64_t>(values.size())};
  t.isConstant = true;
  t.data = ConstantData::copyOf(values.data(), values.size() * sizeof(int64_t));
  return g_->addTensor(std::move(t));
}

Node& CaffeContext::node(OpType type, const std::string& name, std::vector<int> inputs, std::vector<int> outputs) {
  Node n;
  n.type = type;
  n.name = unique(name);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  g_->nodes.push_back(std::move(n));
  return g_->nodes.back();
}

int CaffeContext::rank(int t) const {
  auto it = ranks_.find(t);
  return it == ranks_.end() ? -1 : it->second;
}

void CaffeContext::setRank(int t, int r) { ranks_[t] = r; }

namespace {

// Legacy V1 layer types (an enum in V1LayerParameter) by their current names.
std::string currentType(const std::string& v1) {
  static const std::map<std::string, std::string> kNames = {
      {"ABSVAL", "AbsVal"},   {"ARGMAX", "ArgMax"},        {"BNLL", "BNLL"},
      {"CONCAT", "Concat"},   {"CONVOLUTION", "Convolution"}, {"DECONVOLUTION", "Deconvolution"},
      {"DROPOUT", "Dropout"}, {"ELTWISE", "Eltwise"},      {"EXP", "Exp"},
      {"FLATTEN", "Flatten"}, {"INNER_PRODUCT", "InnerProduct"}, {"LRN", "LRN"},
      {"MVN", "MVN"},         {"POOLING", "Pooling"},      {"POWER", "Power"},
      {"RELU", "ReLU"},       {"SIGMOID", "Sigmoid"},      {"SILENCE", "Silence"},
      {"SOFTMAX", "Softmax"}, {"SPLIT", "Split"},          {"SLICE", "Slice"},
      {"TANH", "TanH"},       {"THRESHOLD", "Threshold"},  {"DATA", "Data"},
      {"SOFTMAX_LOSS", "SoftmaxWithLoss"}, {"ACCURACY", "Accuracy"}};
  auto it = kNames.find(v1);
  return it == kNames.end() ? v1 : it->second;
}

// Whether a layer belongs to the TEST (deploy) net: no include rule, or one that names TEST.
bool inTestPhase(const TextMessage& layer) {
  bool included = layer.all("include").empty();
  for (const TextValue* rule : layer.all("include")) {
    std::string phase;
    if (rule->message && rule->message->getString("phase", "", &phase).isOk() && phase == "TEST") included = true;
  }
  for (const TextValue* rule : layer.all("exclude")) {
    std::string phase;
    if (rule->message && rule->message->getString("phase", "", &phase).isOk() && phase == "TEST") included = false;
  }
  return included;
}

Status addInput(CaffeContext& ctx, const std::string& name, const Shape& shape) {
  for (int64_t d : shape)
    if (d < 0) return Status::invalidModel("input '" + name + "' has a negative dimension in " + shapeToString(shape));
  const int t = ctx.top(name);
  TensorInfo& info = ctx.graph().tensors[t];
  info.dtype = DataType::Float32;
  info.shape = shape;
  info.hasShape = true;
  ctx.graph().inputs.push_back(t);
  ctx.setRank(t, static_cast<int>(shape.size()));
  return Status::ok();
}

Status shapeOf(const TextMessage& m, Shape* out) {
  std::vector<int64_t> dims;
  OSPREY_RETURN_IF_ERROR(m.getInts("dim", &dims));
  *out = Shape(dims.begin(), dims.end());
  return Status::ok();
}

// Inputs declared at the net level: `input` with `input_shape` or four `input_dim` each.
Status netInputs(CaffeContext& ctx, const TextMessage& net) {
  const std::vector<const TextValue*> names = net.all("input"), shapes = net.all("input_shape");
  std::vector<int64_t> dims;
  OSPREY_RETURN_IF_ERROR(net.getInts("input_dim", &dims));
  for (size_t i = 0; i < names.size(); ++i) {
    Shape shape;
    if (i < shapes.size() && shapes[i]->message) {
      OSPREY_RETURN_IF_ERROR(shapeOf(*shapes[i]->message, &shape));
    } else if (dims.size() >= 4 * (i + 1)) {
      shape.assign(dims.begin() + 4 * i, dims.begin() + 4 * (i + 1));
    } else {
      return net.error(*names[i], "input '" + names[i]->text + "' has no input_shape or input_dim");
    }
    OSPREY_RETURN_IF_ERROR(addInput(ctx, names[i]->text, shape));
  }
  return Status::ok();
}

Status importInputLayer(CaffeContext& ctx, const Layer& layer) {
  const TextMessage* p = layer.param->message("input_param");
  std::vector<const TextValue*> shapes = p ? p->all("shape") : std::vector<const TextValue*>{};
  if (shapes.empty()) return layerError(layer, "input_param has no shape");
  for (size_t i = 0; i < layer.tops.size(); ++i) {
    Shape shape;
    const TextValue* s = shapes[std::min(i, shapes.size() - 1)];
    if (!s->message) return layerError(layer, "input_param's shape must be a message");
    OSPREY_RETURN_IF_ERROR(shapeOf(*s->message, &shape));
    OSPREY_RETURN_IF_ERROR(addInput(ctx, layer.tops[i], shape));
  }
  return Status::ok();
}

}  // namespace

Status importNet(const TextMessage& net, const LayerBlobs& weights, Graph* out, int* layerCount) {
  *out = Graph();
  CaffeContext ctx(out);
  OSPREY_RETURN_IF_ERROR(netInputs(ctx, net));
  std::vector<const TextValue*> layers = net.all("layer");
  const bool legacy = layers.empty();
  if (legacy) layers = net.all("layers");
  std::map<std::string, int> unsupported;
  std::set<int> read;
  int count = 0;
  for (const TextValue* v : layers) {
    if (!v->message) return net.error(*v, "a layer must be a message");
    const TextMessage& m = *v->message;
    if (!inTestPhase(m)) continue;
    Layer layer;
    layer.param = &m;
    OSPREY_RETURN_IF_ERROR(m.getString("name", "", &layer.name));
    OSPREY_RETURN_IF_ERROR(m.getString("type", "", &layer.type));
    if (legacy) layer.type = currentType(layer.type);
    if (layer.name.empty()) layer.name = layer.type + "_" + std::to_string(count);
    for (const TextValue* b : m.all("bottom")) layer.bottoms.push_back(b->text);
    for (const TextValue* t : m.all("top")) layer.tops.push_back(t->text);
    auto w = weights.find(layer.name);
    if (w != weights.end()) layer.blobs = &w->second;
    ++count;
    if (layer.type == "Input") {
      OSPREY_RETURN_IF_ERROR(importInputLayer(ctx, layer));
      continue;
    }
    LayerImporter importer = findLayerImporter(layer.type);
    if (!importer) {
      ++unsupported[layer.type];
      continue;
    }
    for (const std::string& b : layer.bottoms) {
      int t = -1;
      if (ctx.bottom(layer.name, b, &t).isOk()) read.insert(t);
    }
    if (!unsupported.empty()) continue;  // its inputs may be missing; keep collecting the types
    OSPREY_RETURN_IF_ERROR(importer(ctx, layer));
  }
  if (!unsupported.empty()) {
    std::string list;
    for (const auto& [type, n] : unsupported) list += (list.empty() ? "" : ", ") + type + " (" + std::to_string(n) + ")";
    return Status::unsupported("Caffe layer types Osprey cannot import: " + list);
  }
  if (out->inputs.empty()) return Status::invalidModel("the net declares no input (input + input_shape, or an Input layer)");
  // Outputs: each blob's final tensor that no layer read.
  for (const std::string& name : ctx.blobOrder()) {
    const int t = ctx.blobs().at(name);
    if (read.count(t) || std::find(out->inputs.begin(), out->inputs.end(), t) != out->inputs.end()) continue;
    TensorInfo& info = out->tensors[t];
    if (info.name != name) {  // written in place: the blob's own name goes to its final value
      for (TensorInfo& other : out->tensors)
        if (other.name == name) other.name = name + "/0";
      info.name = name;
    }
    out->outputs.push_back(t);
  }
  if (out->outputs.empty()) return Status::invalidModel("the net has no output (every blob is read by a layer)");
  *layerCount = count;
  return Status::ok();
}

}  // namespace osprey::caffe
