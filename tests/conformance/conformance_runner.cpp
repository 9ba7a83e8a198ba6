// osprey_conformance: runs ONNX backend test cases (model.onnx + test_data_set_N/) through
// Osprey, each in its own process, and compares the outcomes with expected_failures.txt.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "conformance.h"

namespace fs = std::filesystem;
using namespace osprey::conformance;

namespace {

const char* kUsage =
    "usage: osprey_conformance [options] DIR...\n"
    "  DIR holds ONNX backend test cases (CASE/model.onnx + CASE/test_data_set_N/{input,output}_K.pb),\n"
    "      or is one such case.\n"
    "  --expected FILE        cases expected not to pass; exit 1 on any other failure (a regression)\n"
    "  --write-expected FILE  write the cases that do not pass now, in --expected format\n"
    "  --markdown FILE        write the report (docs/conformance.md)\n"
    "  --json FILE            write every case's outcome as JSON\n"
    "  --timeout SECONDS      per case, default 20\n"
    "  --jobs N               cases run concurrently, default 2\n"
    "  --filter SUBSTRING     only cases whose <dir>/<case> id contains it (repeatable: any)\n"
    "  --memory-mb N          address-space limit per case, default 4096 (0: none)\n"
    "  --fail-on all|crashes  with --expected, what an unlisted failure fails on (default all)\n"
    "  --verbose              print every case as it finishes\n";

struct Options {
  std::string expected, writeExpected, markdown, json, failOn = "all";
  std::vector<std::string> filters, dirs;
  PoolOptions pool;
};

int usageError(const std::string& message) {
  std::fprintf(stderr, "osprey_conformance: %s\n%s", message.c_str(), kUsage);
  return 2;
}

bool parseNumber(const std::string& text, double lo, double hi, double* out) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v >= lo && v <= hi)) return false;
  *out = v;
  return true;
}

// Returns -1 to go on, otherwise the exit code.
int parseArgs(int argc, char** argv, Options* opt) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s", kUsage);
      return 0;
    }
    if (a.rfind("--", 0) != 0) {
      opt->dirs.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    bool hasValue = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      hasValue = true;
    }
    if (name == "verbose") {
      opt->pool.verbose = true;
      continue;
    }
    static const std::set<std::string> valued = {"expected", "write-expected", "markdown", "json", "timeout",
                                                 "jobs",     "filter",         "memory-mb", "fail-on"};
    if (!valued.count(name)) return usageError("unknown option --" + name);
    if (!hasValue) {
      if (i + 1 >= argc) return usageError("option --" + name + " needs a value");
      value = argv[++i];
    }
    double v = 0;
    if (name == "expected") opt->expected = value;
    else if (name == "write-expected") opt->writeExpected = value;
    else if (name == "markdown") opt->markdown = value;
    else if (name == "json") opt->json = value;
    else if (name == "filter") opt->filters.push_back(value);
    else if (name == "timeout") {
      if (!parseNumber(value, 1e-3, 86400, &v)) return usageError("--timeout needs seconds > 0, got '" + value + "'");
      opt->pool.timeoutSeconds = v;
    } else if (name == "jobs") {
      if (!parseNumber(value, 1, 256, &v) || v != static_cast<int>(v)) return usageError("--jobs needs 1..256, got '" + value + "'");
      opt->pool.jobs = static_cast<int>(v);
    } else if (name == "memory-mb") {
      if (!parseNumber(value, 0, 1 << 30, &v)) return usageError("--memory-mb needs a number, got '" + value + "'");
      opt->pool.memoryLimitMb = static_cast<long>(v);
    } else if (name == "fail-on") {
      if (value != "all" && value != "crashes") return usageError("--fail-on is 'all' or 'crashes', got '" + value + "'");
      opt->failOn = value;
    }
  }
  if (opt->dirs.empty()) return usageError("no test directory given");
  return -1;
}

std::string baseName(const std::string& dir) {
  fs::path p = fs::path(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "dir/" -> "dir"
  std::string name = p.filename().string();
  if (name.empty() || name == "." || name == "..") name = fs::absolute(p).lexically_normal().filename().string();
  return name;
}

bool discover(const Options& opt, std::vector<CaseInfo>* cases) {
  for (const std::string& dir : opt.dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      std::fprintf(stderr, "osprey_conformance: '%s' is not a directory\n", dir.c_str());
      return false;
    }
    std::vector<CaseInfo> found;
    if (fs::exists(fs::path(dir) / "model.onnx", ec)) {
      // One case given directly: its id uses the folder above it.
      fs::path p = fs::path(dir).lexically_normal();
      if (p.filename().empty()) p = p.parent_path();
      found.push_back({p.parent_path().string(), baseName(fs::absolute(p).parent_path().string()), p.filename().string(),
                       p.string()});
    } else {
      for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (!entry.is_directory() || !fs::exists(entry.path() / "model.onnx")) continue;
        std::string name = entry.path().filename().string();
        found.push_back({dir, baseName(dir), name, (fs::path(dir) / name).string()});
      }
      if (ec) {
        std::fprintf(stderr, "osprey_conformance: cannot list '%s': %s\n", dir.c_str(), ec.message().c_str());
        return false;
      }
    }
    std::sort(found.begin(), found.end(), [](const CaseInfo& a, const CaseInfo& b) { return a.name < b.name; });
    if (found.empty()) std::fprintf(stderr, "osprey_conformance: warning: no cases under '%s'\n", dir.c_str());
    for (auto& c : found) {
      bool keep = opt.filters.empty();
      for (const auto& f : opt.filters) keep = keep || c.id().find(f) != std::string::npos;
      if (keep) cases->push_back(std::move(c));
    }
  }
  return true;
}

std::string commandLine(int argc, char** argv) {
  std::string s = "osprey_conformance";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool quote = a.empty() || a.find_first_of(" \t'\"$*?") != std::string::npos;
    s += ' ';
    if (quote) s += '\'';
    s += a;
    if (quote) s += '\'';
  }
  return s;
}

bool isCrashLike(Outcome o) { return o == Outcome::Crash || o == Outcome::Timeout; }

// Compares the run with the expected list; prints the findings and returns the regressions.
int checkExpected(const Options& opt, const std::vector<CaseResult>& results,
                  const std::map<std::string, ExpectedEntry>& expected) {
  std::vector<std::string> regressions, unexpectedPasses, changed;
  std::set<std::string> seen;
  for (const auto& r : results) {
    std::string id = r.info.id();
    seen.insert(id);
    auto it = expected.find(id);
    std::string what = std::string(outcomeName(r.outcome)) + ": " + r.message;
    if (r.outcome == Outcome::Pass) {
      if (it != expected.end()) unexpectedPasses.push_back(id);
    } else if (it == expected.end()) {
      if (opt.failOn == "all" || isCrashLike(r.outcome)) regressions.push_back(id + " (not listed) " + what);
      else changed.push_back(id + " (not listed) " + what);
    } else if (it->second.outcome != r.outcome) {
      std::string line = id + " (listed as " + outcomeName(it->second.outcome) + ") " + what;
      if (isCrashLike(r.outcome)) regressions.push_back(line);
      else changed.push_back(line);
    }
  }
  std::vector<std::string> missing;
  if (opt.filters.empty())
    for (const auto& [id, e] : expected)
      if (!seen.count(id)) missing.push_back(id);

  for (const auto& id : unexpectedPasses) std::printf("unexpected pass: remove from expected_failures.txt: %s\n", id.c_str());
  for (const auto& line : changed) std::printf("outcome changed (update expected_failures.txt): %s\n", line.c_str());
  if (!missing.empty())
    std::printf("note: %zu listed case(s) were not found in the given directories (first: %s)\n", missing.size(),
                missing.front().c_str());
  for (const auto& line : regressions) std::printf("REGRESSION: %s\n", line.c_str());
  std::printf("expected-failures check: %zu regression(s), %zu unexpected pass(es), %zu changed outcome(s)\n",
              regressions.size(), unexpectedPasses.size(), changed.size());
  return static_cast<int>(regressions.size());
}

void printTotals(const std::vector<CaseResult>& results, double seconds) {
  std::map<std::string, std::array<int, kOutcomeCount>> byDir;
  std::array<int, kOutcomeCount> total{};
  for (const auto& r : results) {
    byDir[r.info.dirName][static_cast<int>(r.outcome)]++;
    total[static_cast<int>(r.outcome)]++;
  }
  auto line = [](const std::string& label, const std::array<int, kOutcomeCount>& c) {
    int n = 0;
    for (int x : c) n += x;
    std::printf("%-22s %5d cases:", label.c_str(), n);
    for (int o = 0; o < kOutcomeCount; ++o) std::printf(" %s %d", outcomeName(static_cast<Outcome>(o)), c[o]);
    std::printf("\n");
  };
  for (const auto& [dir, c] : byDir) line(dir, c);
  line("all", total);
  std::map<std::string, int> bodies;
  for (const auto& r : results)
    if (!r.bodies.empty()) bodies[r.bodies]++;
  std::printf("If / Loop / Scan cases passed: %d with compiled bodies, %d eager\n", bodies["compiled"], bodies["eager"]);
  std::map<std::string, int> kernels;
  for (const auto& r : results)
    if (!r.quantizedKernel.empty()) kernels[r.quantizedKernel]++;
  std::printf("Quantized-op cases passed: %d on integer kernels, %d on reference kernels\n", kernels["integer"],
              kernels["reference"]);
  std::printf("%.1f s\n", seconds);
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (int rc = parseArgs(argc, argv, &opt); rc >= 0) return rc;

  std::map<std::string, ExpectedEntry> expected;
  std::string error;
  if (!opt.expected.empty() && !readExpected(opt.expected, &expected, &error)) {
    std::fprintf(stderr, "osprey_conformance: %s\n", error.c_str());
    return 2;
  }
  std::vector<CaseInfo> cases;
  if (!discover(opt, &cases)) return 2;
  std::set<std::string> ids;
  for (const auto& c : cases)
    if (!ids.insert(c.id()).second) std::fprintf(stderr, "osprey_conformance: warning: case id '%s' appears twice\n", c.id().c_str());

  auto t0 = std::chrono::steady_clock::now();
  std::vector<CaseResult> results = runCases(cases, opt.pool);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  printTotals(results, seconds);

  std::string cmd = commandLine(argc, argv);
  bool ok = true;
  if (!opt.markdown.empty()) ok = writeMarkdown(opt.markdown, results, cmd, &error) && ok;
  if (!opt.json.empty()) ok = writeJson(opt.json, results, cmd, &error) && ok;
  if (!opt.writeExpected.empty()) ok = writeExpected(opt.writeExpected, results, cmd, &error) && ok;
  if (!ok) {
    std::fprintf(stderr, "osprey_conformance: %s\n", error.c_str());
    return 2;
  }
  if (!opt.expected.empty() && checkExpected(opt, results, expected) > 0) return 1;
  return 0;
}
