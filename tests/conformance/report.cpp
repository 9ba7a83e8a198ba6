// Reports of a conformance run: docs/conformance.md, JSON, and the expected-failures list.
// Every ordering is by name so that regenerated files differ only where results do.
#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "conformance.h"

namespace osprey::conformance {

namespace {

constexpr size_t kExpectedReasonChars = 160;
constexpr size_t kMarkdownReasonChars = 240;

using Counts = std::array<int, kOutcomeCount>;

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e + 1 - b);
}

std::string markdownCell(const std::string& text, size_t maxChars) {
  std::string s;
  for (char c : oneLine(text, maxChars)) {
    if (c == '|') s += "\\|";
    else if (c == '<') s += "&lt;";
    else if (c == '>') s += "&gt;";
    else s += c;
  }
  return s;
}

std::string jsonString(const std::string& text) {
  std::string s = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': s += "\\\""; break;
      case '\\': s += "\\\\"; break;
      case '\n': s += "\\n"; break;
      case '\t': s += "\\t"; break;
      case '\r': s += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          s += buf;
        } else {
          s += static_cast<char>(c);
        }
    }
  }
  return s + "\"";
}

bool writeFile(const std::string& path, const std::string& text, std::string* error) {
  std::ofstream f(path, std::ios::binary);
  if (f) f << text;
  if (!f) {
    *error = "cannot write '" + path + "'";
    return false;
  }
  return true;
}

void tableHeader(std::ostringstream& os, const char* first) {
  os << "| " << first << " | cases |";
  for (int o = 0; o < kOutcomeCount; ++o) os << " " << outcomeName(static_cast<Outcome>(o)) << " |";
  os << "\n|---|---:|";
  for (int o = 0; o < kOutcomeCount; ++o) os << "---:|";
  os << "\n";
}

void tableRow(std::ostringstream& os, const std::string& label, const Counts& c) {
  int total = 0;
  for (int n : c) total += n;
  os << "| " << label << " | " << total << " |";
  for (int n : c) os << " " << (n ? std::to_string(n) : "") << " |";
  os << "\n";
}

void table(std::ostringstream& os, const char* first, const std::map<std::string, Counts>& rows, const Counts* total) {
  tableHeader(os, first);
  for (const auto& [label, counts] : rows) tableRow(os, markdownCell(label, 80), counts);
  if (total) tableRow(os, "**all**", *total);
  os << "\n";
}

}  // namespace

const char* outcomeName(Outcome o) {
  switch (o) {
    case Outcome::Pass: return "pass";
    case Outcome::Unsupported: return "unsupported";
    case Outcome::Wrong: return "wrong";
    case Outcome::Error: return "error";
    case Outcome::Crash: return "crash";
    case Outcome::Timeout: return "timeout";
  }
  return "?";
}

bool outcomeFromName(const std::string& name, Outcome* out) {
  for (int o = 0; o < kOutcomeCount; ++o) {
    if (name == outcomeName(static_cast<Outcome>(o))) {
      *out = static_cast<Outcome>(o);
      return true;
    }
  }
  return false;
}

bool readExpected(const std::string& path, std::map<std::string, ExpectedEntry>* out, std::string* error) {
  std::ifstream f(path);
  if (!f) {
    *error = "cannot read '" + path + "'";
    return false;
  }
  std::string line;
  int number = 0;
  while (std::getline(f, line)) {
    ++number;
    size_t hash = line.find('#');
    std::string text = trim(hash == std::string::npos ? line : line.substr(0, hash));
    if (text.empty()) continue;
    std::istringstream is(text);
    std::string id, outcome;
    is >> id >> outcome;
    ExpectedEntry e;
    e.line = number;
    std::getline(is, e.reason);
    e.reason = trim(e.reason);
    std::string where = path + ":" + std::to_string(number) + ": ";
    if (id.find('/') == std::string::npos) {
      *error = where + "expected '<dir>/<case> <outcome> <reason>', got '" + text + "'";
      return false;
    }
    if (!outcomeFromName(outcome, &e.outcome) || e.outcome == Outcome::Pass) {
      *error = where + "unknown outcome '" + outcome + "' (unsupported, wrong, error, crash or timeout)";
      return false;
    }
    if (!out->emplace(id, e).second) {
      *error = where + "'" + id + "' is listed twice";
      return false;
    }
  }
  return true;
}

bool writeExpected(const std::string& path, const std::vector<CaseResult>& results, const std::string& commandLine,
                   std::string* error) {
  std::ostringstream os;
  os << "# ONNX conformance cases expected NOT to pass: <dir-basename>/<case> <outcome> <reason>\n"
        "# Outcomes: unsupported, wrong, error, crash, timeout. A case that fails but is not listed\n"
        "# is a regression; a listed case that passes is reported so it can be removed.\n"
        "# Regenerate with: osprey_conformance --write-expected tests/conformance/expected_failures.txt DIR...\n"
        "# Generated by: "
     << oneLine(commandLine, 400) << "\n";
  std::map<std::string, const CaseResult*> sorted;
  for (const auto& r : results)
    if (r.outcome != Outcome::Pass) sorted[r.info.id()] = &r;
  for (const auto& [id, r] : sorted)
    os << id << " " << outcomeName(r->outcome) << " " << oneLine(r->message, kExpectedReasonChars) << "\n";
  return writeFile(path, os.str(), error);
}

bool writeMarkdown(const std::string& path, const std::vector<CaseResult>& results, const std::string& commandLine,
                   std::string* error) {
  std::map<std::string, Counts> byDir, byOp, byDtype;
  Counts total{};
  std::map<std::string, const CaseResult*> failing;
  for (const auto& r : results) {
    int o = static_cast<int>(r.outcome);
    byDir[r.info.dirName][o]++;
    total[o]++;
    if (r.ops.empty()) byOp["(no nodes)"][o]++;
    for (const auto& op : r.ops) byOp[op][o]++;
    if (r.dtypes.empty()) byDtype["(no inputs)"][o]++;
    for (const auto& d : r.dtypes) byDtype[d][o]++;
    if (r.outcome != Outcome::Pass) failing[r.info.id()] = &r;
  }

  std::ostringstream os;
  os << "# ONNX conformance\n\n"
        "Generated by `osprey_conformance` (tests/conformance/); do not edit by hand. Each case is an\n"
        "ONNX backend test (model.onnx + test_data_set_N) converted with the Osprey converter and run on\n"
        "the CPU backend in its own process. Outcomes: **pass**; **unsupported** (an op, attribute or\n"
        "dtype Osprey reports as not supported); **wrong** (runs, but an output differs: shape and dtype\n"
        "exact, floats within 1e-5 + 1e-3·|expected|, the rest exact); **error** (any other failure\n"
        "status); **crash** (the process died); **timeout** (killed after the time limit).\n\n"
        "Command:\n\n```\n"
     << commandLine << "\n```\n\n## Totals\n\n";
  table(os, "directory", byDir, &total);
  os << "## By op\n\nA case counts once under each distinct op type in its top-level graph: node tests have one\n"
        "op; `_expanded` node tests and model tests have several.\n\n";
  table(os, "op", byOp, nullptr);
  os << "## Control flow\n\nPassing cases with If, Loop or Scan, by how their bodies ran: **compiled** (sessions planned\n"
        "once on the case's runtime and settings, run with the backend's kernels) or **eager**.\n\n"
        "| op | compiled | eager |\n|---|---|---|\n";
  for (const char* op : {"If", "Loop", "Scan"}) {
    int compiled = 0, eager = 0;
    for (const auto& r : results)
      if (!r.bodies.empty() && std::find(r.ops.begin(), r.ops.end(), op) != r.ops.end())
        (r.bodies == "compiled" ? compiled : eager)++;
    os << "| " << op << " | " << compiled << " | " << eager << " |\n";
  }
  os << "\n## Quantized ops\n\nPassing cases with a quantized op, by the kernel that ran it: **integer** (the backend's\n"
        "own integer kernels) or **reference** (the plain-loop reference kernel, for forms they do not take).\n\n"
        "| op | integer | reference |\n|---|---|---|\n";
  for (const std::string& op : quantizedOps()) {
    int integer = 0, reference = 0;
    for (const auto& r : results)
      if (!r.quantizedKernel.empty() && std::find(r.ops.begin(), r.ops.end(), op) != r.ops.end())
        (r.quantizedKernel == "integer" ? integer : reference)++;
    os << "| " << op << " | " << integer << " | " << reference << " |\n";
  }
  os << "\n## By input dtype\n\nA case counts once under each distinct element type of its graph inputs.\n\n";
  table(os, "dtype", byDtype, nullptr);
  os << "## Cases that do not pass\n\n| case | outcome | reason |\n|---|---|---|\n";
  for (const auto& [id, r] : failing)
    os << "| " << markdownCell(id, 120) << " | " << outcomeName(r->outcome) << " | "
       << markdownCell(r->message, kMarkdownReasonChars) << " |\n";
  return writeFile(path, os.str(), error);
}

bool writeJson(const std::string& path, const std::vector<CaseResult>& results, const std::string& commandLine,
               std::string* error) {
  std::ostringstream os;
  os << "{\n  \"command\": " << jsonString(commandLine) << ",\n  \"cases\": [";
  bool first = true;
  for (const auto& r : results) {
    os << (first ? "\n" : ",\n") << "    {\"id\": " << jsonString(r.info.id()) << ", \"dir\": " << jsonString(r.info.dirName)
       << ", \"case\": " << jsonString(r.info.name) << ", \"outcome\": \"" << outcomeName(r.outcome)
       << "\", \"message\": " << jsonString(r.message) << ", \"ops\": [";
    for (size_t i = 0; i < r.ops.size(); ++i) os << (i ? ", " : "") << jsonString(r.ops[i]);
    os << "], \"dtypes\": [";
    for (size_t i = 0; i < r.dtypes.size(); ++i) os << (i ? ", " : "") << jsonString(r.dtypes[i]);
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.3f", r.seconds);
    os << "], \"seconds\": " << secs << "}";
    first = false;
  }
  os << "\n  ]\n}\n";
  return writeFile(path, os.str(), error);
}

}  // namespace osprey::conformance
