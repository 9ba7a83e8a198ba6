// Caffe's compute layers: convolutions, inner products, pooling, activations, normalizations.
// Shapes follow Caffe's: NCHW, weights [out, in / group, kh, kw]; legacy 4-D weight blobs are
// taken by their element count.
#include <cmath>

#include "converter/caffe/caffe_layers.h"

namespace osprey::caffe {

const TextMessage& paramOf(const Layer& layer, const char* name) {
  static const TextMessage kEmpty;
  const TextMessage* m = layer.param->message(name);
  return m ? *m : kEmpty;
}

Status oneToOne(CaffeContext& ctx, const Layer& layer, int* x, int* y) {
  if (layer.bottoms.size() != 1 || layer.tops.size() != 1)
    return layerError(layer, "takes one bottom and one top, not " + std::to_string(layer.bottoms.size()) + " and " +
                                 std::to_string(layer.tops.size()));
  OSPREY_RETURN_IF_ERROR(ctx.bottom(layer.name, layer.bottoms[0], x));
  *y = ctx.top(layer.tops[0]);
  ctx.setRank(*y, ctx.rank(*x));
  return Status::ok();
}

Status normalizeAxis(const Layer& layer, int64_t axis, int rank, int* out) {
  if (rank < 0) {
    if (axis < 0) return layerError(layer, "a negative axis needs the input's rank, which is not known here");
    *out = static_cast<int>(axis);
    return Status::ok();
  }
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) return layerError(layer, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  *out = static_cast<int>(a);
  return Status::ok();
}

int broadcastConstant(CaffeContext& ctx, const std::string& hint, const Blob& blob, int axis, int rank) {
  Shape shape = {static_cast<int64_t>(blob.data.size())};
  for (int i = axis + 1; i < (rank < 0 ? 4 : rank); ++i) shape.push_back(1);
  return ctx.constant(hint, shape, blob.data);
}

namespace {

struct ConvGeometry {
  int64_t kh = 0, kw = 0, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, group = 1, outputs = 0;
  bool bias = true;
};

// A repeated value given once for both spatial dims or once each, overridden by its _h / _w form.
Status pair(const TextMessage& p, const char* name, int64_t fallback, int64_t* h, int64_t* w) {
  std::vector<int64_t> v;
  OSPREY_RETURN_IF_ERROR(p.getInts(name, &v));
  *h = v.empty() ? fallback : v[0];
  *w = v.empty() ? fallback : v.size() > 1 ? v[1] : v[0];
  OSPREY_RETURN_IF_ERROR(p.getInt(std::string(name == std::string("kernel_size") ? "kernel" : name) + "_h", *h, h));
  return p.getInt(std::string(name == std::string("kernel_size") ? "kernel" : name) + "_w", *w, w);
}

Status readConv(const Layer& layer, const char* paramName, ConvGeometry* g) {
  const TextMessage& p = paramOf(layer, paramName);
  OSPREY_RETURN_IF_ERROR(pair(p, "kernel_size", 0, &g->kh, &g->kw));
  OSPREY_RETURN_IF_ERROR(pair(p, "stride", 1, &g->sh, &g->sw));
  OSPREY_RETURN_IF_ERROR(pair(p, "pad", 0, &g->ph, &g->pw));
  OSPREY_RETURN_IF_ERROR(pair(p, "dilation", 1, &g->dh, &g->dw));
  OSPREY_RETURN_IF_ERROR(p.getInt("num_output", 0, &g->outputs));
  OSPREY_RETURN_IF_ERROR(p.getInt("group", layer.type == "DepthwiseConvolution" ? g->outputs : 1, &g->group));
  OSPREY_RETURN_IF_ERROR(p.getBool("bias_term", true, &g->bias));
  if (g->kh < 1 || g->kw < 1 || g->sh < 1 || g->sw < 1 || g->ph < 0 || g->pw < 0 || g->dh < 1 || g->dw < 1)
    return layerError(layer, "kernel, stride and dilation must be positive and pads not negative");
  if (g->outputs < 1 || g->group < 1 || g->outputs % g->group != 0)
    return layerError(layer, "num_output " + std::to_string(g->outputs) + " must be positive and a multiple of group " +
                                 std::to_string(g->group));
  return Status::ok();
}

void setWindow(Node& n, const ConvGeometry& g) {
  n.setInts("kernel_shape", {g.kh, g.kw});
  n.setInts("strides", {g.sh, g.sw});
  n.setInts("pads", {g.ph, g.pw, g.ph, g.pw});
}

// The weight blob as [dim0, elements / (dim0 * kh * kw), kh, kw].
Status convWeights(CaffeContext& ctx, const Layer& layer, int64_t dim0, const ConvGeometry& g, int* out) {
  const Blob* w = layer.blob(0);
  if (!w) return layerError(layer, "has no weights in the caffemodel");
  const int64_t n = static_cast<int64_t>(w->data.size()), perFilter = dim0 * g.kh * g.kw;
  // A 4-D blob names its shape, which must be the layer's (the legacy form is 4-D as well).
  if (w->shape.size() == 4 && (w->shape[0] != dim0 || w->shape[2] != g.kh || w->shape[3] != g.kw))
    return layerError(layer, "weights " + shapeToString(w->shape) + " do not match num_output x C x kernel " +
                                 std::to_string(dim0) + " x C x " + std::to_string(g.kh) + " x " + std::to_string(g.kw));
  if (n == 0 || n % perFilter != 0)
    return layerError(layer, "weights of " + std::to_string(n) + " values do not fit " + std::to_string(dim0) + " x C x " +
                                 std::to_string(g.kh) + " x " + std::to_string(g.kw));
  *out = ctx.constant(layer.name + "/weights", {dim0, n / perFilter, g.kh, g.kw}, w->data);
  return Status::ok();
}

Status biasOf(CaffeContext& ctx, const Layer& layer, bool wanted, int64_t count, std::vector<int>* inputs) {
  if (!wanted) return Status::ok();
  const Blob* b = layer.blob(1);
  if (!b || static_cast<int64_t>(b->data.size()) != count)
    return layerError(layer, "bias_term is set but the caffemodel has no bias of " + std::to_string(count) + " values");
  inputs->push_back(ctx.constant(layer.name + "/bias", {count}, b->data));
  return Status::ok();
}

Status importConv(CaffeContext& ctx, const Layer& layer, bool transposed) {
  ConvGeometry g;
  OSPREY_RETURN_IF_ERROR(readConv(layer, "convolution_param", &g));
  int x = -1, y = -1, w = -1;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  ctx.setRank(y, 4);
  // Deconvolution's weights are [in, out / group, kh, kw].
  if (transposed) {
    const Blob* blob = layer.blob(0);
    const int64_t perInput = g.outputs / g.group * g.kh * g.kw;
    if (!blob || blob->data.empty() || static_cast<int64_t>(blob->data.size()) % perInput != 0 ||
        (blob->shape.size() == 4 && (blob->shape[1] != g.outputs / g.group || blob->shape[2] != g.kh || blob->shape[3] != g.kw)))
      return layerError(layer, "has no weights of in x " + std::to_string(g.outputs / g.group) + " x " + std::to_string(g.kh) +
                                   " x " + std::to_string(g.kw) + (blob ? ", but " + shapeToString(blob->shape) : std::string()));
    w = ctx.constant(layer.name + "/weights",
                     {static_cast<int64_t>(blob->data.size()) / perInput, g.outputs / g.group, g.kh, g.kw}, blob->data);
  } else {
    OSPREY_RETURN_IF_ERROR(convWeights(ctx, layer, g.outputs, g, &w));
  }
  std::vector<int> inputs = {x, w};
  OSPREY_RETURN_IF_ERROR(biasOf(ctx, layer, g.bias, g.outputs, &inputs));
  Node& n = ctx.node(transposed ? OpType::ConvTranspose : OpType::Conv, layer.name, inputs, {y});
  setWindow(n, g);
  n.setInts("dilations", {g.dh, g.dw});
  n.setInt("group", g.group);
  return Status::ok();
}

Status unary(CaffeContext& ctx, const Layer& layer, OpType type, Node** out = nullptr) {
  int x = -1, y = -1;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  Node& n = ctx.node(type, layer.name, {x}, {y});
  if (out) *out = &n;
  return Status::ok();
}

// y = op(x, constant scalar v), as a fresh tensor.
int withScalar(CaffeContext& ctx, const Layer& layer, OpType type, int x, float v, const char* what) {
  const int y = ctx.temp(layer.name + "/" + what);
  ctx.setRank(y, ctx.rank(x));
  ctx.node(type, layer.name + "/" + what, {x, ctx.constant(layer.name + "/" + what + "_value", {}, {v})}, {y});
  return y;
}

// Writes `value` into the layer's top through an Identity (or the op that made it, renamed).
void finish(CaffeContext& ctx, const Layer& layer, int x, int value, int y) {
  if (value == x) ctx.node(OpType::Identity, layer.name, {x}, {y});
  else ctx.graph().nodes.back().outputs[0] = y;
}

}  // namespace

Status importConvolution(CaffeContext& ctx, const Layer& layer) { return importConv(ctx, layer, false); }
Status importDepthwiseConvolution(CaffeContext& ctx, const Layer& layer) { return importConv(ctx, layer, false); }
Status importDeconvolution(CaffeContext& ctx, const Layer& layer) { return importConv(ctx, layer, true); }

Status importInnerProduct(CaffeContext& ctx, const Layer& layer) {
  const TextMessage& p = paramOf(layer, "inner_product_param");
  int64_t outputs = 0, axis = 1;
  bool bias = true, transpose = false;
  OSPREY_RETURN_IF_ERROR(p.getInt("num_output", 0, &outputs));
  OSPREY_RETURN_IF_ERROR(p.getInt("axis", 1, &axis));
  OSPREY_RETURN_IF_ERROR(p.getBool("bias_term", true, &bias));
  OSPREY_RETURN_IF_ERROR(p.getBool("transpose", false, &transpose));
  int x = -1, y = -1, a = 0;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  OSPREY_RETURN_IF_ERROR(normalizeAxis(layer, axis, ctx.rank(x), &a));
  const Blob* w = layer.blob(0);
  if (outputs < 1 || !w || w->data.empty() || static_cast<int64_t>(w->data.size()) % outputs != 0)
    return layerError(layer, "needs num_output and weights of num_output x K values");
  const int64_t K = static_cast<int64_t>(w->data.size()) / outputs;
  // As MatMul with a [K, N] weight: the rows x's dims before `axis`, flattened from it on.
  std::vector<float> kn(static_cast<size_t>(K * outputs));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < outputs; ++n) kn[k * outputs + n] = transpose ? w->data[k * outputs + n] : w->data[n * K + k];
  std::vector<int64_t> shape(static_cast<size_t>(a), 0);
  shape.push_back(-1);
  const int flat = ctx.temp(layer.name + "/flat");
  ctx.node(OpType::Reshape, layer.name + "/flatten", {x, ctx.ints(layer.name + "/shape", shape)}, {flat});
  std::vector<int> inputs = {flat, ctx.constant(layer.name + "/weights", {K, outputs}, kn)};
  OSPREY_RETURN_IF_ERROR(biasOf(ctx, layer, bias, outputs, &inputs));
  ctx.node(OpType::MatMul, layer.name, inputs, {y});  // a 3-input MatMul adds the bias
  ctx.setRank(y, a + 1);
  return Status::ok();
}

Status importPooling(CaffeContext& ctx, const Layer& layer) {
  const TextMessage& p = paramOf(layer, "pooling_param");
  std::string pool, round;
  bool global = false;
  OSPREY_RETURN_IF_ERROR(p.getString("pool", "MAX", &pool));
  OSPREY_RETURN_IF_ERROR(p.getString("round_mode", "CEIL", &round));
  OSPREY_RETURN_IF_ERROR(p.getBool("global_pooling", false, &global));
  if (pool != "MAX" && pool != "AVE" && pool != "0" && pool != "1")
    return Status::unsupported("layer '" + layer.name + "' (Pooling): pool " + pool + " (only MAX and AVE run in inference)");
  const bool max = pool == "MAX" || pool == "0";
  int x = -1, y = -1;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  if (global) {
    ctx.node(max ? OpType::GlobalMaxPool : OpType::GlobalAveragePool, layer.name, {x}, {y});
    return Status::ok();
  }
  ConvGeometry g;
  OSPREY_RETURN_IF_ERROR(pair(p, "kernel_size", 0, &g.kh, &g.kw));
  OSPREY_RETURN_IF_ERROR(pair(p, "stride", 1, &g.sh, &g.sw));
  OSPREY_RETURN_IF_ERROR(pair(p, "pad", 0, &g.ph, &g.pw));
  if (g.kh < 1 || g.kw < 1 || g.sh < 1 || g.sw < 1 || g.ph < 0 || g.pw < 0)
    return layerError(layer, "kernel and stride must be positive and pads not negative");
  Node& n = ctx.node(max ? OpType::MaxPool : OpType::AveragePool, layer.name, {x}, {y});
  setWindow(n, g);
  n.setInt("ceil_mode", round == "FLOOR" ? 0 : 1);
  if (!max) n.setInt("count_include_pad", 1);  // Caffe divides by the window clipped to the padded input
  return Status::ok();
}

Status importReLU(CaffeContext& ctx, const Layer& layer) {
  double slope = 0;
  OSPREY_RETURN_IF_ERROR(paramOf(layer, "relu_param").getFloat("negative_slope", 0, &slope));
  Node* n = nullptr;
  OSPREY_RETURN_IF_ERROR(unary(ctx, layer, slope != 0 ? OpType::LeakyRelu : OpType::Relu, &n));
  if (slope != 0) n->setFloat("alpha", static_cast<float>(slope));
  return Status::ok();
}

Status importPReLU(CaffeContext& ctx, const Layer& layer) {
  int x = -1, y = -1;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  const Blob* slopes = layer.blob(0);
  if (!slopes || slopes->data.empty()) return layerError(layer, "has no slopes in the caffemodel");
  const int s = slopes->data.size() == 1 ? ctx.constant(layer.name + "/slope", {}, slopes->data)
                                         : broadcastConstant(ctx, layer.name + "/slope", *slopes, 1, ctx.rank(x));
  ctx.node(OpType::PRelu, layer.name, {x, s}, {y});
  return Status::ok();
}

Status importSigmoid(CaffeContext& ctx, const Layer& layer) { return unary(ctx, layer, OpType::Sigmoid); }
Status importTanH(CaffeContext& ctx, const Layer& layer) { return unary(ctx, layer, OpType::Tanh); }
Status importAbsVal(CaffeContext& ctx, const Layer& layer) { return unary(ctx, layer, OpType::Abs); }
Status importBNLL(CaffeContext& ctx, const Layer& layer) { return unary(ctx, layer, OpType::Softplus); }

Status importELU(CaffeContext& ctx, const Layer& layer) {
  double alpha = 1;
  OSPREY_RETURN_IF_ERROR(paramOf(layer, "elu_param").getFloat("alpha", 1, &alpha));
  Node* n = nullptr;
  OSPREY_RETURN_IF_ERROR(unary(ctx, layer, OpType::Elu, &n));
  n->setFloat("alpha", static_cast<float>(alpha));
  return Status::ok();
}

// Power: (shift + scale * x) ^ power; Exp: base ^ (shift + scale * x); Log: log_base(shift + scale * x).
Status importPower(CaffeContext& ctx, const Layer& layer) {
  const TextMessage& p = paramOf(layer, "power_param");
  double power = 1, scale = 1, shift = 0;
  OSPREY_RETURN_IF_ERROR(p.getFloat("power", 1, &power));
  OSPREY_RETURN_IF_ERROR(p.getFloat("scale", 1, &scale));
  OSPREY_RETURN_IF_ERROR(p.getFloat("shift", 0, &shift));
  int x = -1, y = -1;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  int v = x;
  if (scale != 1) v = withScalar(ctx, layer, OpType::Mul, v, static_cast<float>(scale), "scale");
  if (shift != 0) v = withScalar(ctx, layer, OpType::Add, v, static_cast<float>(shift), "shift");
  if (power != 1) v = withScalar(ctx, layer, OpType::Pow, v, static_cast<float>(power), "power");
  finish(ctx, layer, x, v, y);
  return Status::ok();
}

Status expOrLog(CaffeContext& ctx, const Layer& layer, bool exp) {
  const TextMessage& p = paramOf(layer, exp ? "exp_param" : "log_param");
  double base = -1, scale = 1, shift = 0;
  OSPREY_RETURN_IF_ERROR(p.getFloat("base", -1, &base));
  OSPREY_RETURN_IF_ERROR(p.getFloat("scale", 1, &scale));
  OSPREY_RETURN_IF_ERROR(p.getFloat("shift", 0, &shift));
  if (base != -1 && !(base > 0)) return layerError(layer, "base must be positive (or -1 for e)");
  const double lnBase = base == -1 ? 1.0 : std::log(base);
  int x = -1, y = -1;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  int v = x;
  if (exp) {  // e ^ (ln(base) * (shift + scale x))
    if (scale * lnBase != 1) v = withScalar(ctx, layer, OpType::Mul, v, static_cast<float>(scale * lnBase), "scale");
    if (shift != 0) v = withScalar(ctx, layer, OpType::Add, v, static_cast<float>(shift * lnBase), "shift");
    const int e = ctx.temp(layer.name + "/exp");
    ctx.node(OpType::Exp, layer.name + "/exp", {v}, {e});
    v = e;
  } else {  // ln(shift + scale x) / ln(base)
    if (scale != 1) v = withScalar(ctx, layer, OpType::Mul, v, static_cast<float>(scale), "scale");
    if (shift != 0) v = withScalar(ctx, layer, OpType::Add, v, static_cast<float>(shift), "shift");
    const int l = ctx.temp(layer.name + "/log");
    ctx.node(OpType::Log, layer.name + "/log", {v}, {l});
    v = l;
    if (lnBase != 1) v = withScalar(ctx, layer, OpType::Mul, v, static_cast<float>(1 / lnBase), "base");
  }
  finish(ctx, layer, x, v, y);
  return Status::ok();
}

Status importExp(CaffeContext& ctx, const Layer& layer) { return expOrLog(ctx, layer, true); }
Status importLog(CaffeContext& ctx, const Layer& layer) { return expOrLog(ctx, layer, false); }

Status importThreshold(CaffeContext& ctx, const Layer& layer) {
  double t = 0;
  OSPREY_RETURN_IF_ERROR(paramOf(layer, "threshold_param").getFloat("threshold", 0, &t));
  int x = -1, y = -1;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  const int above = ctx.temp(layer.name + "/above");
  ctx.node(OpType::Greater, layer.name + "/greater", {x, ctx.constant(layer.name + "/threshold", {}, {static_cast<float>(t)})},
           {above});
  ctx.node(OpType::Cast, layer.name, {above}, {y}).setInt("to", static_cast<int64_t>(DataType::Float32));
  return Status::ok();
}

Status importClip(CaffeContext& ctx, const Layer& layer) {
  const TextMessage& p = paramOf(layer, "clip_param");
  double lo = 0, hi = 0;
  if (!p.has("min") || !p.has("max")) return layerError(layer, "clip_param needs min and max");
  OSPREY_RETURN_IF_ERROR(p.getFloat("min", 0, &lo));
  OSPREY_RETURN_IF_ERROR(p.getFloat("max", 0, &hi));
  int x = -1, y = -1;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  ctx.node(OpType::Clip, layer.name,
           {x, ctx.constant(layer.name + "/min", {}, {static_cast<float>(lo)}),
            ctx.constant(layer.name + "/max", {}, {static_cast<float>(hi)})},
           {y});
  return Status::ok();
}

}  // namespace osprey::caffe
