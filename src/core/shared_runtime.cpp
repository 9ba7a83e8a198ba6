#include "core/shared_runtime.h"

#include "core/thread_pool.h"

namespace osprey {

SharedRuntime::SharedRuntime() : state_(std::make_unique<SharedRuntimeState>()) {}
SharedRuntime::~SharedRuntime() = default;
const ScheduleConfig& SharedRuntime::schedule() const { return state_->schedule; }
const BackendConfig& SharedRuntime::backendConfig() const { return state_->config; }

int SharedRuntime::threadCount() const {
  ThreadPool* pool = state_->main->threadPool();
  if (!pool && state_->backup) pool = state_->backup->threadPool();
  return pool ? pool->threads() : 1;
}

void SharedRuntime::garbageCollect(int level) {
  std::lock_guard<std::recursive_mutex> lock(state_->runMutex);
  state_->main->onGarbageCollect(level);
  if (state_->backup) state_->backup->onGarbageCollect(level);
}

SharedRuntimeState& runtimeState(const SharedRuntime& runtime) { return *runtime.state_; }

Status makeSharedRuntime(const ScheduleConfig& schedule, const BackendConfig& config, std::shared_ptr<SharedRuntime>* out) {
  if (schedule.threads < 1) return Status::invalidArgument("threads must be at least 1, got " + std::to_string(schedule.threads));
  std::shared_ptr<SharedRuntime> runtime(new SharedRuntime());
  SharedRuntimeState& s = *runtime->state_;
  s.schedule = schedule;
  s.config = config;
  const RuntimeCreator* mainCreator = getRuntimeCreator(schedule.backend);
  if (!mainCreator)
    return Status::unsupported(std::string("backend '") + forwardTypeName(schedule.backend) + "' is not compiled into this build");
  std::unique_ptr<Runtime> main;
  if (Status made = mainCreator->create(schedule, config, &main); !made)
    return made.withContext(std::string("backend '") + forwardTypeName(schedule.backend) + "'");
  s.main = std::move(main);
  if (schedule.backupBackend != schedule.backend) {
    const RuntimeCreator* backupCreator = getRuntimeCreator(schedule.backupBackend);
    if (!backupCreator)
      return Status::unsupported(std::string("backup backend '") + forwardTypeName(schedule.backupBackend) +
                                 "' is not compiled into this build");
    s.backup = backupCreator->onCreate(schedule, config);
    if (!s.backup) return Status::unsupported(std::string("backup backend '") + forwardTypeName(schedule.backupBackend) + "' found no device");
  }
  *out = std::move(runtime);
  return Status::ok();
}

}  // namespace osprey
