// Builds small graphs for tests: inputs, constants (float, int64, other integer types), nodes
// whose output shapes are left for the pipeline to compute, graph outputs.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "core/graph.h"
#include "osprey/interpreter.h"
#include "osprey/tensor.h"

namespace osprey::test {

class GraphBuilder {
 public:
  int input(const std::string& name, const Shape& shape, DataType dtype = DataType::Float32) {
    TensorInfo t;
    t.name = name;
    t.dtype = dtype;
    t.shape = shape;
    const int idx = g.addTensor(t);
    g.inputs.push_back(idx);
    return idx;
  }
  int floats(const std::vector<float>& v, const Shape& shape) {
    TensorInfo t;
    t.name = "c";
    t.name += std::to_string(g.tensors.size());
    t.dtype = DataType::Float32;
    t.shape = shape;
    t.isConstant = true;
    t.data = ConstantData::copyOf(v.data(), v.size() * 4);
    return g.addTensor(t);
  }
  int scalar(float v) { return floats({v}, {}); }
  // A constant of an integer dtype (uint8, int8, int32 ...) holding `v`.
  int integers(DataType dtype, const std::vector<int64_t>& v, const Shape& shape) {
    TensorInfo t;
    t.name = "q";
    t.name += std::to_string(g.tensors.size());
    t.dtype = dtype;
    t.shape = shape;
    t.isConstant = true;
    std::vector<uint8_t> bytes(v.size() * dataTypeSize(dtype));
    for (size_t i = 0; i < v.size(); ++i)
      storeFromDouble(dtype, bytes.data(), static_cast<int64_t>(i), static_cast<double>(v[i]));
    t.data = ConstantData::copyOf(bytes.data(), bytes.size());
    return g.addTensor(t);
  }
  int axes(int64_t a) {
    TensorInfo t;
    t.name = "axes";
    t.name += std::to_string(g.tensors.size());
    t.dtype = DataType::Int64;
    t.shape = {1};
    t.isConstant = true;
    t.data = ConstantData::copyOf(&a, 8);
    return g.addTensor(t);
  }
  int ints(const std::vector<int64_t>& v) {
    TensorInfo t;
    t.name = "i";
    t.name += std::to_string(g.tensors.size());
    t.dtype = DataType::Int64;
    t.shape = {static_cast<int64_t>(v.size())};
    t.isConstant = true;
    t.data = ConstantData::copyOf(v.data(), v.size() * 8);
    return g.addTensor(t);
  }
  int transpose(int x, std::vector<int64_t> perm) {
    const int y = op(OpType::Transpose, {x});
    g.nodes.back().setInts("perm", std::move(perm));
    return y;
  }
  int op(OpType type, std::vector<int> inputs) {
    Node n;
    n.type = type;
    n.name = "n";
    n.name += std::to_string(g.nodes.size());
    n.inputs = std::move(inputs);
    TensorInfo t;
    t.name = n.name;
    t.name += "_out";
    t.hasShape = false;
    n.outputs = {g.addTensor(t)};
    g.nodes.push_back(n);
    return n.outputs[0];
  }
  // A constant float tensor with w's shape and values.
  int weights(const Tensor& w) {
    TensorInfo t;
    t.name = "w";
    t.name += std::to_string(g.tensors.size());
    t.dtype = w.dtype();
    t.shape = w.shape();
    t.isConstant = true;
    t.data = ConstantData::copyOf(w.data(), w.bytes());
    return g.addTensor(t);
  }
  void output(int t) { g.outputs.push_back(t); }
  Graph g;
};

// How many of g's nodes have `type`.
inline int countOps(const Graph& g, OpType type) {
  int n = 0;
  for (auto& node : g.nodes) n += node.type == type;
  return n;
}

// A CPU session of g with `threads` threads (failures are test failures).
inline std::unique_ptr<Session> cpuSessionOf(const Graph& g, int threads = 1) {
  auto model = std::make_shared<Model>();
  model->graph = g;
  std::shared_ptr<Interpreter> interp;
  EXPECT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  ScheduleConfig schedule;
  schedule.threads = threads;
  std::unique_ptr<Session> session;
  EXPECT_TRUE(interp->createSession(schedule, BackendConfig(), &session).isOk());
  return session;
}

// All outputs of g run on the CPU with `feeds` (failures are test failures).
inline std::vector<Tensor> runGraphOutputs(const Graph& g, const std::map<std::string, Tensor>& feeds) {
  std::unique_ptr<Session> session = cpuSessionOf(g);
  std::vector<Tensor> out;
  Status st = session->run(feeds, &out);
  EXPECT_TRUE(st.isOk()) << st.message();
  return out;
}

// g's first output.
inline Tensor runGraph(const Graph& g, const std::map<std::string, Tensor>& feeds) {
  std::vector<Tensor> out = runGraphOutputs(g, feeds);
  return out.empty() ? Tensor() : out[0];
}

}  // namespace osprey::test
