// The TensorFlow op importers, one family per file. Each maps one TensorFlow op onto Osprey ops
// (ONNX semantics), keeping 4-D activations NCHW where it can (tf_context.h).
// Status::unsupported from an importer lists the op as unsupported, with its message.
#pragma once
#include <string>
#include <unordered_map>

#include "converter/tensorflow/tf_context.h"

namespace osprey::tf {

using OpImporter = Status (*)(ImportContext& ctx, const NodeView& node);
using ImporterTable = std::unordered_map<std::string, OpImporter>;

// Null when Osprey cannot import the op.
OpImporter findImporter(const std::string& op);

void addNnImporters(ImporterTable& table);     // conv, pools, batch norm, matmul, resize, softmax
void addMathImporters(ImporterTable& table);   // unary, binary, comparisons, reductions, casts
void addShapeImporters(ImporterTable& table);  // reshape, concat, slice, gather, pad, pack ...

// Shared helpers.
// A layout-preserving op of one input: the output is held as the input.
Status importSameLayout(ImportContext& ctx, const NodeView& node, OpType type, Node** made = nullptr);
// A TensorFlow axis (negative counts from the end), normalised; an error when out of range.
Status normalizeAxis(const NodeView& node, int64_t axis, int rank, int64_t* out);
// The NCHW position of NHWC axis `a` of a 4-D value.
inline int64_t nchwAxis(int64_t a) { return kNhwcAxisInNchw[a]; }
std::string str(const std::vector<int64_t>& v);
// Folds `x` (op) `c` into the Conv that made x, when x is its only reader's input held NCHW and
// c a per-channel float constant (a BiasAdd, or a frozen batch norm's scale and shift): the
// node's value is then the Conv's. False leaves everything as it was.
bool foldIntoConv(ImportContext& ctx, const NodeView& node, OpType type, const std::string& x, const std::string& c);

}  // namespace osprey::tf
