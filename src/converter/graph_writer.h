// What every frontend's import context does to the graph it fills: tensors and constants with
// names unique in the graph.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "core/graph.h"

namespace osprey {

class GraphWriter {
 public:
  explicit GraphWriter(Graph* graph) : graph_(graph) {}
  Graph& graph() { return *graph_; }
  // `hint`, or `hint__N` when a tensor or node already has that name.
  std::string uniqueName(const std::string& hint);
  // A tensor whose shape and type its producer sets.
  int temp(const std::string& hint);
  int addConstant(const std::string& hint, DataType dtype, const Shape& shape, const void* data, size_t bytes);
  int addInt64Constant(const std::string& hint, const std::vector<int64_t>& values, bool scalar = false);
  int addFloatConstant(const std::string& hint, const std::vector<float>& values, bool scalar = false);

 protected:
  Graph* graph_;

 private:
  std::set<std::string> names_;
  int counter_ = 0;
};

}  // namespace osprey
