// UNIDIRECTIONAL_ and BIDIRECTIONAL_SEQUENCE_LSTM as ONNX's LSTM: TFLite's per-gate weights
// (input, forget, cell, output) are stacked once at import into ONNX's [i, o, f, c] blocks.
#include <cstring>

#include "converter/tflite/op_importers.h"

namespace osprey::tfl {

namespace {

// TFLite's input positions of one direction's weights: UNIDIRECTIONAL_SEQUENCE_LSTM's, and
// BIDIRECTIONAL_SEQUENCE_LSTM's forward and backward sets.
struct LstmSlots {
  int inputWeights;      // input_to_{input, forget, cell, output}_weights: 4 slots
  int recurrentWeights;  // recurrent_to_{input, forget, cell, output}_weights: 4
  int peephole;          // cell_to_{input, forget, output}_weights: 3
  int gateBias;          // {input, forget, cell, output}_gate_bias: 4
  int projectionWeights, projectionBias;
  int outputState, cellState;
};
constexpr LstmSlots kUnidirectional{1, 5, 9, 12, 16, 17, 18, 19};
constexpr LstmSlots kForward{1, 5, 9, 12, 16, 17, 35, 36};
constexpr LstmSlots kBackward{18, 22, 26, 29, 33, 34, 37, 38};
constexpr int kInput = 0;
constexpr int kLayerNorm = 20;      // UNIDIRECTIONAL's 20..23
constexpr int kAuxInput = 39;       // BIDIRECTIONAL's auxiliary input and its weights, 39..47
constexpr int kBidirectionalInputs = 48;

int floatConstant(ImportContext& ctx, const std::string& name, const Shape& shape, const std::vector<float>& values) {
  return ctx.addConstant(name, DataType::Float32, shape, values.data(), values.size() * sizeof(float));
}

// TFLite gate k (input, forget, cell, output) goes to ONNX block kOnnxBlock[k] (i, o, f, c).
constexpr int kOnnxBlock[4] = {0, 2, 3, 1};

Status gateBlocks(ImportContext& ctx, const OpView& op, int first, int64_t rows, int64_t cols, std::vector<float>* out) {
  out->assign(static_cast<size_t>(4 * rows * cols), 0.f);
  for (int gate = 0; gate < 4; ++gate) {
    const int t = op.input(first + gate);
    std::vector<float> values;
    OSPREY_RETURN_IF_ERROR(ctx.constantFloats(t, &values).withContext(op.name + " gate weights"));
    if (static_cast<int64_t>(values.size()) != rows * cols)
      return Status::invalidModel(op.name + ": '" + ctx.tensor(t).name + "' has shape " +
                                  shapeToString(ctx.tensor(t).shape) + "; expected [" + std::to_string(rows) + ", " +
                                  std::to_string(cols) + "]");
    std::memcpy(out->data() + kOnnxBlock[gate] * rows * cols, values.data(), values.size() * sizeof(float));
  }
  return Status::ok();
}

// One direction's weights in ONNX's blocks: W [4H, I], R [4H, H], B [8H] (TFLite's gate bias as
// W's, R's zero) and P [3H] (empty without peepholes).
struct Direction {
  std::vector<float> w, r, bias, peephole;
};

Status directionWeights(ImportContext& ctx, const OpView& op, const LstmSlots& at, int64_t hidden, int64_t inputSize,
                        Direction* d) {
  if (op.input(at.inputWeights) < 0) return Status::unsupported("CIFG (no input gate)");
  if (op.input(at.projectionWeights) >= 0 || op.input(at.projectionBias) >= 0) return Status::unsupported("projection");
  for (int k = 1; k < 4; ++k)
    for (int first : {at.inputWeights, at.recurrentWeights, at.gateBias})
      if (op.input(first + k) < 0) return Status::invalidModel(op.name + ": input " + std::to_string(first + k) + " is required");
  OSPREY_RETURN_IF_ERROR(gateBlocks(ctx, op, at.inputWeights, hidden, inputSize, &d->w));
  OSPREY_RETURN_IF_ERROR(gateBlocks(ctx, op, at.recurrentWeights, hidden, hidden, &d->r));
  std::vector<float> gateBias;
  OSPREY_RETURN_IF_ERROR(gateBlocks(ctx, op, at.gateBias, hidden, 1, &gateBias));
  d->bias.assign(static_cast<size_t>(8 * hidden), 0.f);
  std::copy(gateBias.begin(), gateBias.end(), d->bias.begin());
  d->peephole.clear();
  if (op.input(at.peephole) < 0 && op.input(at.peephole + 1) < 0 && op.input(at.peephole + 2) < 0) return Status::ok();
  d->peephole.assign(static_cast<size_t>(3 * hidden), 0.f);
  // TFLite's cell_to_{input, forget, output} -> ONNX's P blocks [i, o, f].
  const int block[3] = {0, 2, 1};
  for (int k = 0; k < 3; ++k) {
    if (op.input(at.peephole + k) < 0) continue;
    std::vector<float> values;
    OSPREY_RETURN_IF_ERROR(ctx.constantFloats(op.input(at.peephole + k), &values).withContext(op.name + " peephole"));
    if (static_cast<int64_t>(values.size()) != hidden)
      return Status::invalidModel(op.name + ": peephole weights need " + std::to_string(hidden) + " values");
    std::copy(values.begin(), values.end(), d->peephole.begin() + block[k] * hidden);
  }
  return Status::ok();
}

// The initial hidden or cell state of one direction as [1, batch, hidden] (time major) or
// [batch, 1, hidden]: zeros for TFLite's variable tensors (each run starts from the state an
// interpreter has after allocation).
Status initialState(ImportContext& ctx, const OpView& op, int position, const std::string& name, const Shape& shape,
                    int* index) {
  const int64_t batch = shape[0] * shape[1], hidden = shape[2];
  const int t = op.input(position);
  if (t < 0) return Status::invalidModel(op.name + ": state input " + std::to_string(position) + " is required");
  if (ctx.tensor(t).variable || ctx.isConstant(t)) {
    std::vector<float> values(static_cast<size_t>(batch * hidden), 0.f);
    if (ctx.isConstant(t)) {
      OSPREY_RETURN_IF_ERROR(ctx.constantFloats(t, &values).withContext(name));
      if (static_cast<int64_t>(values.size()) != batch * hidden)
        return Status::invalidModel(op.name + ": state '" + ctx.tensor(t).name + "' is not [batch, units]");
    }
    *index = floatConstant(ctx, name, shape, values);
    return Status::ok();
  }
  int value;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(t, &value));
  *index = ctx.temp(name);
  ctx.addNode(OpType::Reshape, name, {value, ctx.addInt64Constant(name + "_shape", shape)}, {*index});
  return Status::ok();
}

Status cellActivation(tflite::ActivationFunctionType fused, std::string* activation) {
  if (fused == tflite::ActivationFunctionType_TANH) *activation = "Tanh";
  else if (fused == tflite::ActivationFunctionType_RELU) *activation = "Relu";
  else return Status::unsupported("cell activation " + std::to_string(fused));
  return Status::ok();
}

// ONNX's LSTM over the directions' weights (1: forward, 2: bidirectional); its Y is
// [T, D, B, H] (time major, layout 0) or [B, T, D, H] (layout 1).
Status addLstm(ImportContext& ctx, const OpView& op, const std::vector<const LstmSlots*>& slots, bool timeMajor,
               const std::string& activation, int* y) {
  const Shape& xs = ctx.tensor(op.input(kInput)).shape;
  const int at = op.input(slots[0]->inputWeights);
  if (at < 0) return Status::unsupported("CIFG (no input gate)");
  const Shape& ws = ctx.tensor(at).shape;
  if (xs.size() != 3 || ws.size() != 2) return Status::invalidModel(op.name + ": needs a 3-D input and 2-D weights");
  const int64_t hidden = ws[0], inputSize = ws[1];
  const int64_t batch = timeMajor ? xs[1] : xs[0];
  if (batch < 0) return Status::unsupported("an unknown batch size");
  const int64_t D = static_cast<int64_t>(slots.size());
  std::vector<float> w, r, bias, peephole;
  bool anyPeephole = false;
  std::vector<Direction> dirs(slots.size());
  for (size_t k = 0; k < slots.size(); ++k) {
    OSPREY_RETURN_IF_ERROR(directionWeights(ctx, op, *slots[k], hidden, inputSize, &dirs[k]));
    anyPeephole = anyPeephole || !dirs[k].peephole.empty();
  }
  for (Direction& d : dirs) {
    if (anyPeephole && d.peephole.empty()) d.peephole.assign(static_cast<size_t>(3 * hidden), 0.f);
    w.insert(w.end(), d.w.begin(), d.w.end());
    r.insert(r.end(), d.r.begin(), d.r.end());
    bias.insert(bias.end(), d.bias.begin(), d.bias.end());
    peephole.insert(peephole.end(), d.peephole.begin(), d.peephole.end());
  }
  const std::string& name = op.name;
  std::vector<int> ins(8, -1);
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(kInput), &ins[0]));
  ins[1] = floatConstant(ctx, name + "_W", {D, 4 * hidden, inputSize}, w);
  ins[2] = floatConstant(ctx, name + "_R", {D, 4 * hidden, hidden}, r);
  ins[3] = floatConstant(ctx, name + "_B", {D, 8 * hidden}, bias);
  const Shape stateShape = timeMajor ? Shape{1, batch, hidden} : Shape{batch, 1, hidden};
  for (int state = 0; state < 2; ++state) {
    std::vector<int> parts;
    for (size_t k = 0; k < slots.size(); ++k) {
      const int position = state == 0 ? slots[k]->outputState : slots[k]->cellState;
      const std::string part = name + (state == 0 ? "_initial_h" : "_initial_c") + (D > 1 ? std::to_string(k) : "");
      int index;
      OSPREY_RETURN_IF_ERROR(initialState(ctx, op, position, part, stateShape, &index));
      parts.push_back(index);
    }
    if (D == 1) {
      ins[5 + state] = parts[0];
    } else {
      ins[5 + state] = ctx.temp(name + (state == 0 ? "_initial_h" : "_initial_c"));
      ctx.addNode(OpType::Concat, name + (state == 0 ? "_initial_h" : "_initial_c"), parts, {ins[5 + state]})
          .setInt("axis", timeMajor ? 0 : 1);
    }
  }
  if (anyPeephole) ins[7] = floatConstant(ctx, name + "_P", {D, 3 * hidden}, peephole);
  while (!ins.empty() && ins.back() < 0) ins.pop_back();
  *y = ctx.temp(name + "_Y");
  Node& n = ctx.addNode(OpType::LSTM, name, ins, {*y});
  n.setInt("hidden_size", hidden);
  n.setInt("layout", timeMajor ? 0 : 1);
  if (D == 2) n.setString("direction", "bidirectional");
  Attribute activations;
  activations.name = "activations";
  activations.kind = Attribute::Kind::Strings;
  for (int64_t k = 0; k < D; ++k) activations.strings.insert(activations.strings.end(), {"Sigmoid", activation, activation});
  n.setAttr(activations);
  return Status::ok();
}

Status importSequenceLstm(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 1));
  const auto* o = op.op->builtin_options_as_UnidirectionalSequenceLSTMOptions();
  if (!o) return missingOptions(op, "UnidirectionalSequenceLSTMOptions");
  for (int i = kLayerNorm; i < kLayerNorm + 4; ++i)
    if (op.input(i) >= 0) return Status::unsupported("layer normalization");
  if (o->cell_clip() != 0 || o->proj_clip() != 0) return Status::unsupported("cell or projection clipping");
  if (o->diagonal_recurrent_tensors()) return Status::unsupported("diagonal recurrent weights");
  std::string activation;
  OSPREY_RETURN_IF_ERROR(cellActivation(o->fused_activation_function(), &activation));
  int y;
  OSPREY_RETURN_IF_ERROR(addLstm(ctx, op, {&kUnidirectional}, o->time_major(), activation, &y));
  const int64_t directionAxis = o->time_major() ? 1 : 2;
  ctx.addNode(OpType::Squeeze, op.name + "_squeeze", {y, ctx.addInt64Constant(op.name + "_axes", {directionAxis})},
              {ctx.define(op.outputs[0], Held::AsTflite)});
  return Status::ok();
}

// BIDIRECTIONAL_SEQUENCE_LSTM: one bidirectional LSTM. The backward direction's outputs stand at
// their input's time steps, as ONNX's; with merge_outputs the two are concatenated along the
// last axis into the first output, else each direction has its own.
Status importBidirectionalSequenceLstm(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 1));
  const auto* o = op.op->builtin_options_as_BidirectionalSequenceLSTMOptions();
  if (!o) return missingOptions(op, "BidirectionalSequenceLSTMOptions");
  if (static_cast<int>(op.op->inputs()->size()) != kBidirectionalInputs)
    return Status::invalidModel(op.name + " has " + std::to_string(op.op->inputs()->size()) + " inputs; expected " +
                                std::to_string(kBidirectionalInputs));
  for (int i = kAuxInput; i < kBidirectionalInputs; ++i)
    if (op.input(i) >= 0) return Status::unsupported("an auxiliary input");
  if (o->cell_clip() != 0 || o->proj_clip() != 0) return Status::unsupported("cell or projection clipping");
  const bool merge = o->merge_outputs(), timeMajor = o->time_major();
  if (op.outputs.size() != (merge ? 1u : 2u))
    return Status::invalidModel(op.name + " has " + std::to_string(op.outputs.size()) + " outputs; expected " +
                                (merge ? "1 (merge_outputs)" : "2"));
  std::string activation;
  OSPREY_RETURN_IF_ERROR(cellActivation(o->fused_activation_function(), &activation));
  int y;
  OSPREY_RETURN_IF_ERROR(addLstm(ctx, op, {&kForward, &kBackward}, timeMajor, activation, &y));
  const std::string& name = op.name;
  const int64_t directionAxis = timeMajor ? 1 : 2;
  if (merge) {
    // [T, 2, B, H] -> [T, B, 2, H] (time major); then both directions side by side: [.., .., 2H].
    int ordered = y;
    if (timeMajor) {
      ordered = ctx.temp(name + "_directions_last");
      ctx.addNode(OpType::Transpose, name + "_directions_last", {y}, {ordered}).setInts("perm", {0, 2, 1, 3});
    }
    ctx.addNode(OpType::Reshape, name + "_merge", {ordered, ctx.addInt64Constant(name + "_merged_shape", {0, 0, -1})},
                {ctx.define(op.outputs[0], Held::AsTflite)});
    return Status::ok();
  }
  for (int k = 0; k < 2; ++k) {
    const std::string part = name + (k == 0 ? "_forward" : "_backward");
    const int slice = ctx.temp(part);
    ctx.addNode(OpType::Slice, part,
                {y, ctx.addInt64Constant(part + "_starts", {k}), ctx.addInt64Constant(part + "_ends", {k + 1}),
                 ctx.addInt64Constant(part + "_axes", {directionAxis})},
                {slice});
    ctx.addNode(OpType::Squeeze, part + "_squeeze", {slice, ctx.addInt64Constant(part + "_squeeze_axes", {directionAxis})},
                {ctx.define(op.outputs[k], Held::AsTflite)});
  }
  return Status::ok();
}

}  // namespace

void addRecurrentImporters(ImporterTable& t) {
  t[tflite::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_LSTM] = importSequenceLstm;
  t[tflite::BuiltinOperator_BIDIRECTIONAL_SEQUENCE_LSTM] = importBidirectionalSequenceLstm;
}

}  // namespace osprey::tfl
