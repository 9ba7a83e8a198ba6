// Elementwise ops: activations and unary math keep their input's layout; broadcasting binary
// ops run NCHW when a 4-D operand is held so and the others can follow it.
#include <cmath>
#include <cstring>

#include "converter/tflite/layout.h"
#include "converter/tflite/op_importers.h"
#include "core/dtype.h"

namespace osprey::tfl {

namespace {

bool isSingleValue(const TfliteTensor& t) {
  for (int64_t d : t.shape)
    if (d != 1) return false;
  return true;
}

// Brings every operand of a broadcasting op into one layout: NCHW when some operand is a 4-D
// value held NCHW and every other is 4-D, a constant of rank <= 4 (permuted at import) or a
// single value; TFLite's order otherwise.
Status broadcastOperands(ImportContext& ctx, const OpView& op, size_t count, std::vector<int>* out, Held* held) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, count));
  bool anyNchw = false, allFollow = true;
  for (size_t i = 0; i < count; ++i) {
    const int t = op.input(i);
    if (ctx.heldAs(t) == Held::Nchw) anyNchw = true;
    else if (ctx.rank(t) != 4 && !(ctx.isConstant(t) && ctx.rank(t) <= 4) && !isSingleValue(ctx.tensor(t))) allFollow = false;
  }
  *held = anyNchw && allFollow ? Held::Nchw : Held::AsTflite;
  out->resize(count);
  for (size_t i = 0; i < count; ++i) {
    const int t = op.input(i);
    if (*held == Held::Nchw && (ctx.rank(t) == 4 || ctx.isConstant(t))) {
      OSPREY_RETURN_IF_ERROR(ctx.asNchw(t, &(*out)[i]));
    } else {
      OSPREY_RETURN_IF_ERROR(ctx.asTflite(t, &(*out)[i]));
    }
  }
  return Status::ok();
}

tflite::ActivationFunctionType fusedActivationOf(const OpView& op) {
  if (const auto* o = op.op->builtin_options_as_AddOptions()) return o->fused_activation_function();
  if (const auto* o = op.op->builtin_options_as_SubOptions()) return o->fused_activation_function();
  if (const auto* o = op.op->builtin_options_as_MulOptions()) return o->fused_activation_function();
  if (const auto* o = op.op->builtin_options_as_DivOptions()) return o->fused_activation_function();
  return tflite::ActivationFunctionType_NONE;
}

Status importBinary(ImportContext& ctx, const OpView& op, OpType type) {
  std::vector<int> ins;
  Held held;
  OSPREY_RETURN_IF_ERROR(broadcastOperands(ctx, op, 2, &ins, &held));
  const auto act = fusedActivationOf(op);
  const int out = ctx.define(op.outputs[0], held);
  const int produced = outputFor(ctx, act, out);
  Node& n = ctx.addNode(type, op.name, ins, {produced});
  // A quantized ADD fused into QLinearAdd requantizes as LiteRT does (ops/fixed_point_add.h).
  if (type == OpType::Add && ctx.readsQuantized(op.input(0)) && ctx.readsQuantized(op.input(1)) &&
      ctx.writesQuantized(op.outputs[0]))
    n.setString("requantize", "fixed_point");
  return applyActivation(ctx, op, act, produced, out);
}

// (a - b)^2
Status importSquaredDifference(ImportContext& ctx, const OpView& op) {
  bool done;
  OSPREY_RETURN_IF_ERROR(importQuantizedSquaredDifference(ctx, op, &done));
  if (done) return Status::ok();
  std::vector<int> ins;
  Held held;
  OSPREY_RETURN_IF_ERROR(broadcastOperands(ctx, op, 2, &ins, &held));
  const int difference = ctx.temp(op.name + "_difference");
  ctx.addNode(OpType::Sub, op.name + "_difference", ins, {difference});
  ctx.addNode(OpType::Mul, op.name, {difference, difference}, {ctx.define(op.outputs[0], held)});
  return Status::ok();
}

// TFLite's FLOOR_DIV and FLOOR_MOD take integers as plain numbers, never with scales.
Status refuseQuantized(ImportContext& ctx, const OpView& op) {
  for (int t : op.inputs)
    if (ctx.readsQuantized(t)) return Status::unsupported("quantized");
  return Status::ok();
}

// FLOOR_DIV: TFLite computes floor(double(a) / double(b)) for every type. In float32 the
// quotient can round up to an integer (1 / 0.1f gives 10, not 9.99999985), so the division
// runs in double as there; integers convert to double exactly.
Status importFloorDiv(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(refuseQuantized(ctx, op));
  std::vector<int> ins;
  Held held;
  OSPREY_RETURN_IF_ERROR(broadcastOperands(ctx, op, 2, &ins, &held));
  const auto toDouble = static_cast<int64_t>(DataType::Float64);
  const int a = ctx.temp(op.name + "_a"), b = ctx.temp(op.name + "_b"), q = ctx.temp(op.name + "_quotient");
  const int floored = ctx.temp(op.name + "_floor");
  ctx.addNode(OpType::Cast, op.name + "_a", {ins[0]}, {a}).setInt("to", toDouble);
  ctx.addNode(OpType::Cast, op.name + "_b", {ins[1]}, {b}).setInt("to", toDouble);
  ctx.addNode(OpType::Div, op.name + "_quotient", {a, b}, {q});
  ctx.addNode(OpType::Floor, op.name + "_floor", {q}, {floored});
  ctx.addNode(OpType::Cast, op.name, {floored}, {ctx.define(op.outputs[0], held)})
      .setInt("to", static_cast<int64_t>(ctx.tensor(op.outputs[0]).dtype));
  return Status::ok();
}

// FLOOR_MOD: the remainder with the divisor's sign. Integer Mod with fmod=0 is exactly that;
// for floats TFLite takes fmod(a, b) and adds b where the signs differ, and so does this.
Status importFloorMod(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(refuseQuantized(ctx, op));
  std::vector<int> ins;
  Held held;
  OSPREY_RETURN_IF_ERROR(broadcastOperands(ctx, op, 2, &ins, &held));
  const int out = ctx.define(op.outputs[0], held);
  if (!dispatchFloat(ctx.tensor(op.outputs[0]).dtype, [](auto) {})) {
    ctx.addNode(OpType::Mod, op.name, ins, {out}).setInt("fmod", 0);
    return Status::ok();
  }
  const int r = ctx.temp(op.name + "_fmod");
  ctx.addNode(OpType::Mod, op.name + "_fmod", ins, {r}).setInt("fmod", 1);
  // Signs compared through Sign, since r * b underflows to zero for subnormal remainders.
  const int rSign = ctx.temp(op.name + "_r_sign"), bSign = ctx.temp(op.name + "_b_sign");
  const int signs = ctx.temp(op.name + "_signs"), differ = ctx.temp(op.name + "_differ");
  const int shifted = ctx.temp(op.name + "_shifted");
  ctx.addNode(OpType::Sign, op.name + "_r_sign", {r}, {rSign});
  ctx.addNode(OpType::Sign, op.name + "_b_sign", {ins[1]}, {bSign});
  ctx.addNode(OpType::Mul, op.name + "_signs", {rSign, bSign}, {signs});
  ctx.addNode(OpType::Less, op.name + "_differ", {signs, ctx.addFloatConstant(op.name + "_zero", {0.f}, true)}, {differ});
  ctx.addNode(OpType::Add, op.name + "_shifted", {r, ins[1]}, {shifted});
  ctx.addNode(OpType::Where, op.name, {differ, shifted, r}, {out});
  return Status::ok();
}

Status importNotEqual(ImportContext& ctx, const OpView& op) {
  std::vector<int> ins;
  Held held;
  OSPREY_RETURN_IF_ERROR(broadcastOperands(ctx, op, 2, &ins, &held));
  const int equal = ctx.temp(op.name + "_equal");
  ctx.addNode(OpType::Equal, op.name + "_equal", ins, {equal});
  ctx.addNode(OpType::Not, op.name, {equal}, {ctx.define(op.outputs[0], held)});
  return Status::ok();
}

Status importSelect(ImportContext& ctx, const OpView& op) {
  std::vector<int> ins;
  Held held;
  OSPREY_RETURN_IF_ERROR(broadcastOperands(ctx, op, 3, &ins, &held));
  ctx.addNode(OpType::Where, op.name, ins, {ctx.define(op.outputs[0], held)});
  return Status::ok();
}

Status importClip(ImportContext& ctx, const OpView& op, float lo, float hi) {
  Node* n;
  OSPREY_RETURN_IF_ERROR(importSameLayout(ctx, op, OpType::Clip, &n));
  n->inputs.push_back(ctx.addFloatConstant(op.name + "_min", {lo}, true));
  n->inputs.push_back(ctx.addFloatConstant(op.name + "_max", {hi}, true));
  return Status::ok();
}

Status importRsqrt(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 1));
  bool done;
  OSPREY_RETURN_IF_ERROR(importQuantizedTable(ctx, op, &done));
  if (done) return Status::ok();
  int x;
  Held held;
  OSPREY_RETURN_IF_ERROR(ctx.value(op.input(0), &x, &held));
  const int root = ctx.temp(op.name + "_sqrt");
  ctx.addNode(OpType::Sqrt, op.name + "_sqrt", {x}, {root});
  ctx.addNode(OpType::Reciprocal, op.name, {root}, {ctx.define(op.outputs[0], held)});
  return Status::ok();
}

Status importCast(ImportContext& ctx, const OpView& op) {
  const DataType to = ctx.tensor(op.outputs[0]).dtype;
  if (to == DataType::Undefined)
    return Status::unsupported("output type " + tensorTypeName(ctx.tensor(op.outputs[0]).tfliteType));
  Node* n;
  OSPREY_RETURN_IF_ERROR(importSameLayout(ctx, op, OpType::Cast, &n));
  n->setInt("to", static_cast<int64_t>(to));
  return Status::ok();
}

// Per-tensor or per-axis scale and zero point constants of a quantized tensor.
void quantizationOperands(ImportContext& ctx, const OpView& op, const TfliteTensor& q, std::vector<int>* ins) {
  const bool perAxis = q.scales.size() > 1;
  Shape shape = perAxis ? Shape{static_cast<int64_t>(q.scales.size())} : Shape{};
  ins->push_back(ctx.addConstant(op.name + "_scale", DataType::Float32, shape, q.scales.data(), q.scales.size() * 4));
  std::vector<uint8_t> zeros(q.zeroPoints.size() * dataTypeSize(q.dtype));
  for (size_t i = 0; i < q.zeroPoints.size(); ++i) {
    if (q.dtype == DataType::Int8) reinterpret_cast<int8_t*>(zeros.data())[i] = static_cast<int8_t>(q.zeroPoints[i]);
    else if (q.dtype == DataType::UInt8) zeros[i] = static_cast<uint8_t>(q.zeroPoints[i]);
    else if (q.dtype == DataType::Int16) reinterpret_cast<int16_t*>(zeros.data())[i] = static_cast<int16_t>(q.zeroPoints[i]);
  }
  ins->push_back(ctx.addConstant(op.name + "_zero_point", q.dtype, shape, zeros.data(), zeros.size()));
}

bool quantizedType(DataType t) { return t == DataType::Int8 || t == DataType::UInt8 || t == DataType::Int16; }

// Float16 weights and integer tensors with scales become float. Constants are converted here,
// so that the ops reading them (a convolution's filters) see constants.
// The sparse constant was expanded when it was read (sparsity.h): DENSIFY names it again.
Status importDensify(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 1));
  if (!ctx.isConstant(op.input(0)))
    return Status::invalidModel(op.name + ": input '" + ctx.tensor(op.input(0)).name + "' must be a constant");
  ctx.bindConstant(op.outputs[0], ctx.tensor(op.input(0)).constant);
  return Status::ok();
}

Status importDequantize(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 1));
  const int src = op.input(0);
  const TfliteTensor& in = ctx.tensor(src);
  if (in.dtype == DataType::Float16) {
    if (ctx.isConstant(src)) {
      const TensorInfo& c = ctx.graph().tensors[in.constant];
      std::vector<float> values(static_cast<size_t>(shapeElements(c.shape)));
      for (size_t i = 0; i < values.size(); ++i) {
        uint16_t h;
        std::memcpy(&h, c.data.bytes.get() + i * 2, 2);
        values[i] = halfToFloat(h);
      }
      ctx.bindConstant(op.outputs[0], ctx.addConstant(ctx.tensor(op.outputs[0]).name, DataType::Float32, c.shape,
                                                      values.data(), values.size() * 4));
      return Status::ok();
    }
    Node* n;
    OSPREY_RETURN_IF_ERROR(importSameLayout(ctx, op, OpType::Cast, &n));
    n->setInt("to", static_cast<int64_t>(DataType::Float32));
    return Status::ok();
  }
  if (!in.quantized || !quantizedType(in.dtype))
    return Status::unsupported("input type " + tensorTypeName(in.tfliteType) + " without quantization parameters");
  int x;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(src, &x));
  std::vector<int> ins = {x};
  quantizationOperands(ctx, op, in, &ins);
  Node& n = ctx.addNode(OpType::DequantizeLinear, op.name, ins, {ctx.define(op.outputs[0], Held::AsTflite)});
  if (in.scales.size() > 1) n.setInt("axis", in.quantizedDimension);
  return Status::ok();
}

Status importQuantize(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 1));
  const TfliteTensor& out = ctx.tensor(op.outputs[0]);
  if (!out.quantized || !quantizedType(out.dtype) || out.scales.size() != 1)
    return Status::unsupported("output type " + tensorTypeName(out.tfliteType) + " without per-tensor quantization");
  // An integer input with scales (requantization) is read through its DequantizeLinear.
  if (ctx.tensor(op.input(0)).dtype != DataType::Float32 && !ctx.readsQuantized(op.input(0)))
    return Status::unsupported("requantization of " + tensorTypeName(ctx.tensor(op.input(0)).tfliteType) + " input");
  int x;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(0), &x));
  std::vector<int> ins = {x};
  quantizationOperands(ctx, op, out, &ins);
  ctx.addNode(OpType::QuantizeLinear, op.name, ins, {ctx.define(op.outputs[0], Held::AsTflite)});
  return Status::ok();
}

}  // namespace

Status importSameLayout(ImportContext& ctx, const OpView& op, OpType type, Node** node) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 1));
  int x;
  Held held;
  OSPREY_RETURN_IF_ERROR(ctx.value(op.input(0), &x, &held));
  Node& n = ctx.addNode(type, op.name, {x}, {ctx.define(op.outputs[0], held)});
  if (node) *node = &n;
  return Status::ok();
}

void addElementwiseImporters(ImporterTable& t) {
  using B = tflite::BuiltinOperator;
  static const std::pair<B, OpType> kBinary[] = {
      {tflite::BuiltinOperator_ADD, OpType::Add},           {tflite::BuiltinOperator_SUB, OpType::Sub},
      {tflite::BuiltinOperator_MUL, OpType::Mul},           {tflite::BuiltinOperator_DIV, OpType::Div},
      {tflite::BuiltinOperator_POW, OpType::Pow},           {tflite::BuiltinOperator_MAXIMUM, OpType::Max},
      {tflite::BuiltinOperator_MINIMUM, OpType::Min},       {tflite::BuiltinOperator_PRELU, OpType::PRelu},
      {tflite::BuiltinOperator_LESS, OpType::Less},         {tflite::BuiltinOperator_GREATER, OpType::Greater},
      {tflite::BuiltinOperator_EQUAL, OpType::Equal},       {tflite::BuiltinOperator_LESS_EQUAL, OpType::LessOrEqual},
      {tflite::BuiltinOperator_GREATER_EQUAL, OpType::GreaterOrEqual},
      {tflite::BuiltinOperator_LOGICAL_AND, OpType::And},   {tflite::BuiltinOperator_LOGICAL_OR, OpType::Or},
  };
  static const std::pair<B, OpType> kUnary[] = {
      {tflite::BuiltinOperator_RELU, OpType::Relu},         {tflite::BuiltinOperator_LOGISTIC, OpType::Sigmoid},
      {tflite::BuiltinOperator_TANH, OpType::Tanh},         {tflite::BuiltinOperator_EXP, OpType::Exp},
      {tflite::BuiltinOperator_LOG, OpType::Log},           {tflite::BuiltinOperator_SQRT, OpType::Sqrt},
      {tflite::BuiltinOperator_ABS, OpType::Abs},           {tflite::BuiltinOperator_NEG, OpType::Neg},
      {tflite::BuiltinOperator_FLOOR, OpType::Floor},       {tflite::BuiltinOperator_CEIL, OpType::Ceil},
      {tflite::BuiltinOperator_ROUND, OpType::Round},       {tflite::BuiltinOperator_SIN, OpType::Sin},
      {tflite::BuiltinOperator_COS, OpType::Cos},
      {tflite::BuiltinOperator_ELU, OpType::Elu},           {tflite::BuiltinOperator_LOGICAL_NOT, OpType::Not},
      {tflite::BuiltinOperator_SIGN, OpType::Sign},
  };
  // The tables are static, so lambdas without captures can look their op up by code.
  for (auto& [code, type] : kBinary)
    t[code] = [](ImportContext& c, const OpView& o) {
      for (auto& [k, ty] : kBinary)
        if (k == o.code) return importBinary(c, o, ty);
      return Status::unsupported("");
    };
  for (auto& [code, type] : kUnary)
    t[code] = [](ImportContext& c, const OpView& o) {
      for (auto& [k, ty] : kUnary)
        if (k == o.code) return importSameLayout(c, o, ty);
      return Status::unsupported("");
    };
  t[tflite::BuiltinOperator_SQUARED_DIFFERENCE] = importSquaredDifference;
  t[tflite::BuiltinOperator_NOT_EQUAL] = importNotEqual;
  t[tflite::BuiltinOperator_FLOOR_DIV] = importFloorDiv;
  t[tflite::BuiltinOperator_FLOOR_MOD] = importFloorMod;
  t[tflite::BuiltinOperator_SQUARE] = [](ImportContext& c, const OpView& o) {  // x * x
    Node* n;
    OSPREY_RETURN_IF_ERROR(importSameLayout(c, o, OpType::Mul, &n));
    const int x = n->inputs[0];  // copied: push_back may move the vector it reads from
    n->inputs.push_back(x);
    return Status::ok();
  };
  t[tflite::BuiltinOperator_SELECT_V2] = importSelect;
  t[tflite::BuiltinOperator_RSQRT] = importRsqrt;
  t[tflite::BuiltinOperator_CAST] = importCast;
  t[tflite::BuiltinOperator_DEQUANTIZE] = importDequantize;
  t[tflite::BuiltinOperator_DENSIFY] = importDensify;
  t[tflite::BuiltinOperator_HARD_SWISH] = [](ImportContext& c, const OpView& o) {
    bool done;
    OSPREY_RETURN_IF_ERROR(importQuantizedTable(c, o, &done));
    return done ? Status::ok() : importSameLayout(c, o, OpType::HardSwish);
  };
  t[tflite::BuiltinOperator_QUANTIZE] = importQuantize;
  t[tflite::BuiltinOperator_RELU6] = [](ImportContext& c, const OpView& o) { return importClip(c, o, 0.f, 6.f); };
  t[tflite::BuiltinOperator_RELU_N1_TO_1] = [](ImportContext& c, const OpView& o) { return importClip(c, o, -1.f, 1.f); };
  t[tflite::BuiltinOperator_RELU_0_TO_1] = [](ImportContext& c, const OpView& o) { return importClip(c, o, 0.f, 1.f); };
  t[tflite::BuiltinOperator_LEAKY_RELU] = [](ImportContext& c, const OpView& o) {
    Node* n;
    OSPREY_RETURN_IF_ERROR(importSameLayout(c, o, OpType::LeakyRelu, &n));
    const auto* options = o.op->builtin_options_as_LeakyReluOptions();
    n->setFloat("alpha", options ? options->alpha() : 0.f);
    return Status::ok();
  };
  t[tflite::BuiltinOperator_GELU] = [](ImportContext& c, const OpView& o) {
    Node* n;
    OSPREY_RETURN_IF_ERROR(importSameLayout(c, o, OpType::Gelu, &n));
    const auto* options = o.op->builtin_options_as_GeluOptions();
    n->setString("approximate", options && options->approximate() ? "tanh" : "none");
    return Status::ok();
  };
}

}  // namespace osprey::tfl
