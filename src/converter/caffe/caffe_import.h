// Caffe networks (deploy prototxt + caffemodel) into Osprey's graph: the layers become ONNX-style
// Osprey ops, NCHW as Caffe is; the converter's passes then run as for ONNX models.
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "converter/caffe/caffe_text.h"
#include "converter/caffe/caffe_weights.h"
#include "core/graph.h"

namespace osprey::caffe {

// What a layer importer works with: the graph under construction, blob names to tensors (a blob
// written in place gets a new tensor each time), ranks where known, and the layer's weights.
class CaffeContext {
 public:
  explicit CaffeContext(Graph* g) : g_(g) {}
  Graph& graph() { return *g_; }

  // The tensor blob `name` holds now; an error naming the layer when no layer wrote it.
  Status bottom(const std::string& layer, const std::string& name, int* out) const;
  // A new tensor for blob `name`, which from now on holds it.
  int top(const std::string& name);
  int constant(const std::string& hint, const Shape& shape, const std::vector<float>& values);
  int ints(const std::string& hint, const std::vector<int64_t>& values);
  int temp(const std::string& hint, int rank = -1);  // an intermediate tensor, of `rank` where known
  Node& node(OpType type, const std::string& name, std::vector<int> inputs, std::vector<int> outputs);
  // Rank of tensor t where the importers know it (-1: unknown).
  int rank(int t) const;
  void setRank(int t, int r);

  const std::map<std::string, int>& blobs() const { return blobs_; }
  const std::vector<std::string>& blobOrder() const { return order_; }  // in the order first written

 private:
  std::string unique(const std::string& hint);
  Graph* g_;
  std::map<std::string, int> blobs_;
  std::vector<std::string> order_;
  std::map<int, int> ranks_;
  std::set<std::string> names_;
};

struct Layer {
  const TextMessage* param = nullptr;  // the layer message of the prototxt
  std::string name, type;
  std::vector<std::string> bottoms, tops;
  const std::vector<Blob>* blobs = nullptr;  // from the weights (null: none)
  const Blob* blob(size_t i) const { return blobs && i < blobs->size() ? &(*blobs)[i] : nullptr; }
};

using LayerImporter = Status (*)(CaffeContext& ctx, const Layer& layer);
// The importer of a Caffe layer type (current names: "Convolution", "ReLU" ...), or null.
LayerImporter findLayerImporter(const std::string& type);

// Builds the graph of `net` (parsed prototxt) with `weights`.
Status importNet(const TextMessage& net, const LayerBlobs& weights, Graph* out, int* layerCount);

// Errors about a layer, naming it and its type.
Status layerError(const Layer& layer, const std::string& what);

}  // namespace osprey::caffe
