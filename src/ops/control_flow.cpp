// If, Loop and Scan run their subgraphs (Graph attributes) in nested sessions: those of the
// running session (SubgraphSessions, on its runtime and settings, planned once), or sessions
// of their own when run outside one (the converter's constant folding). Their output shapes
// depend on data, so they end a planned stage (core/session_stages.cpp) and run between it and
// the next; the shape function runs the subgraph and keeps the result for the kernel that follows.
#include <algorithm>
#include <cstring>
#include <map>

#include "core/graph.h"
#include "core/run_limits.h"
#include "core/subgraph_sessions.h"
#include "ops/op_util.h"
#include "osprey/interpreter.h"

namespace osprey {

namespace {

// Results computed by a shape function, handed to the reference kernel of the same node.
thread_local std::map<const Node*, std::vector<Tensor>> pendingOutputs;

class SubgraphRunner {
 public:
  Status init(const std::shared_ptr<Graph>& graph) {
    graph_ = graph;
    if (SubgraphSessions* shared = SubgraphSessions::current()) return shared->get(graph, &session_);
    auto model = std::make_shared<Model>();
    model->graph = *graph;
    OSPREY_RETURN_IF_ERROR(Interpreter::fromModel(model, &interp_));
    OSPREY_RETURN_IF_ERROR(interp_->createSession(ScheduleConfig(), BackendConfig(), &owned_));
    session_ = owned_.get();
    return Status::ok();
  }
  // Runs with the subgraph's inputs in order.
  Status run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) {
    if (graph_->inputs.size() != inputs.size())
      return Status::invalidModel("subgraph takes " + std::to_string(graph_->inputs.size()) + " inputs, given " +
                                  std::to_string(inputs.size()));
    std::map<std::string, Tensor> feeds;
    for (size_t i = 0; i < inputs.size(); ++i) feeds[graph_->tensors[graph_->inputs[i]].name] = inputs[i];
    return session_->run(feeds, outputs);
  }

 private:
  std::shared_ptr<Graph> graph_;
  std::shared_ptr<Interpreter> interp_;
  std::unique_ptr<Session> owned_;
  Session* session_ = nullptr;
};

// A body's input: a host value (a sequence, an absent optional) as it is, a tensor borrowed.
Tensor wrapView(const TensorView& v) {
  if (!v.present) return Tensor();
  if (v.value && (v.value->isSequence() || v.value->empty())) return *v.value;
  return Tensor::wrap(v.dtype, v.shape, v.data);
}

Status graphAttr(const Node& node, const char* name, std::shared_ptr<Graph>* out) {
  const Attribute* a = node.attr(name);
  if (!a || !a->graph) return Status::invalidModel(std::string("graph attribute '") + name + "' is missing");
  *out = a->graph;
  return Status::ok();
}

int64_t capturedCount(const Node& node, const TensorViews& in) {
  int64_t c = node.getInt("num_captured", 0);
  return std::min<int64_t>(std::max<int64_t>(c, 0), static_cast<int64_t>(in.size()));
}

bool scalarTrue(const TensorView& v) {
  return v.elements() > 0 && loadAsDouble(v.dtype, v.data, 0) != 0.0;
}

Status ifCompute(const Node& node, const TensorViews& in, std::vector<Tensor>* results) {
  if (!in[0].hasValue() || in[0].elements() != 1) return Status::invalidArgument("the condition must be one value");
  std::shared_ptr<Graph> branch;
  OSPREY_RETURN_IF_ERROR(graphAttr(node, scalarTrue(in[0]) ? "then_branch" : "else_branch", &branch));
  std::vector<Tensor> inputs;
  for (size_t i = 1; i < in.size(); ++i) inputs.push_back(wrapView(in[i]));
  SubgraphRunner runner;
  OSPREY_RETURN_IF_ERROR(runner.init(branch));
  return runner.run(inputs, results);
}

// Stacks equally shaped tensors along a new axis. No parts (no iterations): a tensor of 0 along
// the axis with the body output's declared shape where it is fully known, else [0].
Status stack(const std::vector<Tensor>& parts, int64_t axis, bool reverse, Tensor* out, const TensorInfo& declared) {
  if (parts.empty()) {
    Shape shape = {0};
    const bool known = declared.hasShape && std::all_of(declared.shape.begin(), declared.shape.end(),
                                                        [](int64_t d) { return d >= 0; });
    const int64_t rank = static_cast<int64_t>(declared.shape.size());
    const int64_t a = axis < 0 ? axis + rank + 1 : axis;
    if (known && a >= 0 && a <= rank) {
      shape = declared.shape;
      shape.insert(shape.begin() + a, 0);
    }
    *out = Tensor(declared.dtype == DataType::Undefined ? DataType::Float32 : declared.dtype, shape);
    return Status::ok();
  }
  const Shape& s = parts[0].shape();
  int64_t a = axis < 0 ? axis + static_cast<int64_t>(s.size()) + 1 : axis;
  if (a < 0 || a > static_cast<int64_t>(s.size())) return Status::invalidModel("scan output axis out of range");
  Shape outShape = s;
  outShape.insert(outShape.begin() + a, static_cast<int64_t>(parts.size()));
  *out = Tensor(parts[0].dtype(), outShape);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < a; ++i) outer *= s[i];
  for (size_t i = a; i < s.size(); ++i) inner *= s[i];
  const size_t es = dataTypeSize(parts[0].dtype());
  const int64_t n = static_cast<int64_t>(parts.size());
  for (int64_t k = 0; k < n; ++k) {
    const Tensor& p = parts[reverse ? n - 1 - k : k];
    if (p.shape() != s || p.dtype() != parts[0].dtype())
      return Status::invalidModel("scan outputs change shape between iterations");
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<uint8_t*>(out->data()) + ((o * n + k) * inner) * es,
                  static_cast<const uint8_t*>(p.data()) + o * inner * es, inner * es);
  }
  return Status::ok();
}

Status loopCompute(const Node& node, const TensorViews& in, std::vector<Tensor>* results) {
  std::shared_ptr<Graph> body;
  OSPREY_RETURN_IF_ERROR(graphAttr(node, "body", &body));
  const int64_t captured = capturedCount(node, in);
  const int64_t n = static_cast<int64_t>(in.size()) - 2 - captured;
  if (n < 0) return Status::invalidModel("Loop needs M and cond inputs (possibly empty)");
  const int64_t k = static_cast<int64_t>(body->outputs.size()) - 1 - n;
  if (k < 0) return Status::invalidModel("Loop body has fewer outputs than loop-carried values");
  const bool hasMax = in[0].present && in[0].hasValue() && in[0].elements() > 0;
  // Read exactly: exporters write INT64_MAX for "no limit", which a double turns into 2^63
  // and a cast back into INT64_MIN, i.e. no iterations at all.
  int64_t maxTrips = 0;
  if (hasMax && !loadAsInt64(in[0].dtype, in[0].data, 0, &maxTrips))
    return Status::invalidModel(dtypeError(in[0], "M"));
  bool cond = !(in.size() > 1 && in[1].present) || scalarTrue(in[1]);
  std::vector<Tensor> values;
  for (int64_t i = 0; i < n; ++i) values.push_back(hostValueOf(in[2 + i]));
  std::vector<std::vector<Tensor>> scans(k);
  SubgraphRunner runner;
  OSPREY_RETURN_IF_ERROR(runner.init(body));
  const uint64_t memory = physicalMemoryBytes();
  uint64_t scanBytes = 0;
  // The iteration number and the condition are scalars, or of shape [1] where the body declares
  // rank 1 (PyTorch's exporter declares the iteration number so, and ONNX Runtime feeds it so).
  auto counterShape = [&](size_t i) {
    const TensorInfo& t = body->tensors[body->inputs.at(i)];
    return t.hasShape && t.shape.size() == 1 ? Shape{1} : Shape{};
  };
  if (body->inputs.size() < 2) return Status::invalidModel("Loop body needs the iteration number and condition inputs");
  const Shape iterShape = counterShape(0), condShape = counterShape(1);
  for (int64_t iter = 0; (!hasMax || iter < maxTrips) && cond; ++iter) {
    if (RunDeadline::passed()) return RunDeadline::error(node.describe() + ", iteration " + std::to_string(iter));
    Tensor iterNum(DataType::Int64, iterShape);
    iterNum.data<int64_t>()[0] = iter;
    Tensor condIn(DataType::Bool, condShape);
    condIn.data<bool>()[0] = cond;
    std::vector<Tensor> inputs = {iterNum, condIn};
    for (auto& v : values) inputs.push_back(v);
    for (int64_t c = 0; c < captured; ++c) inputs.push_back(wrapView(in[in.size() - captured + c]));
    std::vector<Tensor> outs;
    OSPREY_RETURN_IF_ERROR(runner.run(inputs, &outs).withContext("Loop iteration " + std::to_string(iter)));
    cond = outs[0].elements() > 0 && loadAsDouble(outs[0].dtype(), outs[0].data(), 0) != 0.0;
    for (int64_t i = 0; i < n; ++i) values[i] = outs[1 + i];
    for (int64_t i = 0; i < k; ++i) {
      scanBytes += outs[1 + n + i].bytes();
      scans[i].push_back(outs[1 + n + i]);
    }
    if (scanBytes > memory)
      return Status::outOfMemory(node.describe() + ": its scan outputs pass the machine's " + std::to_string(memory) +
                                 " bytes at iteration " + std::to_string(iter));
    if (!hasMax && !(in.size() > 1 && in[1].present)) return Status::invalidModel("Loop without M or cond never ends");
  }
  *results = values;
  for (int64_t i = 0; i < k; ++i) {
    Tensor stacked;
    OSPREY_RETURN_IF_ERROR(stack(scans[i], 0, false, &stacked, body->tensors[body->outputs[1 + n + i]]));
    results->push_back(stacked);
  }
  return Status::ok();
}

// The t-th slice of `v` along `axis`, without that axis.
Tensor sliceAlong(const TensorView& v, int64_t axis, int64_t t) {
  Shape s = v.shape;
  int64_t len = s[axis];
  s.erase(s.begin() + axis);
  Tensor out(v.dtype, s);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= v.shape[i];
  for (size_t i = axis + 1; i < v.shape.size(); ++i) inner *= v.shape[i];
  const size_t es = dataTypeSize(v.dtype);
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(static_cast<uint8_t*>(out.data()) + o * inner * es,
                static_cast<const uint8_t*>(v.data) + ((o * len + t) * inner) * es, inner * es);
  return out;
}

Status scanCompute(const Node& node, const TensorViews& in, std::vector<Tensor>* results) {
  std::shared_ptr<Graph> body;
  OSPREY_RETURN_IF_ERROR(graphAttr(node, "body", &body));
  const int64_t captured = capturedCount(node, in);
  const int64_t m = node.getInt("num_scan_inputs", -1);
  const int64_t n = static_cast<int64_t>(in.size()) - captured - m;
  if (m < 1 || n < 0) return Status::invalidModel("Scan needs num_scan_inputs between 1 and its input count");
  const int64_t k = static_cast<int64_t>(body->outputs.size()) - n;
  if (k < 0) return Status::invalidModel("Scan body has fewer outputs than state variables");
  auto inAxes = node.getInts("scan_input_axes", std::vector<int64_t>(m, 0));
  auto inDirs = node.getInts("scan_input_directions", std::vector<int64_t>(m, 0));
  auto outAxes = node.getInts("scan_output_axes", std::vector<int64_t>(k, 0));
  auto outDirs = node.getInts("scan_output_directions", std::vector<int64_t>(k, 0));
  if (static_cast<int64_t>(inAxes.size()) != m || static_cast<int64_t>(inDirs.size()) != m ||
      static_cast<int64_t>(outAxes.size()) != k || static_cast<int64_t>(outDirs.size()) != k)
    return Status::invalidModel("Scan axes/directions attributes do not match the scan inputs/outputs");
  int64_t seqLen = -1;
  for (int64_t j = 0; j < m; ++j) {
    const TensorView& v = in[n + j];
    OSPREY_RETURN_IF_ERROR(normalizeAxis(inAxes[j], v.rank(), &inAxes[j]));
    if (seqLen >= 0 && v.shape[inAxes[j]] != seqLen) return Status::invalidArgument("scan inputs differ in sequence length");
    seqLen = v.shape[inAxes[j]];
  }
  std::vector<Tensor> states;
  for (int64_t i = 0; i < n; ++i) states.push_back(hostValueOf(in[i]));
  std::vector<std::vector<Tensor>> scans(k);
  SubgraphRunner runner;
  OSPREY_RETURN_IF_ERROR(runner.init(body));
  for (int64_t t = 0; t < seqLen; ++t) {
    if (RunDeadline::passed()) return RunDeadline::error(node.describe() + ", iteration " + std::to_string(t));
    std::vector<Tensor> inputs = states;
    for (int64_t j = 0; j < m; ++j) inputs.push_back(sliceAlong(in[n + j], inAxes[j], inDirs[j] ? seqLen - 1 - t : t));
    for (int64_t c = 0; c < captured; ++c) inputs.push_back(wrapView(in[in.size() - captured + c]));
    std::vector<Tensor> outs;
    OSPREY_RETURN_IF_ERROR(runner.run(inputs, &outs).withContext("Scan step " + std::to_string(t)));
    for (int64_t i = 0; i < n; ++i) states[i] = outs[i];
    for (int64_t i = 0; i < k; ++i) scans[i].push_back(outs[n + i]);
  }
  *results = states;
  for (int64_t i = 0; i < k; ++i) {
    Tensor stacked;
    OSPREY_RETURN_IF_ERROR(stack(scans[i], outAxes[i], outDirs[i] != 0, &stacked, body->tensors[body->outputs[n + i]]));
    results->push_back(stacked);
  }
  return Status::ok();
}

// Runs the body once per item of the first input (a sequence): each sequence input gives its item,
// each tensor input itself; output j is the sequence of the body's output j.
Status sequenceMapCompute(const Node& node, const TensorViews& in, std::vector<Tensor>* results) {
  std::shared_ptr<Graph> body;
  OSPREY_RETURN_IF_ERROR(graphAttr(node, "body", &body));
  const int64_t captured = capturedCount(node, in);
  const size_t given = in.size() - static_cast<size_t>(captured);
  auto isSequence = [&](size_t i) { return in[i].present && in[i].value && in[i].value->isSequence(); };
  if (given == 0 || !isSequence(0)) return Status::invalidArgument("input 0 must be a sequence");
  const size_t count = in[0].value->items().size();
  for (size_t i = 1; i < given; ++i)
    if (isSequence(i) && in[i].value->items().size() != count)
      return Status::invalidArgument("input " + std::to_string(i) + " has " +
                                     std::to_string(in[i].value->items().size()) + " items; input 0 has " +
                                     std::to_string(count));
  std::vector<std::vector<Tensor>> items(body->outputs.size());
  SubgraphRunner runner;
  OSPREY_RETURN_IF_ERROR(runner.init(body));
  for (size_t k = 0; k < count; ++k) {
    if (RunDeadline::passed()) return RunDeadline::error(node.describe() + ", item " + std::to_string(k));
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < in.size(); ++i) inputs.push_back(i < given && isSequence(i) ? in[i].value->items()[k] : wrapView(in[i]));
    std::vector<Tensor> outs;
    OSPREY_RETURN_IF_ERROR(runner.run(inputs, &outs).withContext("SequenceMap item " + std::to_string(k)));
    for (size_t j = 0; j < items.size() && j < outs.size(); ++j) items[j].push_back(outs[j]);
  }
  results->clear();
  for (size_t j = 0; j < items.size(); ++j) {
    DataType dtype = items[j].empty() ? body->tensors[body->outputs[j]].dtype : items[j][0].dtype();
    results->push_back(Tensor::sequence(dtype, std::move(items[j])));
  }
  return Status::ok();
}

using ComputeFn = Status (*)(const Node&, const TensorViews&, std::vector<Tensor>*);

Status shapeFromRun(const Node& node, const TensorViews& in, TensorViews& out, ComputeFn compute) {
  for (auto& v : in)
    if (v.present && !v.hasValue() && v.elements() != 0) return Status::invalidArgument("control flow inputs must be known");
  std::vector<Tensor> results;
  OSPREY_RETURN_IF_ERROR(compute(node, in, &results));
  for (const Tensor& r : results)
    if (r.isSequence() || r.empty())
      return Status::invalidModel(node.describe() + ": a subgraph output is a sequence or an absent optional, which the "
                                  "model does not declare");
  if (results.size() < out.size())
    return Status::invalidModel("the subgraph gives " + std::to_string(results.size()) + " outputs; the op has " +
                                std::to_string(out.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].dtype = results[i].dtype();
    out[i].shape = results[i].shape();
  }
  pendingOutputs[&node] = std::move(results);
  return Status::ok();
}

Status copyResults(const Node& node, const TensorViews& in, TensorViews& out, ComputeFn compute) {
  std::vector<Tensor> results;
  auto it = pendingOutputs.find(&node);
  if (it != pendingOutputs.end()) {
    results = std::move(it->second);
    pendingOutputs.erase(it);
  } else {
    OSPREY_RETURN_IF_ERROR(compute(node, in, &results));
  }
  for (size_t i = 0; i < out.size() && i < results.size(); ++i) {
    if (!out[i].present) continue;
    if (results[i].shape() != out[i].shape || results[i].dtype() != out[i].dtype)
      return Status::internal("control flow output changed between shape computation and execution");
    if (out[i].bytes()) std::memcpy(out[i].data, results[i].data(), out[i].bytes());
  }
  return Status::ok();
}

Status ifShape(const Node& n, const TensorViews& in, TensorViews& out) { return shapeFromRun(n, in, out, ifCompute); }
Status ifKernel(const Node& n, const TensorViews& in, TensorViews& out, ThreadPool*) { return copyResults(n, in, out, ifCompute); }
Status loopShape(const Node& n, const TensorViews& in, TensorViews& out) { return shapeFromRun(n, in, out, loopCompute); }
Status loopKernel(const Node& n, const TensorViews& in, TensorViews& out, ThreadPool*) { return copyResults(n, in, out, loopCompute); }
Status scanShape(const Node& n, const TensorViews& in, TensorViews& out) { return shapeFromRun(n, in, out, scanCompute); }
Status scanKernel(const Node& n, const TensorViews& in, TensorViews& out, ThreadPool*) { return copyResults(n, in, out, scanCompute); }

}  // namespace

const OpDef kOpDef_If = {OpType::If, "If", 1, -1, 1, -1, ifShape, ifKernel, nullptr, 0, true, false, 0, ifCompute};
const OpDef kOpDef_Loop = {OpType::Loop, "Loop", 2, -1, 1, -1, loopShape, loopKernel, nullptr, 0, true, false, 0b11, loopCompute};
const OpDef kOpDef_Scan = {OpType::Scan, "Scan", 1, -1, 1, -1, scanShape, scanKernel, nullptr, 0, true, false, 0, scanCompute};
const OpDef kOpDef_SequenceMap = {OpType::SequenceMap, "SequenceMap", 1,     -1, 1, -1, nullptr, nullptr, nullptr, 0, true,
                                  false,                0,             sequenceMapCompute, true};

}  // namespace osprey
