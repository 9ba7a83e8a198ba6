// What a SharedRuntime holds: the Runtimes of a schedule's main and backup backends, made once
// and used by every Session created on it, and the lock that keeps those sessions' runs apart.
#pragma once
#include <memory>
#include <mutex>

#include "core/backend.h"
#include "osprey/interpreter.h"

namespace osprey {

struct SharedRuntimeState {
  ScheduleConfig schedule;
  BackendConfig config;
  std::shared_ptr<Runtime> main, backup;
  // Held by a session's resize and run. Recursive: the sessions of If / Loop / Scan bodies and
  // later stages run on their parent's runtime, on its thread, inside its run.
  std::recursive_mutex runMutex;
};

// Creates the runtimes of `schedule` (an error names a backend not compiled in or without a device).
Status makeSharedRuntime(const ScheduleConfig& schedule, const BackendConfig& config, std::shared_ptr<SharedRuntime>* out);
SharedRuntimeState& runtimeState(const SharedRuntime& runtime);

}  // namespace osprey
