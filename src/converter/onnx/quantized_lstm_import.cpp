// com.microsoft.DynamicQuantizeLSTM (what ONNX Runtime's quantize_dynamic makes of an LSTM): an
// LSTM whose W and R are int8 / uint8, stored transposed ([directions, input, 4 * hidden] and
// [directions, hidden, 4 * hidden]) with a scale and zero point per direction or per column.
// Osprey imports it as the LSTM of its dequantized weights, so it runs in float with the
// weights' quantization error only (ONNX Runtime also quantizes X and H to uint8 at each step;
// outputs agree to within that rounding).
#include <string>
#include <vector>

#include "converter/onnx/import_context.h"

namespace osprey::onnx {

namespace {

// Per-column parameter p of `directions` x `columns` weights: one value, one per direction, or one per column.
Status parameterIndex(const TensorInfo& p, int64_t directions, int64_t columns, const char* what, int64_t* stride,
                      int64_t* perDirection) {
  const int64_t n = shapeElements(p.shape);
  if (n == 1) *stride = 0, *perDirection = 0;
  else if (n == directions) *stride = 0, *perDirection = 1;
  else if (n == directions * columns) *stride = 1, *perDirection = columns;
  else
    return Status::invalidModel(std::string(what) + " " + shapeToString(p.shape) + " must hold 1, " +
                                std::to_string(directions) + " or " + std::to_string(directions * columns) + " values");
  return Status::ok();
}

// The float LSTM weight [directions, 4 * hidden, rows] of a quantized [directions, rows, 4 * hidden] one.
Status dequantizeTransposed(ImportContext& ctx, const NodeProto& node, int w, int scale, int zero, const char* what,
                            int* out) {
  const TensorInfo* q = ctx.constantOf(w);
  const TensorInfo* s = ctx.constantOf(scale);
  const TensorInfo* z = zero >= 0 ? ctx.constantOf(zero) : nullptr;
  if (!q || !s || (zero >= 0 && !z))
    return Status::unsupported(std::string(what) + ", its scale and zero point must be constants");
  if (q->shape.size() != 3 || (q->dtype != DataType::Int8 && q->dtype != DataType::UInt8))
    return Status::invalidModel(std::string(what) + " must be int8 or uint8 [directions, rows, 4 * hidden], not " +
                                dataTypeName(q->dtype) + " " + shapeToString(q->shape));
  if (s->dtype != DataType::Float32) return Status::invalidModel(std::string(what) + "_scale must be float32");
  if (z && z->dtype != q->dtype) return Status::invalidModel(std::string(what) + "_zero_point must have " + what + "'s type");
  const int64_t directions = q->shape[0], rows = q->shape[1], columns = q->shape[2];
  int64_t sStride = 0, sDir = 0, zStride = 0, zDir = 0;
  OSPREY_RETURN_IF_ERROR(parameterIndex(*s, directions, columns, "the scale", &sStride, &sDir));
  if (z) OSPREY_RETURN_IF_ERROR(parameterIndex(*z, directions, columns, "the zero point", &zStride, &zDir));
  const float* scales = reinterpret_cast<const float*>(s->data.bytes.get());
  auto value = [&](const TensorInfo& t, int64_t i) {
    return t.dtype == DataType::Int8 ? static_cast<int32_t>(static_cast<int8_t>(t.data.bytes.get()[i]))
                                     : static_cast<int32_t>(t.data.bytes.get()[i]);
  };
  std::vector<float> f(static_cast<size_t>(directions * rows * columns));
  for (int64_t d = 0; d < directions; ++d)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < columns; ++c) {
        const int32_t code = value(*q, (d * rows + r) * columns + c);
        const int32_t zp = z ? value(*z, d * zDir + c * zStride) : 0;
        f[(d * columns + c) * rows + r] = static_cast<float>(code - zp) * scales[d * sDir + c * sStride];
      }
  *out = ctx.addConstant(node.name + "_" + what, DataType::Float32, {directions, columns, rows}, f.data(), f.size() * 4);
  return Status::ok();
}

}  // namespace

Status importDynamicQuantizeLSTM(ImportContext& ctx, const NodeProto& node) {
  auto input = [&](size_t i) { return i < node.inputs.size() ? ctx.tensor(node.inputs[i]) : -1; };
  if (input(1) < 0 || input(2) < 0 || input(8) < 0 || input(10) < 0)
    return Status::invalidModel("DynamicQuantizeLSTM needs X, W, R, W_scale and R_scale");
  int w = -1, r = -1;
  OSPREY_RETURN_IF_ERROR(dequantizeTransposed(ctx, node, input(1), input(8), input(9), "W", &w));
  OSPREY_RETURN_IF_ERROR(dequantizeTransposed(ctx, node, input(2), input(10), input(11), "R", &r));
  std::vector<int> ins = {input(0), w, r};
  for (size_t i = 3; i < 8; ++i) ins.push_back(input(i));  // B, sequence_lens, initial_h, initial_c, P
  return importWithInputs(ctx, node, OpType::LSTM, std::move(ins));
}

}  // namespace osprey::onnx
