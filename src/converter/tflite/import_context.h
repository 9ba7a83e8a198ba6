// State shared by the TFLite op importers: the Osprey graph under construction, every TFLite
// tensor's Osprey value and the layout it is held in.
//
// TFLite's image ops are NHWC; Osprey's Conv and pools are NCHW. A 4-D activation made by an
// NCHW op stays NCHW (`Held::Nchw`: the Osprey tensor is the TFLite one permuted by
// kNhwcToNchw) for as long as the ops reading it can take it that way; a Transpose is inserted
// only where an op needs TFLite's own order (asTflite) and at the graph's outputs.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "converter/graph_writer.h"
#include "converter/tflite/tflite_reader.h"
#include "core/graph.h"

namespace osprey::tfl {

enum class Held { AsTflite, Nchw };

// NHWC position -> NCHW position of the same dimension, and the Transpose perms both ways.
constexpr int kNhwcAxisInNchw[4] = {0, 2, 3, 1};
inline const std::vector<int64_t> kToNchw = {0, 3, 1, 2};
inline const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};

struct TfliteTensor {
  std::string name;
  DataType dtype = DataType::Undefined;
  tflite::TensorType tfliteType = tflite::TensorType_FLOAT32;
  Shape shape;  // TFLite order; -1 where shape_signature says unknown
  bool quantized = false;  // carries scales (an integer tensor of a quantized model)
  std::vector<float> scales;
  std::vector<int64_t> zeroPoints;
  int quantizedDimension = 0;
  int constant = -1;  // the Osprey constant holding its data, TFLite order; -1 if none
  bool variable = false;  // state an op keeps between invocations (zeros at the start)
};

// One operator as the importers see it.
struct OpView {
  const tflite::Operator* op = nullptr;
  tflite::BuiltinOperator code = tflite::BuiltinOperator_ADD;
  std::string name;  // "CONV_2D #3" — every node the importer makes is named after it
  std::vector<int> inputs;   // TFLite tensor indices, -1 for an omitted optional input
  std::vector<int> outputs;
  int input(size_t i) const { return i < inputs.size() ? inputs[i] : -1; }
};

class ImportContext : public GraphWriter {
 public:
  ImportContext(Graph* graph, const tflite::Model* model, const tflite::SubGraph* subgraph, const uint8_t* file,
                size_t fileSize);
  // Reads every tensor of the subgraph (types, shapes, constants); checks buffer indices and
  // that each constant's bytes match its shape.
  Status readTensors();
  int tensorCount() const { return static_cast<int>(tensors_.size()); }
  const TfliteTensor& tensor(int t) const { return tensors_.at(t); }
  int rank(int t) const { return static_cast<int>(tensors_.at(t).shape.size()); }
  bool isConstant(int t) const { return t >= 0 && tensors_[t].constant >= 0; }
  // The constant's values as int64 (int32 or int64 tensors), for shapes, axes and paddings.
  Status constantInts(int t, std::vector<int64_t>* out) const;
  Status constantFloats(int t, std::vector<float>* out) const;

  // The Osprey tensor holding TFLite tensor `t` now, and how it is held; an error names the
  // tensor when nothing has produced it yet.
  Status value(int t, int* index, Held* held);
  Held heldAs(int t) const;
  // The value in TFLite's order: a Transpose (made once) when it is held NCHW.
  Status asTflite(int t, int* index);
  // A 4-D value in NCHW: a permuted copy for constants of rank <= 4 (padded with leading 1s),
  // a Transpose (made once) otherwise.
  Status asNchw(int t, int* index);
  // A constant's data moved by `perm` (TFLite order -> perm order), as a new constant (its
  // DequantizeLinear, per-axis scales following the axis, when it is read quantized).
  int permutedConstant(int t, const std::vector<int64_t>& perm, const std::string& hint);

  // Quantized models are imported in QDQ form, the form passes::fuseQuantizedOps turns into
  // Osprey's integer ops: while an op is imported (between beginOp and endOp), value, asTflite,
  // asNchw and permutedConstant give its quantized operands as float through a
  // DequantizeLinear of the integer tensor, and define hands out a float tensor that endOp
  // quantizes into the integer one. QUANTIZE keeps its integer result, DEQUANTIZE its integer
  // operand. Outside an op (graph inputs and outputs) tensors are their integer selves.
  void beginOp(const OpView& op);
  void endOp();
  // The integer codes themselves, for an op computed on them: tensor t in NCHW or in TFLite's
  // order, and t defined without a QuantizeLinear.
  Status codesAsNchw(int t, int* index);
  Status codesAsTflite(int t, int* index);
  Status codes(int t, int* index, Held* held);
  int defineCodes(int t, Held held);
  // Whether tensor `t` is read or written as float around an integer tensor in this op.
  bool readsQuantized(int t) const;
  bool writesQuantized(int t) const;
  // A fused activation whose range holds the op's whole quantized output range: TFLite clamps
  // to it in integers, which the QuantizeLinear's saturation already does.
  bool activationIsSaturation(tflite::ActivationFunctionType act) const;

  // Makes the Osprey tensor that TFLite tensor `t` is produced into, held as `held`.
  int define(int t, Held held);
  bool isDefined(int t) const;
  // Makes TFLite tensor `t` the constant `constantIndex` (values computed at import).
  void bindConstant(int t, int constantIndex);
  // Makes TFLite tensor `t` (a subgraph's input) the existing Osprey tensor `index`, TFLite order.
  void bindValue(int t, int index);

  // A subgraph (WHILE, IF) imported inside another: names get `prefix`, and `callers` lists the
  // subgraphs on the way to it, so that a subgraph calling itself is an error, not a recursion.
  void nestIn(const ImportContext& caller, int subgraphIndex, const std::string& prefix);
  const std::string& namePrefix() const { return namePrefix_; }
  const std::vector<int>& callers() const { return callers_; }
  const tflite::Model& model() const { return *model_; }
  const uint8_t* file() const { return file_; }
  size_t fileSize() const { return fileSize_; }

 private:
  Status rawValue(int t, int* index, Held* held);
  int rawTflite(int t);
  // DequantizeLinear of `raw`, an integer form of tensor t, scales along `axis` (made once).
  int dequantized(int t, int raw, int axis);
  struct Pending {
    int t, produced, quantized;
  };
  struct Value {
    int index = -1;
    Held held = Held::AsTflite;
    int tfliteCopy = -1;  // the value in the other layout, once made
    int nchwCopy = -1;
  };
  const tflite::Model* model_;
  const tflite::SubGraph* subgraph_;
  const uint8_t* file_;
  size_t fileSize_;
  std::vector<TfliteTensor> tensors_;
  std::vector<Value> values_;
  const OpView* op_ = nullptr;
  bool dequantizeInputs_ = false, quantizeOutputs_ = false;
  std::map<int, int> dequantizedOf_;
  std::vector<Pending> pending_;
  std::string namePrefix_;
  std::vector<int> callers_ = {0};
};

// Applies a fused activation: `produced` (what the op wrote) -> `out`. With NONE, the caller
// writes straight to `out` instead (see outputFor).
Status applyActivation(ImportContext& ctx, const OpView& op, tflite::ActivationFunctionType act, int produced, int out);
// The tensor an op should write: `out` itself without an activation, else a temporary.
inline int outputFor(ImportContext& ctx, tflite::ActivationFunctionType act, int out) {
  const bool none = act == tflite::ActivationFunctionType_NONE || ctx.activationIsSaturation(act);
  return none ? out : ctx.temp("pre_activation");
}

}  // namespace osprey::tfl
