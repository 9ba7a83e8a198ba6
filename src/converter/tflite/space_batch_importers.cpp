// SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND on 4-D values (two spatial dimensions), which older
// converters wrap around dilated convolutions. Both run on the value held NCHW, so the
// convolution between them needs no Transpose: Pad (or Slice for crops) at the spatial borders,
// and the block moved between the spatial dimensions and the batch by Reshape, Transpose, Reshape.
#include "converter/tflite/op_importers.h"

namespace osprey::tfl {

namespace {

struct BlockSpec {
  int64_t blockH = 1, blockW = 1;
  int64_t top = 0, bottom = 0, left = 0, right = 0;  // paddings or crops
  int64_t channels = 0, height = 0, width = 0;        // of the input
};

// Inputs: x, block_shape [2], and paddings or crops [2, 2], constant.
Status readBlockSpec(ImportContext& ctx, const OpView& op, const char* borderName, BlockSpec* spec) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 3));
  const int rank = ctx.rank(op.input(0));
  if (rank != 4) return Status::unsupported("rank " + std::to_string(rank) + " input; only 4-D is imported");
  std::vector<int64_t> block, border;
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(op.input(1), &block).withContext(op.name + " block_shape"));
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(op.input(2), &border).withContext(op.name + " " + borderName));
  if (block.size() != 2 || border.size() != 4)
    return Status::invalidModel(op.name + ": block_shape needs 2 values and " + borderName + " [2, 2]");
  if (block[0] < 1 || block[1] < 1) return Status::invalidModel(op.name + ": block_shape must be >= 1");
  for (int64_t b : border)
    if (b < 0) return Status::invalidModel(op.name + ": " + borderName + " must be >= 0");
  const Shape& shape = ctx.tensor(op.input(0)).shape;  // NHWC
  if (shape[1] < 0 || shape[2] < 0 || shape[3] < 0) return Status::unsupported("unknown height, width or channels");
  *spec = {block[0], block[1], border[0], border[1], border[2], border[3], shape[3], shape[1], shape[2]};
  return Status::ok();
}

// [B, C, H, W] -> pad -> [B, C, H'/bh, bh, W'/bw, bw] -> [bh, bw, B, C, H'/bh, W'/bw] -> [bh·bw·B, C, H'/bh, W'/bw],
// batch entry (i·bw + j)·B + b holding pixels (i, j) of each block: TensorFlow's order.
Status importSpaceToBatch(ImportContext& ctx, const OpView& op) {
  BlockSpec s;
  OSPREY_RETURN_IF_ERROR(readBlockSpec(ctx, op, "paddings", &s));
  const int64_t paddedH = s.height + s.top + s.bottom, paddedW = s.width + s.left + s.right;
  if (paddedH % s.blockH != 0 || paddedW % s.blockW != 0)
    return Status::invalidModel(op.name + ": the padded height and width are not multiples of block_shape");
  int x;
  OSPREY_RETURN_IF_ERROR(ctx.asNchw(op.input(0), &x));
  if (s.top || s.bottom || s.left || s.right) {
    const int padded = ctx.temp(op.name + "_padded");
    ctx.addNode(OpType::Pad, op.name + "_pad", {x, ctx.addInt64Constant(op.name + "_pads", {0, 0, s.top, s.left, 0, 0, s.bottom, s.right})},
                {padded});
    x = padded;
  }
  const int64_t outH = paddedH / s.blockH, outW = paddedW / s.blockW;
  const int blocks = ctx.temp(op.name + "_blocks"), moved = ctx.temp(op.name + "_moved");
  ctx.addNode(OpType::Reshape, op.name + "_blocks",
              {x, ctx.addInt64Constant(op.name + "_blocks_shape", {-1, s.channels, outH, s.blockH, outW, s.blockW})}, {blocks});
  ctx.addNode(OpType::Transpose, op.name + "_moved", {blocks}, {moved}).setInts("perm", {3, 5, 0, 1, 2, 4});
  ctx.addNode(OpType::Reshape, op.name, {moved, ctx.addInt64Constant(op.name + "_shape", {-1, s.channels, outH, outW})},
              {ctx.define(op.outputs[0], Held::Nchw)});
  return Status::ok();
}

// The inverse: [bh·bw·B, C, H, W] -> [bh, bw, B, C, H, W] -> [B, C, H, bh, W, bw] -> [B, C, H·bh, W·bw],
// then the crops sliced off.
Status importBatchToSpace(ImportContext& ctx, const OpView& op) {
  BlockSpec s;
  OSPREY_RETURN_IF_ERROR(readBlockSpec(ctx, op, "crops", &s));
  const int64_t fullH = s.height * s.blockH, fullW = s.width * s.blockW;
  if (s.top + s.bottom > fullH || s.left + s.right > fullW)
    return Status::invalidModel(op.name + ": the crops are larger than the output");
  int x;
  OSPREY_RETURN_IF_ERROR(ctx.asNchw(op.input(0), &x));
  const int blocks = ctx.temp(op.name + "_blocks"), moved = ctx.temp(op.name + "_moved");
  ctx.addNode(OpType::Reshape, op.name + "_blocks",
              {x, ctx.addInt64Constant(op.name + "_blocks_shape", {s.blockH, s.blockW, -1, s.channels, s.height, s.width})},
              {blocks});
  ctx.addNode(OpType::Transpose, op.name + "_moved", {blocks}, {moved}).setInts("perm", {2, 3, 4, 0, 5, 1});
  const int out = ctx.define(op.outputs[0], Held::Nchw);
  const bool cropped = s.top || s.bottom || s.left || s.right;
  const int full = cropped ? ctx.temp(op.name + "_uncropped") : out;
  ctx.addNode(OpType::Reshape, op.name + "_space", {moved, ctx.addInt64Constant(op.name + "_shape", {-1, s.channels, fullH, fullW})},
              {full});
  if (cropped)
    ctx.addNode(OpType::Slice, op.name,
                {full, ctx.addInt64Constant(op.name + "_starts", {s.top, s.left}),
                 ctx.addInt64Constant(op.name + "_ends", {fullH - s.bottom, fullW - s.right}), ctx.addInt64Constant(op.name + "_axes", {2, 3})},
                {out});
  return Status::ok();
}

}  // namespace

void addSpaceBatchImporters(ImporterTable& t) {
  t[tflite::BuiltinOperator_SPACE_TO_BATCH_ND] = importSpaceToBatch;
  t[tflite::BuiltinOperator_BATCH_TO_SPACE_ND] = importBatchToSpace;
}

}  // namespace osprey::tfl
