// Sessions for the bodies of If / Loop / Scan (Graph attributes), made on the runtime and with
// the settings of the session that runs the op (backend, threads, precision, limits), once, and
// kept for its later runs: a body is planned once, not at every run, and runs with the
// backends' kernels; a Loop body plans again only when its shapes change.
#pragma once
#include <map>
#include <memory>

#include "core/graph.h"
#include "osprey/interpreter.h"

namespace osprey {

class SubgraphSessions {
 public:
  explicit SubgraphSessions(std::shared_ptr<SharedRuntime> runtime) : runtime_(std::move(runtime)) {}
  // The sessions of the session resizing or running on this thread; null outside one.
  static SubgraphSessions* current();
  // The session of `graph`, made at the first call.
  Status get(const std::shared_ptr<Graph>& graph, Session** out);
  size_t size() const { return sessions_.size(); }

  // Makes `sessions` current on this thread while it lives.
  class Scope {
   public:
    explicit Scope(SubgraphSessions* sessions);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    SubgraphSessions* previous_;
  };

 private:
  struct Entry {
    std::shared_ptr<Graph> graph;  // keeps the key alive
    std::shared_ptr<Interpreter> interpreter;
    std::unique_ptr<Session> session;
  };
  std::shared_ptr<SharedRuntime> runtime_;
  std::map<const Graph*, Entry> sessions_;
};

}  // namespace osprey
