// What every frontend's import context does to the graph it fills: tensors and constants with
// names unique in the graph.
#pragma once
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/graph.h"

namespace osprey {

class GraphWriter {
 public:
  // Node names as the model gives them (TFLite's are its own), or made unique as tensor names
  // are (a TensorFlow importer names several nodes after one NodeDef).
  enum class NodeNames { AsGiven, Unique };
  GraphWriter(Graph* graph, NodeNames nodeNames)
      : graph_(graph), nodeNames_(nodeNames), names_(std::make_shared<NameTable>()) {}
  Graph& graph() { return *graph_; }
  // Another writer of the same graph (a subgraph inlined into it) takes names from one table.
  void shareNamesWith(const GraphWriter& other) { names_ = other.names_; }
  // `hint`, or `hint__N` when a tensor or node already has that name.
  std::string uniqueName(const std::string& hint);
  // A tensor whose shape and type its producer sets.
  int temp(const std::string& hint);
  int addConstant(const std::string& hint, DataType dtype, const Shape& shape, const void* data, size_t bytes);
  int addInt64Constant(const std::string& hint, const std::vector<int64_t>& values, bool scalar = false);
  int addFloatConstant(const std::string& hint, const std::vector<float>& values, bool scalar = false);
  Node& addNode(OpType type, const std::string& name, std::vector<int> inputs, std::vector<int> outputs);
  // A value cast to int64 (shapes, axes and counts of Osprey ops are int64): int32 constants
  // widened here, anything else through a Cast.
  int asInt64(int index, const std::string& hint);

 protected:
  Graph* graph_;

 private:
  struct NameTable {
    std::set<std::string> used;
    int counter = 0;
  };
  NodeNames nodeNames_;
  std::shared_ptr<NameTable> names_;
};

}  // namespace osprey
