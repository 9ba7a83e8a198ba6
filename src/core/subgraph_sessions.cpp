#include "core/subgraph_sessions.h"

namespace osprey {

namespace {
thread_local SubgraphSessions* tCurrent = nullptr;
}  // namespace

SubgraphSessions* SubgraphSessions::current() { return tCurrent; }

SubgraphSessions::Scope::Scope(SubgraphSessions* sessions) : previous_(tCurrent) { tCurrent = sessions; }
SubgraphSessions::Scope::~Scope() { tCurrent = previous_; }

Status SubgraphSessions::get(const std::shared_ptr<Graph>& graph, Session** out) {
  auto it = sessions_.find(graph.get());
  if (it == sessions_.end()) {
    Entry entry;
    entry.graph = graph;
    auto model = std::make_shared<Model>();
    model->graph = *graph;
    OSPREY_RETURN_IF_ERROR(Interpreter::fromModel(model, &entry.interpreter));
    OSPREY_RETURN_IF_ERROR(entry.interpreter->createSession(runtime_, &entry.session));
    it = sessions_.emplace(graph.get(), std::move(entry)).first;
  }
  *out = it->second.session.get();
  return Status::ok();
}

}  // namespace osprey
