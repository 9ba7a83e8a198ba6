// State shared by the TensorFlow op importers: the Osprey graph under construction and every
// TensorFlow value ("node:k") with the layout it is held in.
//
// TensorFlow's image ops are NHWC; Osprey's Conv and pools are NCHW. As in the TFLite importer,
// a 4-D activation made by an image op stays NCHW (`Held::Nchw`: the Osprey tensor is the
// TensorFlow one permuted by [0, 3, 1, 2]) for as long as the ops reading it can take it that
// way; a Transpose back is made (once per value) only where an op needs TensorFlow's order and
// at the graph's outputs. GraphDefs rarely carry shapes, so a value's rank is tracked where it
// is known (-1 where not) to decide what an op may take NCHW.
#pragma once
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "converter/graph_writer.h"
#include "converter/tensorflow/tf_proto.h"
#include "core/graph.h"

namespace osprey::tf {

enum class Held { AsTf, Nchw };

inline const std::vector<int64_t> kToNchw = {0, 3, 1, 2};
inline const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};
constexpr int kNhwcAxisInNchw[4] = {0, 2, 3, 1};

// One node as the importers see it.
struct NodeView {
  const NodeDef* def = nullptr;
  std::vector<std::string> inputs;  // data inputs as "node:k" (control inputs dropped)
  std::string label;                // "node 'conv1' (Conv2D)": errors name it

  const std::string& name() const { return def->name; }
  const std::string& input(size_t i) const { return inputs[i]; }
  const AttrValue* attr(const std::string& key) const { return def->attr(key); }
  int64_t attrInt(const std::string& key, int64_t fallback) const;
  float attrFloat(const std::string& key, float fallback) const;
  bool attrBool(const std::string& key, bool fallback) const;
  std::string attrString(const std::string& key, const std::string& fallback) const;
  int32_t attrType(const std::string& key, int32_t fallback) const;
  std::vector<int64_t> attrInts(const std::string& key) const;
  Status requireInputs(size_t count) const;
  Status error(const std::string& what) const { return Status::invalidModel(label + ": " + what); }
};

class ImportContext : public GraphWriter {
 public:
  explicit ImportContext(Graph* graph) : GraphWriter(graph, NodeNames::Unique) {}

  // The Osprey tensor holding value `ref` ("node:k") now, and how it is held.
  Status value(const std::string& ref, int* index, Held* held = nullptr);
  Held heldAs(const std::string& ref) const;
  int rank(const std::string& ref) const;  // -1: unknown
  // The value in TensorFlow's order: a Transpose (made once) when it is held NCHW.
  Status asTf(const std::string& ref, int* index);
  // The value NCHW: a permuted copy for constants of rank <= 4 (padded with leading 1s), a
  // Transpose (made once) for other 4-D values.
  Status asNchw(const std::string& ref, int* index);
  // The constant behind `ref`, or null.
  const TensorInfo* constant(const std::string& ref) const;
  Status constantInts(const std::string& ref, std::vector<int64_t>* out) const;
  Status constantFloats(const std::string& ref, std::vector<float>* out) const;

  // Makes the Osprey tensor that output `k` of `node` is written to.
  int define(const NodeView& node, int k, Held held, int rank);
  // Makes output `k` of `node` an existing Osprey tensor.
  void bind(const NodeView& node, int k, int index, Held held, int rank);
  // Makes output `k` of `node` the value `ref` (Identity and its kin cost nothing).
  Status alias(const NodeView& node, int k, const std::string& ref);
  bool isDefined(const std::string& ref) const { return values_.count(ref) != 0; }


  // How many nodes read each value ("node:k"), for folds that need a value's only reader.
  void setReaders(std::unordered_map<std::string, int> readers) { readers_ = std::move(readers); }
  int readers(const std::string& ref) const {
    auto it = readers_.find(ref);
    return it == readers_.end() ? 0 : it->second;
  }
  // Conv outputs whose per-channel scale and shift may still be folded into the Conv.
  void markFoldableConv(int tensor) { foldableConvs_.insert(tensor); }
  bool isFoldableConv(int tensor) const { return foldableConvs_.count(tensor) != 0; }

  // Makes this the context of a subgraph (a loop's body): a value it does not hold is taken
  // from `outer` and becomes a trailing input of the subgraph, its outer tensor in captured().
  void captureFrom(ImportContext* outer) { outer_ = outer; }
  const std::vector<int>& captured() const { return captured_; }

 private:
  struct Value {
    int index = -1;
    Held held = Held::AsTf;
    int rank = -1;
    int tfCopy = -1;  // the value in the other layout, once made
    int nchwCopy = -1;
  };
  Status find(const std::string& ref, Value** v);
  ImportContext* outer_ = nullptr;
  std::vector<int> captured_;
  std::unordered_map<std::string, int> readers_;
  std::set<int> foldableConvs_;
  std::unordered_map<std::string, Value> values_;
};

// "node" -> "node:0"; "node:2" stays.
std::string canonicalRef(const std::string& input);
// The node a reference names.
std::string refNode(const std::string& ref);

}  // namespace osprey::tf
