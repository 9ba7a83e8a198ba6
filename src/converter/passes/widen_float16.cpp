// Each float16 tensor of the graph has up to two forms: float32 (read by the widened ops) and
// float16 (read by the ops that run as written, and the graph's outputs). Its producer makes one
// of them; a Cast makes the other where it is first needed.
#include "converter/passes/widen_float16.h"

#include <algorithm>
#include <unordered_set>

#include "converter/passes/widen_float16_ops.h"
#include "core/dtype.h"

namespace osprey::passes {

namespace {

using float16::Half;

enum class Mode {
  AsWritten,  // no float16 input: nothing changes
  Widened,    // float16 inputs are read as float32; float16 outputs are written as float32
  Narrow,     // runs as written: float16 inputs are read as float16
};

Half declaredHalf(const TensorInfo& t) {
  if (t.dtype == DataType::Undefined) return Half::Unknown;
  return t.dtype == DataType::Float16 ? Half::Yes : Half::No;
}

bool widensCast(const Node& node, Half input) {
  const auto to = static_cast<DataType>(node.getInt("to", 0));
  return input == Half::Yes && (to == DataType::Float32 || to == DataType::Float64);
}

class Widening {
 public:
  explicit Widening(Graph& g)
      : g_(g), half_(g.tensors.size()), wide_(g.tensors.size(), -1), narrow_(g.tensors.size(), -1),
        alias_(g.tensors.size(), -1), modes_(g.nodes.size(), Mode::AsWritten) {
    for (size_t i = 0; i < g.tensors.size(); ++i) {
      half_[i] = declaredHalf(g.tensors[i]);
      names_.insert(g.tensors[i].name);
    }
    for (int o : g.outputs) isOutput_.insert(o);
  }

  // The mode of every node and whether each tensor is float16; false where the rewrite declines.
  bool classify() {
    for (size_t k = 0; k < g_.nodes.size(); ++k)
      if (!classify(g_.nodes[k], &modes_[k])) return false;
    return true;
  }

  // Widened ops other than Casts: a graph whose only float16 arithmetic is a Cast gains nothing.
  int widenedOps() const {
    int n = 0;
    for (size_t k = 0; k < modes_.size(); ++k) n += modes_[k] == Mode::Widened && g_.nodes[k].type != OpType::Cast;
    return n;
  }

  void rewrite() {
    for (size_t i = 0; i < g_.tensors.size(); ++i)
      if (half_[i] == Half::Yes && g_.tensors[i].isConstant) narrow_[i] = static_cast<int>(i);
    for (int i : g_.inputs)
      if (half_[i] == Half::Yes) narrow_[i] = i;
    std::vector<Node> old = std::move(g_.nodes);
    g_.nodes.clear();
    for (size_t k = 0; k < old.size(); ++k) emit(std::move(old[k]), modes_[k]);
  }

 private:
  Half inputHalf(const Node& node, size_t i) const {
    return i < node.inputs.size() && node.inputs[i] >= 0 ? half_[node.inputs[i]] : Half::No;
  }

  bool classify(const Node& node, Mode* mode) {
    bool anyHalf = false;
    for (int i : node.inputs) anyHalf |= i >= 0 && half_[i] == Half::Yes;
    uint32_t typed = 0;
    std::vector<Half> outputs(node.outputs.size(), Half::Unknown);
    if (node.type == OpType::Cast && widensCast(node, inputHalf(node, 0))) {
      *mode = Mode::Widened;
      std::fill(outputs.begin(), outputs.end(), Half::No);
    } else if (node.type != OpType::Cast && float16::widenable(node, &typed)) {
      bool typedHalf = false, typedOther = false, typedUnknown = false;
      for (size_t i = 0; i < node.inputs.size() && i < 32; ++i) {
        if (!((typed >> i) & 1u) || node.inputs[i] < 0) continue;
        const Half h = half_[node.inputs[i]];
        typedHalf |= h == Half::Yes;
        typedOther |= h != Half::Yes;
        typedUnknown |= h == Half::Unknown;
      }
      if (typedHalf && typedOther) return false;  // float16 beside another or an unknown type
      const Half source = typedHalf ? Half::Yes : typedUnknown ? Half::Unknown : Half::No;
      for (size_t o = 0; o < outputs.size(); ++o) {
        const DataType fixed = float16::fixedOutputDtype(node, o);
        outputs[o] = fixed == DataType::Undefined ? source : fixed == DataType::Float16 ? Half::Yes : Half::No;
      }
      *mode = anyHalf ? Mode::Widened : Mode::AsWritten;
    } else {
      bool anyUnknown = false;
      for (int i : node.inputs) anyUnknown |= i >= 0 && half_[i] == Half::Unknown;
      auto input = [&](size_t i) { return inputHalf(node, i); };
      for (size_t o = 0; o < outputs.size(); ++o) {
        Half h;
        outputs[o] = float16::halfFromAttributes(node, o, input, &h) ? h
                     : anyHalf || anyUnknown                         ? Half::Unknown
                                                                     : Half::No;
      }
      *mode = anyHalf ? Mode::Narrow : Mode::AsWritten;
    }
    for (size_t o = 0; o < outputs.size(); ++o) {
      const int t = node.outputs[o];
      if (t < 0) continue;
      const Half declared = declaredHalf(g_.tensors[t]);
      // Declared dtypes that contradict the rules: trust neither.
      if (declared != Half::Unknown && outputs[o] != Half::Unknown && declared != outputs[o]) return false;
      half_[t] = outputs[o] != Half::Unknown ? outputs[o] : declared;
    }
    return true;
  }

  int addTensor(int like, DataType dtype, const char* suffix) {
    TensorInfo t = g_.tensors[like];
    t.isConstant = false;
    t.data = ConstantData();
    t.dtype = dtype;
    std::string name = t.name + suffix;
    for (int k = 1; !names_.insert(name).second; ++k) name = t.name + suffix + std::to_string(k);
    t.name = name;
    half_.push_back(dtype == DataType::Float16 ? Half::Yes : Half::No);
    wide_.push_back(-1);
    narrow_.push_back(-1);
    alias_.push_back(-1);
    return g_.addTensor(std::move(t));
  }

  void addCast(int from, int to, DataType dtype) {
    Node cast;
    cast.type = OpType::Cast;
    cast.name = g_.tensors[to].name;
    cast.inputs = {from};
    cast.outputs = {to};
    cast.setInt("to", static_cast<int64_t>(dtype));
    g_.nodes.push_back(std::move(cast));
  }

  int wideOf(int t) {
    if (wide_[t] >= 0) return wide_[t];
    const int w = addTensor(t, DataType::Float32, "_float32");
    if (g_.tensors[t].isConstant) {
      const ConstantData& half = g_.tensors[t].data;
      const size_t n = half.size / 2;
      std::vector<uint8_t> bytes(n * 4);
      const auto* from = reinterpret_cast<const uint16_t*>(half.bytes.get());
      auto* to = reinterpret_cast<float*>(bytes.data());
      for (size_t i = 0; i < n; ++i) to[i] = halfToFloat(from[i]);
      TensorInfo& wide = g_.tensors[w];
      wide.isConstant = true;
      wide.data = ConstantData::adopt(std::move(bytes));
    } else {
      addCast(narrow_[t], w, DataType::Float32);
    }
    return wide_[t] = w;
  }

  int narrowOf(int t) {
    if (narrow_[t] >= 0) return narrow_[t];
    const int n = addTensor(t, DataType::Float16, "_float16");
    addCast(wide_[t], n, DataType::Float16);
    return narrow_[t] = n;
  }

  int resolve(int t) const { return t >= 0 && alias_[t] >= 0 ? alias_[t] : t; }

  // A Cast of a float16 tensor to float32 (its float32 form) or to float16 (itself), whose
  // output the graph does not return: its readers read the input's form instead.
  bool removeCast(const Node& node) {
    if (node.type != OpType::Cast || node.inputs.empty() || node.outputs.empty()) return false;
    const int x = resolve(node.inputs[0]), y = node.outputs[0];
    const auto to = static_cast<DataType>(node.getInt("to", 0));
    if (x < 0 || y < 0 || half_[x] != Half::Yes || isOutput_.count(y)) return false;
    if (to != DataType::Float32 && to != DataType::Float16) return false;
    alias_[y] = to == DataType::Float32 ? wideOf(x) : x;
    return true;
  }

  void emit(Node node, Mode mode) {
    if (removeCast(node)) return;
    const bool widened = mode == Mode::Widened;
    // Shape and Size read no values: either form will do, so neither makes a Cast.
    const bool shapeOnly = node.type == OpType::Shape || node.type == OpType::Size;
    for (int& i : node.inputs) {
      i = resolve(i);
      if (i < 0 || half_[i] != Half::Yes || mode == Mode::AsWritten) continue;
      if (shapeOnly)
        i = wide_[i] >= 0 ? wide_[i] : narrow_[i];
      else
        i = widened ? wideOf(i) : narrowOf(i);
    }
    std::vector<int> outputCasts;
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      const int t = node.outputs[o];
      if (t < 0 || half_[t] != Half::Yes) continue;
      if (!widened || float16::fixedOutputDtype(node, o) == DataType::Float16) {
        narrow_[t] = t;
      } else if (isOutput_.count(t)) {  // the graph's output keeps its name and dtype
        const int w = addTensor(t, DataType::Float32, "_float32");
        node.outputs[o] = wide_[t] = w;
        narrow_[t] = t;
        outputCasts.push_back(t);
      } else {
        g_.tensors[t].dtype = DataType::Float32;
        wide_[t] = t;
      }
    }
    g_.nodes.push_back(std::move(node));
    for (int t : outputCasts) addCast(wide_[t], t, DataType::Float16);
  }

  Graph& g_;
  std::vector<Half> half_;
  std::vector<int> wide_, narrow_;  // the tensor's float32 and float16 forms, where made
  std::vector<int> alias_;          // a removed Cast's output: the tensor its readers read instead
  std::vector<Mode> modes_;
  std::unordered_set<std::string> names_;
  std::unordered_set<int> isOutput_;
};

}  // namespace

int widenFloat16(Graph& g) {
  Widening widening(g);
  if (!widening.classify()) return 0;
  const int widened = widening.widenedOps();
  if (widened > 0) widening.rewrite();
  return widened;
}

}  // namespace osprey::passes
