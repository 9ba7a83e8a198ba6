// ONNX backend-test conformance runner: shared types. Each case (a directory with model.onnx
// and test_data_set_N/) runs in its own forked child, so a crash or a hang in the engine is a
// recorded outcome, never the end of the run.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace osprey::conformance {

// Ordered from best to worst; the order is also the column order of every report table.
enum class Outcome { Pass, Unsupported, Wrong, Error, Crash, Timeout };
constexpr int kOutcomeCount = 6;
const char* outcomeName(Outcome o);                    // "pass", "unsupported", ...
bool outcomeFromName(const std::string& name, Outcome* out);

struct CaseInfo {
  std::string dir;      // the DIR argument it was found under
  std::string dirName;  // basename of dir: "onnx-node-tests", "pytorch-converted", ...
  std::string name;     // case directory name: "test_abs"
  std::string path;     // dir/name
  std::string id() const { return dirName + "/" + name; }
};

struct CaseResult {
  CaseInfo info;
  Outcome outcome = Outcome::Error;
  std::string message;              // one line; empty for a pass
  std::vector<std::string> ops;     // distinct ONNX op types of the top-level graph, sorted
  std::vector<std::string> dtypes;  // distinct element types of the graph inputs, sorted
  // For a passing case with If, Loop or Scan: "compiled" when the bodies ran as sessions planned on
  // the case's runtime and settings (SessionStats::bodySessions), "eager" otherwise.
  std::string bodies;
  // For a passing case with one of the quantized ops (kQuantizedOps): "integer" when every such op
  // ran on a backend's own kernel, "reference" when one ran the reference kernel.
  std::string quantizedKernel;
  double seconds = 0;
};

// The quantized ops whose passing cases the report splits by the kernel that ran them.
inline const std::vector<std::string>& quantizedOps() {
  static const std::vector<std::string> ops = {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul",
                                               "ConvInteger", "MatMulInteger", "DynamicQuantizeLinear"};
  return ops;
}

// Runs inside the child: converts and runs one case and writes "META" and "RESULT" lines
// (see encodeLine) to fd. Never returns an error itself; every failure is a RESULT.
void runCaseInChild(const CaseInfo& info, int fd);

struct PoolOptions {
  double timeoutSeconds = 20;
  int jobs = 2;
  long memoryLimitMb = 4096;  // RLIMIT_AS per child, so a runaway allocation fails alone
  bool verbose = false;
};
// Runs every case in forked children, `jobs` at a time; results come back in input order.
std::vector<CaseResult> runCases(const std::vector<CaseInfo>& cases, const PoolOptions& options);

// Child -> parent protocol: one record per line, fields separated by tabs; tabs and newlines
// inside fields become spaces.
std::string encodeLine(const std::vector<std::string>& fields);
std::vector<std::string> splitFields(const std::string& line);
std::string oneLine(const std::string& text, size_t maxChars);

// Reports (report.cpp).
struct ExpectedEntry {
  Outcome outcome = Outcome::Error;
  std::string reason;
  int line = 0;
};
// Parses "<dir-basename>/<case> <outcome> <reason>" lines; '#' starts a comment.
bool readExpected(const std::string& path, std::map<std::string, ExpectedEntry>* out, std::string* error);
bool writeExpected(const std::string& path, const std::vector<CaseResult>& results, const std::string& commandLine,
                   std::string* error);
bool writeMarkdown(const std::string& path, const std::vector<CaseResult>& results, const std::string& commandLine,
                   std::string* error);
bool writeJson(const std::string& path, const std::vector<CaseResult>& results, const std::string& commandLine,
               std::string* error);

}  // namespace osprey::conformance
