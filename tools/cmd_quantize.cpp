// osprey quantize MODEL OUT.osp --calibration DIR [--method minmax|entropy|percentile]
//   [--percentile P] [--per-channel] [--dynamic] [--weights-only int8|int4 [--block-size N]
//   [--accuracy-level 0-4]]
//   [--exclude OPS] [--threads N]
#include <unistd.h>

#include <cstdio>
#include <sstream>

#include "cli_common.h"
#include "quantizer/quantizer_io.h"

namespace osprey::cli {

namespace {

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ','))
    if (!part.empty()) parts.push_back(part);
  return parts;
}

// A bar redrawn in place on a terminal; one line per pass in a log.
void printProgress(const char* pass, int done, int total) {
  static const bool terminal = isatty(fileno(stderr));
  if (!terminal) {
    if (done == total) std::fprintf(stderr, "calibrated (%s): %d inputs\n", pass, total);
    return;
  }
  constexpr int kWidth = 30;
  const int filled = total > 0 ? done * kWidth / total : kWidth;
  std::fprintf(stderr, "\rcalibrating (%s) [%s%s] %d/%d", pass, std::string(filled, '#').c_str(),
               std::string(kWidth - filled, ' ').c_str(), done, total);
  if (done == total) std::fprintf(stderr, "\n");
}

void printReport(const QuantizeReport& r) {
  std::printf("%d ops quantized, %d left in float:", r.quantizedOps, r.floatOps);
  for (const auto& [type, count] : r.quantizedByType) std::printf(" %s %d", type.c_str(), count);
  std::printf("\n");
  if (!r.tensors.empty()) {
    std::printf("\nper quantized tensor, against the float model on the first calibration input:\n");
    std::printf("  %-48s %-22s %9s %11s\n", "tensor", "op", "cosine", "max error");
    for (const QuantizedTensorReport& t : r.tensors)
      std::printf("  %-48s %-22s %9.5f %11.5g\n", t.name.c_str(), t.op.c_str(), t.cosine, t.maxError);
  }
  for (const QuantizedTensorReport& t : r.outputs)
    std::printf("model %s: cosine %.5f, max error %.5g\n", t.name.c_str(), t.cosine, t.maxError);
}

}  // namespace

int cmdQuantize(int argc, char** argv) {
  Args args;
  Status st = parseArgs(argc, argv, 2, {"calibration", "method", "percentile", "exclude", "threads", "weights-only", "block-size", "accuracy-level"},
                        {"per-channel", "dynamic"}, &args);
  if (!st) return fail(st);
  if (args.positional.size() != 2) return fail(Status::invalidArgument("quantize needs MODEL and OUT.osp"));
  QuantizeOptions options;
  options.dynamic = args.has("dynamic");
  options.perChannel = args.has("per-channel");
  options.exclude = splitList(args.get("exclude"));
  const std::string method = args.get("method", "minmax");
  if (method == "minmax") options.method = CalibrationMethod::MinMax;
  else if (method == "entropy") options.method = CalibrationMethod::Entropy;
  else if (method == "percentile") options.method = CalibrationMethod::Percentile;
  else return fail(Status::invalidArgument("--method must be minmax, entropy or percentile, not '" + method + "'"));
  if (args.has("percentile")) {
    try {
      options.percentile = std::stod(args.get("percentile"));
    } catch (...) {
      options.percentile = -1;
    }
    if (!(options.percentile > 50 && options.percentile <= 100))
      return fail(Status::invalidArgument("--percentile must be a number in (50, 100]"));
  }
  if (args.has("weights-only")) {
    const std::string bits = args.get("weights-only");
    if (bits == "int8") options.weightBits = 8;
    else if (bits == "int4") options.weightBits = 4;
    else return fail(Status::invalidArgument("--weights-only must be int8 or int4, not '" + bits + "'"));
    if (options.dynamic) return fail(Status::invalidArgument("--weights-only and --dynamic are two different schemes: pick one"));
  }
  if (args.has("block-size")) {
    if (!args.has("weights-only")) return fail(Status::invalidArgument("--block-size applies to --weights-only"));
    if (!(st = parseInt(args.get("block-size"), "--block-size", &options.blockSize))) return fail(st);
  }
  if (args.has("accuracy-level")) {
    if (!args.has("weights-only")) return fail(Status::invalidArgument("--accuracy-level applies to --weights-only"));
    if (!(st = parseInt(args.get("accuracy-level"), "--accuracy-level", &options.accuracyLevel))) return fail(st);
    if (options.accuracyLevel < 0 || options.accuracyLevel > 4)
      return fail(Status::invalidArgument("--accuracy-level must be 0 to 4 (4: int8 activations for int4 weights)"));
  }
  if (args.has("threads") && !(st = parseInt(args.get("threads"), "--threads", &options.threads))) return fail(st);
  if (!options.dynamic && !options.weightBits && !args.has("calibration"))
    return fail(Status::invalidArgument("static quantization needs --calibration DIR (or use --dynamic or --weights-only)"));
  options.progress = printProgress;

  Model model;
  if (!(st = loadFloatModel(args.positional[0], options, &model))) return fail(st);
  std::vector<std::string> inputNames;
  for (int t : model.graph.inputs) inputNames.push_back(model.graph.tensors[t].name);
  std::vector<FeedDict> calibration;
  if (args.has("calibration") && !(st = readCalibrationFolder(args.get("calibration"), inputNames, &calibration)))
    return fail(st);
  Model quantized;
  QuantizeReport report;
  if (!(st = quantizeModel(model, calibration, options, &quantized, &report))) return fail(st);
  if (!(st = saveModelFile(quantized, args.positional[1]))) return fail(st);
  printReport(report);
  std::printf("wrote %s\n", args.positional[1].c_str());
  return 0;
}

}  // namespace osprey::cli
