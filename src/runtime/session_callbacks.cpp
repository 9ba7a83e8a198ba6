// Run callbacks (RunCallbacks): each command of an op, and each op run on the host between
// stages, is shown to the caller's functions before and after it runs.
#include "runtime/session_impl.h"

namespace osprey {

namespace {

class CommandTensors : public OpTensors {
 public:
  CommandTensors(const SessionImpl& session, const std::vector<RuntimeTensor*>& tensors)
      : session_(session), tensors_(tensors) {}
  size_t size() const override { return tensors_.size(); }
  std::string name(size_t i) const override { return tensors_.at(i) ? tensors_[i]->name : std::string(); }
  Shape shape(size_t i) const override { return tensors_.at(i) ? tensors_[i]->shape : Shape(); }
  DataType dtype(size_t i) const override { return tensors_.at(i) ? tensors_[i]->dtype : DataType::Undefined; }
  Status read(size_t i, Tensor* out) const override {
    if (i >= tensors_.size()) return Status::invalidArgument("tensor " + std::to_string(i) + " of " + std::to_string(size()));
    if (!tensors_[i]) return Status::invalidArgument("tensor " + std::to_string(i) + " is an omitted input");
    return session_.readTensor(*tensors_[i], out);
  }

 private:
  const SessionImpl& session_;
  const std::vector<RuntimeTensor*>& tensors_;
};

// A node run on the host: its values by graph index (-1: omitted).
class HostTensors : public OpTensors {
 public:
  HostTensors(const Graph& g, const std::vector<int>& indices, std::vector<const Tensor*> values)
      : graph_(g), indices_(indices), values_(std::move(values)) {}
  size_t size() const override { return indices_.size(); }
  std::string name(size_t i) const override { return indices_.at(i) < 0 ? std::string() : graph_.tensors[indices_[i]].name; }
  Shape shape(size_t i) const override { return values_.at(i) ? values_[i]->shape() : Shape(); }
  DataType dtype(size_t i) const override { return values_.at(i) ? values_[i]->dtype() : DataType::Undefined; }
  Status read(size_t i, Tensor* out) const override {
    if (i >= values_.size() || !values_[i]) return Status::invalidArgument("tensor " + std::to_string(i) + " is not present");
    *out = *values_[i];
    return Status::ok();
  }

 private:
  const Graph& graph_;
  const std::vector<int>& indices_;
  std::vector<const Tensor*> values_;
};

Status callback(const OpCallback& fn, const OpCallbackInfo& info, const OpTensors& tensors, bool after, const Node* node) {
  if (fn(info, tensors)) return Status::ok();
  return Status::cancelled(std::string("the run was stopped by a callback ") + (after ? "after " : "before ") +
                           (node ? node->describe() : "op '" + info.name + "' (" + info.type + ")"));
}

}  // namespace

Status SessionImpl::report(const Command& cmd, bool after) const {
  const OpCallback& fn = after ? callbacks_->after : callbacks_->before;
  if (!fn) return Status::ok();
  OpCallbackInfo info;
  const Node* node = cmd.op.node;
  info.name = node ? node->name : std::string();
  info.type = node ? opTypeName(node->type) : cmd.op.type == OpType::Raster ? "Raster" : opTypeName(cmd.op.type);
  info.backend = forwardTypeName(cmd.backend->type());
  return callback(fn, info, CommandTensors(*this, after ? cmd.outputs : cmd.inputs), after, node);
}

Status SessionImpl::reportHost(const Node& node, const std::map<int, Tensor>& values, bool after) const {
  const OpCallback& fn = after ? callbacks_->after : callbacks_->before;
  if (!fn) return Status::ok();
  OpCallbackInfo info{node.name, opTypeName(node.type), "host"};
  const std::vector<int>& indices = after ? node.outputs : node.inputs;
  std::vector<const Tensor*> held(indices.size(), nullptr);
  std::vector<Tensor> constants(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) {
    const int idx = indices[i];
    if (idx < 0) continue;
    auto it = values.find(idx);
    if (it != values.end()) {
      held[i] = &it->second;
    } else if (known_[idx]) {
      OSPREY_RETURN_IF_ERROR(readTensor(tensors_[idx], &constants[i]));
      held[i] = &constants[i];
    }
  }
  return callback(fn, info, HostTensors(model_->graph, indices, std::move(held)), after, &node);
}

}  // namespace osprey
