// Errors are values: every boundary that sees user data returns a Status.
#pragma once
#include <string>
#include <utility>

namespace osprey {

enum class StatusCode { Ok = 0, InvalidArgument, InvalidModel, Unsupported, OutOfMemory, Internal, NotFound, Cancelled };

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status invalidArgument(std::string m) { return Status(StatusCode::InvalidArgument, std::move(m)); }
  static Status invalidModel(std::string m) { return Status(StatusCode::InvalidModel, std::move(m)); }
  static Status unsupported(std::string m) { return Status(StatusCode::Unsupported, std::move(m)); }
  static Status outOfMemory(std::string m) { return Status(StatusCode::OutOfMemory, std::move(m)); }
  static Status internal(std::string m) { return Status(StatusCode::Internal, std::move(m)); }
  static Status notFound(std::string m) { return Status(StatusCode::NotFound, std::move(m)); }
  static Status cancelled(std::string m) { return Status(StatusCode::Cancelled, std::move(m)); }

  bool isOk() const { return code_ == StatusCode::Ok; }
  explicit operator bool() const { return isOk(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Prefixes context ("op 'conv1' (Conv): ") so the message names where it happened.
  Status withContext(const std::string& context) const {
    if (isOk()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  Status(StatusCode c, std::string m) : code_(c), message_(std::move(m)) {}
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

#define OSPREY_RETURN_IF_ERROR(expr)          \
  do {                                        \
    ::osprey::Status _st = (expr);            \
    if (!_st.isOk()) return _st;              \
  } while (0)

// As OSPREY_RETURN_IF_ERROR, with `context` prefixed to an error; the context expression is
// evaluated only on error, so a run's per-op checks build no strings.
#define OSPREY_RETURN_IF_ERROR_IN(expr, context)        \
  do {                                                  \
    ::osprey::Status _st = (expr);                      \
    if (!_st.isOk()) return _st.withContext(context);   \
  } while (0)

}  // namespace osprey
