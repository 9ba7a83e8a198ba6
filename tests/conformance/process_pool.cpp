// Runs cases in forked children, a few at a time, each with a deadline. A child reports
// through a pipe; its stdout/stderr go to a second pipe whose tail explains a crash.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "conformance.h"

namespace osprey::conformance {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kLogTailBytes = 4096;

struct Child {
  size_t index = 0;
  pid_t pid = -1;
  int resultFd = -1, logFd = -1;  // read ends; -1 once at EOF
  std::string resultText, logTail;
  Clock::time_point start, deadline;
};

const char* signalAbbrev(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGFPE: return "SIGFPE";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGTRAP: return "SIGTRAP";
    case SIGPIPE: return "SIGPIPE";
    default: return "signal";
  }
}

// The last non-empty line the child printed, e.g. an assertion message before SIGABRT.
std::string lastLine(const std::string& log) {
  size_t end = log.find_last_not_of("\r\n \t");
  if (end == std::string::npos) return "";
  size_t begin = log.rfind('\n', end);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return oneLine(log.substr(begin, end + 1 - begin), 200);
}

// Reads what is available; closes and marks the fd at EOF. `tail` keeps only the last bytes.
void drain(int& fd, std::string& into, bool tail) {
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      into.append(buf, static_cast<size_t>(n));
      if (tail && into.size() > 2 * kLogTailBytes) into.erase(0, into.size() - kLogTailBytes);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    ::close(fd);
    fd = -1;
    return;
  }
}

void parseReport(const std::string& text, CaseResult* r, bool* gotResult) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // a partial line: the child died while writing
    auto fields = splitFields(text.substr(pos, nl - pos));
    pos = nl + 1;
    if (fields.size() == 3 && fields[0] == "META") {
      auto splitList = [](const std::string& s) {
        std::vector<std::string> v;
        size_t p = 0;
        while (p < s.size()) {
          size_t c = s.find(',', p);
          if (c == std::string::npos) c = s.size();
          if (c > p) v.push_back(s.substr(p, c - p));
          p = c + 1;
        }
        return v;
      };
      r->ops = splitList(fields[1]);
      r->dtypes = splitList(fields[2]);
    } else if (fields.size() == 2 && fields[0] == "BODIES") {
      r->bodies = fields[1];
    } else if (fields.size() == 2 && fields[0] == "KERNEL") {
      r->quantizedKernel = fields[1];
    } else if (fields.size() == 3 && fields[0] == "RESULT" && outcomeFromName(fields[1], &r->outcome)) {
      r->message = fields[2];
      *gotResult = true;
    }
  }
}

[[noreturn]] void childMain(const CaseInfo& info, int resultFd, int logFd, long memoryLimitMb) {
  setpgid(0, 0);
  signal(SIGPIPE, SIG_DFL);
  dup2(logFd, STDOUT_FILENO);
  dup2(logFd, STDERR_FILENO);
  if (logFd > STDERR_FILENO) ::close(logFd);
  if (memoryLimitMb > 0) {
    rlimit lim{};
    lim.rlim_cur = lim.rlim_max = static_cast<rlim_t>(memoryLimitMb) << 20;
    setrlimit(RLIMIT_AS, &lim);
  }
  runCaseInChild(info, resultFd);
  ::close(resultFd);
  _exit(0);  // no static destructors, no flushing of buffers inherited from the parent
}

bool startChild(const CaseInfo& info, size_t index, const PoolOptions& options, const std::vector<Child>& running,
                Child* out, std::string* error) {
  int resultPipe[2], logPipe[2];
  if (pipe(resultPipe) != 0) return *error = std::string("pipe: ") + std::strerror(errno), false;
  if (pipe(logPipe) != 0) {
    ::close(resultPipe[0]);
    ::close(resultPipe[1]);
    return *error = std::string("pipe: ") + std::strerror(errno), false;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {resultPipe[0], resultPipe[1], logPipe[0], logPipe[1]}) ::close(fd);
    return *error = std::string("fork: ") + std::strerror(errno), false;
  }
  if (pid == 0) {
    ::close(resultPipe[0]);
    ::close(logPipe[0]);
    for (const Child& c : running) {
      if (c.resultFd >= 0) ::close(c.resultFd);
      if (c.logFd >= 0) ::close(c.logFd);
    }
    childMain(info, resultPipe[1], logPipe[1], options.memoryLimitMb);
  }
  setpgid(pid, pid);  // also done by the child; whichever runs first wins the race
  ::close(resultPipe[1]);
  ::close(logPipe[1]);
  fcntl(resultPipe[0], F_SETFL, O_NONBLOCK);
  fcntl(logPipe[0], F_SETFL, O_NONBLOCK);
  out->index = index;
  out->pid = pid;
  out->resultFd = resultPipe[0];
  out->logFd = logPipe[0];
  out->start = Clock::now();
  out->deadline = out->start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.timeoutSeconds));
  return true;
}

CaseResult finish(Child& c, const CaseInfo& info, int waitStatus, bool timedOut, double timeoutSeconds) {
  CaseResult r;
  r.info = info;
  r.seconds = std::chrono::duration<double>(Clock::now() - c.start).count();
  bool gotResult = false;
  parseReport(c.resultText, &r, &gotResult);
  std::string tail = lastLine(c.logTail);
  std::string output = tail.empty() ? "" : "; last output: " + tail;
  if (timedOut) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "no result after %gs, killed", timeoutSeconds);
    r.outcome = Outcome::Timeout;
    r.message = buf;
  } else if (WIFSIGNALED(waitStatus)) {
    int sig = WTERMSIG(waitStatus);
    r.outcome = Outcome::Crash;
    r.message = std::string(signalAbbrev(sig)) + " (" + std::to_string(sig) + ", " + strsignal(sig) + ")" + output;
  } else if (!gotResult) {
    r.outcome = Outcome::Crash;
    r.message = "exited with status " + std::to_string(WIFEXITED(waitStatus) ? WEXITSTATUS(waitStatus) : -1) +
                " without a result" + output;
  } else if (r.outcome == Outcome::Pass) {
    r.message.clear();
  }
  r.message = oneLine(r.message, 600);
  return r;
}

}  // namespace

std::string oneLine(const std::string& text, size_t maxChars) {
  std::string s;
  s.reserve(std::min(text.size(), maxChars + 3));
  for (char c : text) {
    if (s.size() >= maxChars) {
      // Do not cut a UTF-8 sequence in half.
      while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80) s.pop_back();
      if (!s.empty() && (static_cast<unsigned char>(s.back()) & 0x80)) s.pop_back();
      return s + "...";
    }
    s += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  }
  return s;
}

std::string encodeLine(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) line += '\t';
    for (char c : fields[i]) line += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  }
  return line + '\n';
}

std::vector<std::string> splitFields(const std::string& line) {
  std::vector<std::string> fields(1);
  for (char c : line) {
    if (c == '\t') fields.emplace_back();
    else fields.back() += c;
  }
  return fields;
}

std::vector<CaseResult> runCases(const std::vector<CaseInfo>& cases, const PoolOptions& options) {
  std::vector<CaseResult> results(cases.size());
  std::vector<Child> running;
  size_t next = 0, done = 0;
  int jobs = std::max(1, options.jobs);
  auto report = [&](const CaseResult& r) {
    ++done;
    bool loud = r.outcome == Outcome::Crash || r.outcome == Outcome::Timeout;
    if (options.verbose || loud)
      std::printf("[%zu/%zu] %s: %s%s%s\n", done, cases.size(), r.info.id().c_str(), outcomeName(r.outcome),
                  r.message.empty() ? "" : ": ", r.message.c_str());
    else if (done % 250 == 0)
      std::printf("[%zu/%zu] ...\n", done, cases.size());
    std::fflush(stdout);
  };

  while (next < cases.size() || !running.empty()) {
    while (static_cast<int>(running.size()) < jobs && next < cases.size()) {
      Child c;
      std::string error;
      if (!startChild(cases[next], next, options, running, &c, &error)) {
        // The runner itself is short of resources: record it and keep going.
        CaseResult& r = results[next];
        r.info = cases[next];
        r.outcome = Outcome::Error;
        r.message = "runner could not start the case: " + error;
        report(r);
        ++next;
        if (running.empty()) continue;
        break;
      }
      running.push_back(std::move(c));
      ++next;
    }
    if (running.empty()) continue;

    std::vector<pollfd> fds;
    auto now = Clock::now();
    auto wait = std::chrono::milliseconds(1000);
    for (const Child& c : running) {
      if (c.resultFd >= 0) fds.push_back({c.resultFd, POLLIN, 0});
      if (c.logFd >= 0) fds.push_back({c.logFd, POLLIN, 0});
      // Both pipes closed but not yet reaped: look again soon.
      auto left = c.resultFd < 0 && c.logFd < 0 ? std::chrono::milliseconds(5)
                                                 : std::chrono::duration_cast<std::chrono::milliseconds>(c.deadline - now);
      wait = std::max(std::chrono::milliseconds(0), std::min(wait, left + std::chrono::milliseconds(1)));
    }
    int rc = poll(fds.data(), fds.size(), static_cast<int>(wait.count()));
    if (rc < 0 && errno != EINTR) std::perror("poll");

    for (size_t i = 0; i < running.size();) {
      Child& c = running[i];
      if (c.resultFd >= 0) drain(c.resultFd, c.resultText, false);
      if (c.logFd >= 0) drain(c.logFd, c.logTail, true);
      int status = 0;
      bool timedOut = false;
      pid_t w = waitpid(c.pid, &status, WNOHANG);
      if (w == 0 && Clock::now() >= c.deadline) {
        kill(-c.pid, SIGKILL);
        kill(c.pid, SIGKILL);
        while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
        }
        timedOut = true;
      } else if (w == 0) {
        ++i;
        continue;
      }
      // The child is gone: collect whatever it wrote last, then close.
      if (c.resultFd >= 0) drain(c.resultFd, c.resultText, false);
      if (c.logFd >= 0) drain(c.logFd, c.logTail, true);
      for (int* fd : {&c.resultFd, &c.logFd})
        if (*fd >= 0) ::close(*fd), *fd = -1;
      results[c.index] = finish(c, cases[c.index], status, timedOut, options.timeoutSeconds);
      report(results[c.index]);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  return results;
}

}  // namespace osprey::conformance
