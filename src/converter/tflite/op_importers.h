// The TFLite op importers, one family per file. Each maps one TFLite operator onto Osprey ops
// (ONNX semantics), keeping 4-D activations NCHW where it can (import_context.h).
// Status::unsupported from an importer lists the op as unsupported, with its message.
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "converter/tflite/import_context.h"

namespace osprey::tfl {

using OpImporter = Status (*)(ImportContext& ctx, const OpView& op);
using ImporterTable = std::unordered_map<int32_t, OpImporter>;

// Null when Osprey cannot import the builtin.
OpImporter findImporter(tflite::BuiltinOperator code);
// Null when Osprey does not know the custom op by that custom code.
OpImporter findCustomImporter(const std::string& customCode);

void addConvImporters(ImporterTable& table);         // conv, pools, dense, resize, space/depth
void addSpaceBatchImporters(ImporterTable& table);   // space to batch and back
void addElementwiseImporters(ImporterTable& table);  // unary, binary, activations, casts
void addShapeImporters(ImporterTable& table);        // reshape, concat, slice, pad, gather ...
void addReduceImporters(ImporterTable& table);       // reductions, softmax, arg max/min
void addIndexingImporters(ImporterTable& table);     // gather_nd, top-k, cumsum, broadcast, select, range, one-hot
void addRecurrentImporters(ImporterTable& table);    // the fused sequence LSTM
void addControlFlowImporters(ImporterTable& table);  // WHILE, IF

Status importTransposeConvBias(ImportContext& ctx, const OpView& op);  // custom Convolution2DTransposeBias
// A quantized unary op that TFLite computes in fixed point, as a table of its exact results;
// `done` stays false where the op or its quantization has no table (the caller imports it).
Status importQuantizedTable(ImportContext& ctx, const OpView& op, bool* done);
// The same for binary SQUARED_DIFFERENCE: a table of every pair of codes.
Status importQuantizedSquaredDifference(ImportContext& ctx, const OpView& op, bool* done);
// MEAN as LiteRT runs it on codes: the table of its result for every sum of `count` codes (false
// where the quantization or the count has none).
bool quantizedMeanTable(const TfliteTensor& x, const TfliteTensor& y, int64_t count, std::vector<int32_t>* table);
// output = table[index], `index` a float tensor holding exact integers; returns the table.
int quantizedTableLookup(ImportContext& ctx, const std::string& name, DataType dtype, const std::vector<int32_t>& values,
                         int floatIndex, int output);
// The codes as float32 (exact), for index arithmetic.
int codesAsFloat(ImportContext& ctx, const std::string& name, int codes);

// Shared helpers.
// Imports subgraph `index` into `target` (the caller's graph, or a Loop/If body): its inputs are
// `inputs` (Osprey tensors of `target`, TFLite order), its outputs come back the same way.
Status importSubgraphInto(const ImportContext& caller, int index, Graph* target, const std::vector<int>& inputs,
                          const std::string& prefix, std::vector<int>* outputs);
Status requireInputs(const OpView& op, size_t count);
Status missingOptions(const OpView& op, const char* table);
// A layout-preserving op of one input (activations, casts): the output is held as the input.
Status importSameLayout(ImportContext& ctx, const OpView& op, OpType type, Node** node = nullptr);

}  // namespace osprey::tfl
