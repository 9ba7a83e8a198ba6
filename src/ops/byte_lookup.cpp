// ByteLookup (internal): Y[i] = Table[b] where b is X[i]'s byte read as unsigned (0..255), so an
// int8 code c indexes Table[c & 255]. X is uint8 or int8; Table is a 1-D constant of 256 uint8
// or int8 values, the dtype of Y. The TFLite importer writes a quantized unary op whose LiteRT
// kernel maps each input code to one output code (HARD_SWISH, RSQRT) as this table.
#include "ops/op_def.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

bool isByte(DataType t) { return t == DataType::UInt8 || t == DataType::Int8; }

Status byteLookupShape(const Node& node, const TensorViews& in, TensorViews& out) {
  (void)node;
  const TensorView &x = in[0], &table = in[1];
  if (!isByte(x.dtype)) return Status::invalidModel("ByteLookup X must be uint8 or int8, got " + std::string(dataTypeName(x.dtype)));
  if (!isByte(table.dtype) || table.shape != Shape{256})
    return Status::invalidModel("ByteLookup Table must be 256 uint8 or int8 values, got " +
                                std::string(dataTypeName(table.dtype)) + " " + shapeToString(table.shape));
  out[0] = {table.dtype, x.shape};
  return Status::ok();
}

Status byteLookupKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  (void)node;
  const uint8_t* x = in[0].as<const uint8_t>();
  const uint8_t* table = in[1].as<const uint8_t>();
  uint8_t* y = out[0].as<uint8_t>();
  const int64_t n = shapeElements(in[0].shape);
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_ByteLookup = {OpType::ByteLookup, "ByteLookup", 2, 2, 1, 1, byteLookupShape, byteLookupKernel,
                                 nullptr, 0, false};

}  // namespace osprey
