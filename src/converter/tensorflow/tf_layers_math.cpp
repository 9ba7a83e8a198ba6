// Elementwise ops (unary, binary, comparisons, activations, casts) and reductions. Elementwise
// ops keep a value held NCHW in that layout; constants they broadcast with are moved at import.
#include <algorithm>

#include "converter/tensorflow/tf_layers.h"
#include "converter/tflite/layout.h"

namespace osprey::tf {

Status importSameLayout(ImportContext& ctx, const NodeView& node, OpType type, Node** made) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(1));
  int x;
  Held held;
  OSPREY_RETURN_IF_ERROR(ctx.value(node.input(0), &x, &held));
  Node& n = ctx.addNode(type, node.name(), {x}, {ctx.define(node, 0, held, ctx.rank(node.input(0)))});
  if (made) *made = &n;
  return Status::ok();
}

namespace {

// The operands of an elementwise op and the layout its result is held in: NCHW when one
// operand is and the others can follow (held NCHW, constants, or values of known rank <= 4,
// broadcast as TensorFlow does), TensorFlow's order otherwise.
Status operands(ImportContext& ctx, const NodeView& node, size_t count, std::vector<int>* ins, Held* held, int* rank) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(count));
  bool anyNchw = false, allFit = true;
  *rank = 0;
  for (size_t i = 0; i < count; ++i) {
    const std::string& r = node.input(i);
    const int rk = ctx.rank(r);
    *rank = (*rank < 0 || rk < 0) ? -1 : std::max(*rank, rk);
    if (ctx.heldAs(r) == Held::Nchw) {
      anyNchw = true;
      continue;
    }
    const TensorInfo* c = ctx.constant(r);
    if (!(c && c->shape.size() <= 4) && (rk < 0 || rk > 4)) allFit = false;
  }
  *held = anyNchw && allFit ? Held::Nchw : Held::AsTf;
  if (*held == Held::Nchw) *rank = 4;
  ins->clear();
  for (size_t i = 0; i < count; ++i) {
    const std::string& r = node.input(i);
    int v;
    if (*held == Held::AsTf) OSPREY_RETURN_IF_ERROR(ctx.asTf(r, &v));
    else if (ctx.heldAs(r) == Held::Nchw || ctx.rank(r) == 0) OSPREY_RETURN_IF_ERROR(ctx.value(r, &v));
    else OSPREY_RETURN_IF_ERROR(ctx.asNchw(r, &v));
    ins->push_back(v);
  }
  return Status::ok();
}

Status elementwise(ImportContext& ctx, const NodeView& node, OpType type, size_t count) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(count));
  if ((type == OpType::Add || type == OpType::Sub || type == OpType::Mul) && count == 2) {
    if (foldIntoConv(ctx, node, type, node.input(0), node.input(1))) return Status::ok();
    if (type != OpType::Sub && foldIntoConv(ctx, node, type, node.input(1), node.input(0))) return Status::ok();
  }
  std::vector<int> ins;
  Held held;
  int rank;
  OSPREY_RETURN_IF_ERROR(operands(ctx, node, count, &ins, &held, &rank));
  ctx.addNode(type, node.name(), ins, {ctx.define(node, 0, held, rank)});
  return Status::ok();
}

// The pieces of a composed op: each step's output feeds the next; the last is the node's.
struct Composer {
  ImportContext& ctx;
  const NodeView& node;
  Held held;
  int rank;
  int step(OpType type, std::vector<int> ins) {
    const int out = ctx.temp(node.name() + "_" + opTypeName(type));
    ctx.addNode(type, node.name() + "_" + opTypeName(type), std::move(ins), {out});
    return out;
  }
  void last(OpType type, std::vector<int> ins) {
    ctx.addNode(type, node.name(), std::move(ins), {ctx.define(node, 0, held, rank)});
  }
  int scalar(float v) { return ctx.addFloatConstant(node.name() + "_c", {v}, true); }
};

Status composed(ImportContext& ctx, const NodeView& node, size_t count,
                void (*build)(Composer& c, const std::vector<int>& in)) {
  std::vector<int> ins;
  Held held;
  int rank;
  OSPREY_RETURN_IF_ERROR(operands(ctx, node, count, &ins, &held, &rank));
  Composer c{ctx, node, held, rank};
  build(c, ins);
  return Status::ok();
}

bool isFloat(int32_t t) { return t == DT_FLOAT || t == DT_DOUBLE || t == DT_HALF || t == DT_BFLOAT16; }

Status importFloorDivMod(ImportContext& ctx, const NodeView& node, bool div) {
  const bool floating = isFloat(node.attrType("T", DT_FLOAT));
  std::vector<int> in;
  Held held;
  int rank;
  OSPREY_RETURN_IF_ERROR(operands(ctx, node, 2, &in, &held, &rank));
  Composer c{ctx, node, held, rank};
  if (floating) {  // floor(a / b); a - floor(a / b) * b
    const int q = c.step(OpType::Div, {in[0], in[1]});
    if (div) return c.last(OpType::Floor, {q}), Status::ok();
    const int f = c.step(OpType::Floor, {q});
    c.last(OpType::Sub, {in[0], c.step(OpType::Mul, {f, in[1]})});
    return Status::ok();
  }
  // Integer Mod with fmod=0 takes the divisor's sign, as FloorMod does; a - mod is then an
  // exact multiple of b, so truncating division gives the floor.
  const int m = div ? c.step(OpType::Mod, {in[0], in[1]}) : -1;
  if (!div) {
    c.last(OpType::Mod, {in[0], in[1]});
    return Status::ok();
  }
  c.last(OpType::Div, {c.step(OpType::Sub, {in[0], m}), in[1]});
  return Status::ok();
}

Status importAddN(ImportContext& ctx, const NodeView& node) {
  if (node.inputs.empty()) return node.error("has no inputs");
  if (node.inputs.size() == 1) return elementwise(ctx, node, OpType::Identity, 1);
  return elementwise(ctx, node, OpType::Sum, node.inputs.size());
}

Status importCast(ImportContext& ctx, const NodeView& node) {
  const int32_t to = node.attrType("DstT", DT_INVALID);
  const DataType dt = dataTypeOf(to);
  if (dt == DataType::Undefined || dt == DataType::String) return Status::unsupported("cast to " + tfTypeName(to));
  Node* n;
  OSPREY_RETURN_IF_ERROR(importSameLayout(ctx, node, OpType::Cast, &n));
  n->setInt("to", static_cast<int64_t>(dt));
  return Status::ok();
}

Status importClipped(ImportContext& ctx, const NodeView& node, float lo, float hi) {
  std::vector<int> in;
  Held held;
  int rank;
  OSPREY_RETURN_IF_ERROR(operands(ctx, node, 1, &in, &held, &rank));
  Composer c{ctx, node, held, rank};
  c.last(OpType::Clip, {in[0], c.scalar(lo), c.scalar(hi)});
  return Status::ok();
}

Status importLeakyRelu(ImportContext& ctx, const NodeView& node) {
  Node* n;
  OSPREY_RETURN_IF_ERROR(importSameLayout(ctx, node, OpType::LeakyRelu, &n));
  n->setFloat("alpha", node.attrFloat("alpha", 0.2f));
  return Status::ok();
}

Status importSelect(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(3));
  if (node.def->op == "Select" && ctx.rank(node.input(0)) == 1 && ctx.rank(node.input(1)) != 1)
    return Status::unsupported("Select with a vector condition picking rows");
  return elementwise(ctx, node, OpType::Where, 3);
}

// Where(condition): the coordinates of true elements, [count, rank] int64.
Status importWhere(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(1));
  int x;
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &x));
  const int nz = ctx.temp(node.name() + "_nonzero");
  ctx.addNode(OpType::NonZero, node.name() + "_nonzero", {x}, {nz});
  ctx.addNode(OpType::Transpose, node.name(), {nz}, {ctx.define(node, 0, Held::AsTf, 2)}).setInts("perm", {1, 0});
  return Status::ok();
}

// Mean, Sum, Max, Min, Prod over constant axes (remapped for a value held NCHW) or computed ones.
Status importReduce(ImportContext& ctx, const NodeView& node, OpType type) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(2));
  const bool keep = node.attrBool("keep_dims", false);
  const int rank = ctx.rank(node.input(0));
  std::vector<int64_t> axes;
  const bool known = ctx.constantInts(node.input(1), &axes).isOk();
  int x, axesIndex;
  Held held = Held::AsTf;
  int outRank = -1;
  if (known) {
    if (rank >= 0) {
      for (int64_t& a : axes) OSPREY_RETURN_IF_ERROR(normalizeAxis(node, a, rank, &a));
      std::sort(axes.begin(), axes.end());
      axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
      outRank = keep ? rank : rank - static_cast<int>(axes.size());
    }
    const bool nchw = ctx.heldAs(node.input(0)) == Held::Nchw && (keep || tfl::dropKeepsTfliteOrder(axes));
    std::vector<int64_t> mapped = axes;
    if (nchw) {
      for (int64_t& a : mapped) a = nchwAxis(a);
      OSPREY_RETURN_IF_ERROR(ctx.value(node.input(0), &x));
      held = keep ? Held::Nchw : Held::AsTf;
    } else {
      OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &x));
    }
    axesIndex = ctx.addInt64Constant(node.name() + "_axes", mapped);
  } else {
    OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &x));
    OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(1), &axesIndex));
    axesIndex = ctx.asInt64(axesIndex, node.name() + "_axes");
    if (keep) outRank = rank;
  }
  Node& n = ctx.addNode(type, node.name(), {x, axesIndex}, {ctx.define(node, 0, held, outRank)});
  n.setInt("keepdims", keep ? 1 : 0);
  n.setInt("noop_with_empty_axes", 1);  // TensorFlow reduces nothing over an empty axis list
  return Status::ok();
}

Status importArg(ImportContext& ctx, const NodeView& node, OpType type) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(2));
  std::vector<int64_t> axis;
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(node.input(1), &axis).withContext(node.label + " dimension"));
  if (axis.size() != 1) return node.error("dimension must be a scalar");
  const int rank = ctx.rank(node.input(0));
  int x;
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &x));
  const int32_t outType = node.attrType("output_type", DT_INT64);
  const int outRank = rank < 0 ? -1 : rank - 1;
  const int produced = outType == DT_INT64 ? ctx.define(node, 0, Held::AsTf, outRank) : ctx.temp(node.name() + "_i64");
  Node& n = ctx.addNode(type, node.name() + (outType == DT_INT64 ? "" : "_i64"), {x}, {produced});
  n.setInt("axis", axis[0]);
  n.setInt("keepdims", 0);
  if (outType != DT_INT64)
    ctx.addNode(OpType::Cast, node.name(), {produced}, {ctx.define(node, 0, Held::AsTf, outRank)})
        .setInt("to", static_cast<int64_t>(dataTypeOf(outType)));
  return Status::ok();
}

}  // namespace

void addMathImporters(ImporterTable& t) {
#define OSPREY_TF_UNARY(tfName, type) \
  t[tfName] = [](ImportContext& c, const NodeView& n) { return importSameLayout(c, n, OpType::type); };
  OSPREY_TF_UNARY("Relu", Relu)
  OSPREY_TF_UNARY("Elu", Elu)
  OSPREY_TF_UNARY("Selu", Selu)
  OSPREY_TF_UNARY("Sigmoid", Sigmoid)
  OSPREY_TF_UNARY("Tanh", Tanh)
  OSPREY_TF_UNARY("Softplus", Softplus)
  OSPREY_TF_UNARY("Softsign", Softsign)
  OSPREY_TF_UNARY("Sqrt", Sqrt)
  OSPREY_TF_UNARY("Exp", Exp)
  OSPREY_TF_UNARY("Log", Log)
  OSPREY_TF_UNARY("Erf", Erf)
  OSPREY_TF_UNARY("Abs", Abs)
  OSPREY_TF_UNARY("Neg", Neg)
  OSPREY_TF_UNARY("Floor", Floor)
  OSPREY_TF_UNARY("Ceil", Ceil)
  OSPREY_TF_UNARY("Round", Round)
  OSPREY_TF_UNARY("Sign", Sign)
  OSPREY_TF_UNARY("Sin", Sin)
  OSPREY_TF_UNARY("Cos", Cos)
  OSPREY_TF_UNARY("Reciprocal", Reciprocal)
  OSPREY_TF_UNARY("Inv", Reciprocal)
  OSPREY_TF_UNARY("LogicalNot", Not)
  OSPREY_TF_UNARY("IsNan", IsNaN)
#undef OSPREY_TF_UNARY
#define OSPREY_TF_BINARY(tfName, type) \
  t[tfName] = [](ImportContext& c, const NodeView& n) { return elementwise(c, n, OpType::type, 2); };
  OSPREY_TF_BINARY("Add", Add)
  OSPREY_TF_BINARY("AddV2", Add)
  OSPREY_TF_BINARY("Sub", Sub)
  OSPREY_TF_BINARY("Mul", Mul)
  OSPREY_TF_BINARY("RealDiv", Div)
  OSPREY_TF_BINARY("Div", Div)
  OSPREY_TF_BINARY("Maximum", Max)
  OSPREY_TF_BINARY("Minimum", Min)
  OSPREY_TF_BINARY("Pow", Pow)
  OSPREY_TF_BINARY("Equal", Equal)
  OSPREY_TF_BINARY("Less", Less)
  OSPREY_TF_BINARY("LessEqual", LessOrEqual)
  OSPREY_TF_BINARY("Greater", Greater)
  OSPREY_TF_BINARY("GreaterEqual", GreaterOrEqual)
  OSPREY_TF_BINARY("LogicalAnd", And)
  OSPREY_TF_BINARY("LogicalOr", Or)
#undef OSPREY_TF_BINARY
  t["NotEqual"] = [](ImportContext& c, const NodeView& n) {
    return composed(c, n, 2, [](Composer& k, const std::vector<int>& in) {
      k.last(OpType::Not, {k.step(OpType::Equal, {in[0], in[1]})});
    });
  };
  t["Square"] = [](ImportContext& c, const NodeView& n) {
    return composed(c, n, 1, [](Composer& k, const std::vector<int>& in) { k.last(OpType::Mul, {in[0], in[0]}); });
  };
  t["SquaredDifference"] = [](ImportContext& c, const NodeView& n) {
    return composed(c, n, 2, [](Composer& k, const std::vector<int>& in) {
      const int d = k.step(OpType::Sub, {in[0], in[1]});
      k.last(OpType::Mul, {d, d});
    });
  };
  t["Rsqrt"] = [](ImportContext& c, const NodeView& n) {
    return composed(c, n, 1, [](Composer& k, const std::vector<int>& in) {
      k.last(OpType::Reciprocal, {k.step(OpType::Sqrt, {in[0]})});
    });
  };
  t["Erfc"] = [](ImportContext& c, const NodeView& n) {
    return composed(c, n, 1, [](Composer& k, const std::vector<int>& in) {
      k.last(OpType::Sub, {k.scalar(1.f), k.step(OpType::Erf, {in[0]})});
    });
  };
  t["Relu6"] = [](ImportContext& c, const NodeView& n) { return importClipped(c, n, 0.f, 6.f); };
  t["LeakyRelu"] = importLeakyRelu;
  t["FloorDiv"] = [](ImportContext& c, const NodeView& n) { return importFloorDivMod(c, n, true); };
  t["FloorMod"] = [](ImportContext& c, const NodeView& n) { return importFloorDivMod(c, n, false); };
  t["AddN"] = importAddN;
  t["Cast"] = importCast;
  t["Select"] = importSelect;
  t["SelectV2"] = importSelect;
  t["Where"] = importWhere;
  t["Mean"] = [](ImportContext& c, const NodeView& n) { return importReduce(c, n, OpType::ReduceMean); };
  t["Sum"] = [](ImportContext& c, const NodeView& n) { return importReduce(c, n, OpType::ReduceSum); };
  t["Max"] = [](ImportContext& c, const NodeView& n) { return importReduce(c, n, OpType::ReduceMax); };
  t["Min"] = [](ImportContext& c, const NodeView& n) { return importReduce(c, n, OpType::ReduceMin); };
  t["Prod"] = [](ImportContext& c, const NodeView& n) { return importReduce(c, n, OpType::ReduceProd); };
  t["ArgMax"] = [](ImportContext& c, const NodeView& n) { return importArg(c, n, OpType::ArgMax); };
  t["ArgMin"] = [](ImportContext& c, const NodeView& n) { return importArg(c, n, OpType::ArgMin); };
}

}  // namespace osprey::tf
