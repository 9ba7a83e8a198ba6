// UNIDIRECTIONAL_SEQUENCE_LSTM as ONNX's LSTM: TFLite's per-gate weights (input, forget, cell,
// output) are stacked once at import into ONNX's [i, o, f, c] blocks.
#include <cstring>

#include "converter/tflite/op_importers.h"

namespace osprey::tfl {

namespace {

// TFLite's input positions.
enum LstmInput {
  kInput = 0,
  kInputWeights = 1,     // input_to_{input, forget, cell, output}_weights: 1..4
  kRecurrentWeights = 5,  // recurrent_to_{input, forget, cell, output}_weights: 5..8
  kPeephole = 9,          // cell_to_{input, forget, output}_weights: 9..11
  kGateBias = 12,         // {input, forget, cell, output}_gate_bias: 12..15
  kProjectionWeights = 16,
  kProjectionBias = 17,
  kOutputState = 18,
  kCellState = 19,
  kLayerNorm = 20,  // 20..23
};

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

// The initial hidden or cell state as ONNX's [1, batch, hidden] (time major) or [batch, 1,
// hidden]: zeros for TFLite's variable tensors
// (each run starts from the state an interpreter has after allocation).
Status initialState(ImportContext& ctx, const OpView& op, int position, const Shape& shape, int* index) {
  const int64_t batch = shape[0] * shape[1], hidden = shape[2];
  const int t = op.input(position);
  const std::string name = op.name + (position == kOutputState ? "_initial_h" : "_initial_c");
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

Status importSequenceLstm(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 1));
  const auto* o = op.op->builtin_options_as_UnidirectionalSequenceLSTMOptions();
  if (!o) return missingOptions(op, "UnidirectionalSequenceLSTMOptions");
  if (op.input(kInputWeights) < 0) return Status::unsupported("CIFG (no input gate)");
  if (op.input(kProjectionWeights) >= 0 || op.input(kProjectionBias) >= 0) return Status::unsupported("projection");
  for (int i = kLayerNorm; i < kLayerNorm + 4; ++i)
    if (op.input(i) >= 0) return Status::unsupported("layer normalization");
  if (o->cell_clip() != 0 || o->proj_clip() != 0) return Status::unsupported("cell or projection clipping");
  if (o->diagonal_recurrent_tensors()) return Status::unsupported("diagonal recurrent weights");
  std::string activation;
  if (o->fused_activation_function() == tflite::ActivationFunctionType_TANH) activation = "Tanh";
  else if (o->fused_activation_function() == tflite::ActivationFunctionType_RELU) activation = "Relu";
  else return Status::unsupported("cell activation " + std::to_string(o->fused_activation_function()));
  for (int i : {2, 3, 4, 6, 7, 8, 13, 14, 15, 18, 19})
    if (op.input(i) < 0) return Status::invalidModel(op.name + ": input " + std::to_string(i) + " is required");

  const Shape& xs = ctx.tensor(op.input(kInput)).shape;
  const Shape& ws = ctx.tensor(op.input(kInputWeights)).shape;
  const Shape& rs = ctx.tensor(op.input(kRecurrentWeights + 1)).shape;
  if (xs.size() != 3 || ws.size() != 2 || rs.size() != 2)
    return Status::invalidModel(op.name + ": needs a 3-D input and 2-D weights");
  const int64_t hidden = ws[0], inputSize = ws[1];
  const int64_t batch = o->time_major() ? xs[1] : xs[0];
  if (batch < 0) return Status::unsupported("an unknown batch size");
  std::vector<float> w, r, bias(static_cast<size_t>(8 * hidden), 0.f), peephole;
  OSPREY_RETURN_IF_ERROR(gateBlocks(ctx, op, kInputWeights, hidden, inputSize, &w));
  OSPREY_RETURN_IF_ERROR(gateBlocks(ctx, op, kRecurrentWeights, hidden, hidden, &r));
  std::vector<float> gateBias;
  OSPREY_RETURN_IF_ERROR(gateBlocks(ctx, op, kGateBias, hidden, 1, &gateBias));
  std::copy(gateBias.begin(), gateBias.end(), bias.begin());  // W's bias; R's stays zero

  const std::string& name = op.name;
  std::vector<int> ins(8, -1);
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(kInput), &ins[0]));
  ins[1] = floatConstant(ctx, name + "_W", {1, 4 * hidden, inputSize}, w);
  ins[2] = floatConstant(ctx, name + "_R", {1, 4 * hidden, hidden}, r);
  ins[3] = floatConstant(ctx, name + "_B", {1, 8 * hidden}, bias);
  const Shape stateShape = o->time_major() ? Shape{1, batch, hidden} : Shape{batch, 1, hidden};
  OSPREY_RETURN_IF_ERROR(initialState(ctx, op, kOutputState, stateShape, &ins[5]));
  OSPREY_RETURN_IF_ERROR(initialState(ctx, op, kCellState, stateShape, &ins[6]));
  if (op.input(kPeephole) >= 0 || op.input(kPeephole + 1) >= 0 || op.input(kPeephole + 2) >= 0) {
    peephole.assign(static_cast<size_t>(3 * hidden), 0.f);
    // TFLite's cell_to_{input, forget, output} -> ONNX's P blocks [i, o, f].
    const int block[3] = {0, 2, 1};
    for (int k = 0; k < 3; ++k) {
      if (op.input(kPeephole + k) < 0) continue;
      std::vector<float> values;
      OSPREY_RETURN_IF_ERROR(ctx.constantFloats(op.input(kPeephole + k), &values).withContext(name + " peephole"));
      if (static_cast<int64_t>(values.size()) != hidden)
        return Status::invalidModel(name + ": peephole weights need " + std::to_string(hidden) + " values");
      std::copy(values.begin(), values.end(), peephole.begin() + block[k] * hidden);
    }
    ins[7] = floatConstant(ctx, name + "_P", {1, 3 * hidden}, peephole);
  }
  while (!ins.empty() && ins.back() < 0) ins.pop_back();

  // ONNX's Y has a direction axis: [T, 1, B, H] (layout 0) or [B, T, 1, H] (layout 1).
  const int y = ctx.temp(name + "_Y");
  Node& n = ctx.addNode(OpType::LSTM, name, ins, {y});
  n.setInt("hidden_size", hidden);
  n.setInt("layout", o->time_major() ? 0 : 1);
  Attribute activations;
  activations.name = "activations";
  activations.kind = Attribute::Kind::Strings;
  activations.strings = {"Sigmoid", activation, activation};
  n.setAttr(activations);
  const int64_t directionAxis = o->time_major() ? 1 : 2;
  ctx.addNode(OpType::Squeeze, name + "_squeeze", {y, ctx.addInt64Constant(name + "_axes", {directionAxis})},
              {ctx.define(op.outputs[0], Held::AsTflite)});
  return Status::ok();
}

}  // namespace

void addRecurrentImporters(ImporterTable& t) {
  t[tflite::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_LSTM] = importSequenceLstm;
}

}  // namespace osprey::tfl
