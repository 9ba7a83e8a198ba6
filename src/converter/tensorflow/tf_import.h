// TensorFlow GraphDef -> Osprey graph (the converter's TensorFlow frontend; docs/tensorflow.md).
#pragma once
#include <map>
#include <string>

#include "converter/tensorflow/tf_proto.h"
#include "core/graph.h"

namespace osprey::tf {

struct ImportOptions {
  std::map<std::string, Shape> inputShapes;  // Placeholder name -> shape (-1: dynamic)
};

// Imports a frozen GraphDef: Placeholders become the inputs; the nodes nothing reads (other
// than NoOp, Const and Placeholder) the outputs; only what they depend on is imported.
Status importGraphDef(const GraphDef& graphDef, const ImportOptions& options, Model* out);

}  // namespace osprey::tf
