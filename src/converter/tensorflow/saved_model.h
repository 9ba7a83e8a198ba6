// TensorFlow SavedModel directories (saved_model.pb and variables/): the MetaGraphDef tagged
// "serve", one of its signatures, and the variables of the tensor bundle, made into one graph
// the GraphDef importer takes (docs/tensorflow.md).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "converter/tensorflow/tf_proto.h"

namespace osprey::tf {

// One input or output of a signature: its key and the graph value ("node:k") it names.
struct SignatureTensor {
  std::string key;
  std::string tensor;
  int32_t dtype = DT_INVALID;
};

struct Signature {
  std::string name;
  std::vector<SignatureTensor> inputs, outputs;
};

struct MetaGraph {
  std::vector<std::string> tags;
  GraphDef graph;
  std::string restoreOp;  // the SaverDef's restore_op_name
  std::vector<Signature> signatures;
};

// Parses saved_model.pb's bytes (the caller names the file in errors).
Status parseSavedModel(const uint8_t* data, size_t size, std::vector<MetaGraph>* out);

// Reads a variable's value by its checkpoint key.
using VariableReader = std::function<Status(const std::string& key, TfTensor* out)>;

// The graph of `signature` ("" picks serving_default): the functions its call reaches inlined,
// each variable a Const of its value, its inputs Placeholders and its outputs Identity nodes
// named by the signature's keys (outputs in key order).
Status signatureGraph(const MetaGraph& meta, const std::string& signature, const VariableReader& readVariable,
                      GraphDef* out);

// A GraphDef whose nodes call functions of its library (StatefulPartitionedCall, or While / If
// left unlowered when it was frozen) with the calls inlined as signatureGraph inlines them; its
// outputs (the nodes nothing reads) keep their names. Graphs without calls stay as they are.
Status inlineGraphFunctions(GraphDef* graph);

// The same for a SavedModel directory; errors name the file, the signature or the variable.
Status loadSavedModel(const std::string& dir, const std::string& signature, GraphDef* out);

}  // namespace osprey::tf
