// osprey convert | info | backends
#include <chrono>
#include <cstdio>
#include <map>

#include "cli_common.h"
#include "converter/converter.h"
#include "core/graph.h"
#include "runtime/model_io.h"

namespace osprey::cli {

int cmdConvert(int argc, char** argv) {
  Args args;
  Status st = parseArgs(argc, argv, 2, {"input-shape", "signature"}, {"no-fold", "no-fuse"}, &args);
  if (!st) return fail(st);
  const bool caffe = !args.positional.empty() && isCaffePrototxt(args.positional[0]);
  if (args.positional.size() != (caffe ? 3u : 2u))
    return fail(Status::invalidArgument(
        "convert needs SRC (.onnx, .tflite, a TensorFlow .pb; for Caffe deploy.prototxt and its .caffemodel) and "
        "DST.osp"));
  const std::string& dst = args.positional.back();
  ConvertOptions options;
  options.foldConstants = !args.has("no-fold");
  options.fuse = !args.has("no-fuse");
  if (!(st = inputShapesFromArgs(args, &options.inputShapes))) return fail(st);
  options.signature = args.get("signature", "");
  Model model;
  ConvertReport report;
  const bool tensorflow = !caffe && isTensorflowModel(args.positional[0]);
  const bool tflite = !caffe && !tensorflow && isTfliteFile(args.positional[0]);
  if (!options.inputShapes.empty() && !tensorflow)
    return fail(Status::invalidArgument("--input-shape applies to TensorFlow models (.pb)"));
  if (!options.signature.empty() && !tensorflow)
    return fail(Status::invalidArgument("--signature applies to TensorFlow SavedModel directories"));
  st = caffe        ? convertCaffeFiles(args.positional[0], args.positional[1], &model, options, &report)
       : tensorflow ? convertTensorflowFile(args.positional[0], &model, options, &report)
       : tflite     ? convertTfliteFile(args.positional[0], &model, options, &report)
                    : convertOnnxFile(args.positional[0], &model, options, &report);
  if (!st) return fail(st);
  std::vector<uint8_t> bytes;
  if (!(st = writeModel(model, &bytes))) return fail(st);
  if (!(st = writeFile(dst, bytes))) return fail(st);
  std::printf("converted %s -> %s: %d %s -> %d ops (%d folded, %d fused, %d removed), %.1f MB, %.3f s\n",
              args.positional[0].c_str(), dst.c_str(),
              caffe ? report.caffeLayers : tensorflow ? report.tensorflowNodes : tflite ? report.tfliteOps : report.onnxNodes,
              caffe ? "Caffe layers" : tensorflow ? "TensorFlow nodes" : tflite ? "TFLite ops" : "ONNX nodes",
              report.ospreyOps,
              report.foldedOps, report.fusedOps, report.removedOps, bytes.size() / 1048576.0, report.seconds);
  return 0;
}

int cmdInfo(int argc, char** argv) {
  Args args;
  Status st = parseArgs(argc, argv, 2, {}, {}, &args);
  if (!st) return fail(st);
  std::shared_ptr<Interpreter> interp;
  if (!(st = loadModel(args, "info", &interp))) return fail(st);
  const Model& model = interp->model();
  std::printf("model %s (format %d, producer '%s')\n", args.positional[0].c_str(), model.formatVersion,
              model.producer.c_str());
  auto printInfo = [](const char* role, const TensorInfoPublic& t) {
    std::printf("  %s '%s': %s\n", role, t.name.c_str(), describeType(t).c_str());
  };
  for (auto& t : interp->inputs()) printInfo("input ", t);
  for (auto& t : interp->outputs()) printInfo("output", t);
  std::map<std::string, int> histogram;
  for (auto& n : model.graph.nodes) ++histogram[opTypeName(n.type)];
  int64_t params = 0;
  for (auto& t : model.graph.tensors)
    if (t.isConstant) params += shapeElements(t.shape);
  std::printf("ops: %zu\n", model.graph.nodes.size());
  for (auto& [name, count] : histogram) std::printf("  %-22s %d\n", name.c_str(), count);
  std::printf("parameters: %lld (%.2f M)\n", static_cast<long long>(params), params / 1e6);
  // FLOPs need shapes: plan a session at the model's shapes (symbolic dimensions as 1).
  std::map<std::string, Shape> shapes;
  for (auto& t : interp->inputs()) {
    Shape s = t.shape;
    for (auto& d : s)
      if (d < 0) d = 1;
    shapes[t.name] = s;
  }
  std::unique_ptr<Session> session;
  if ((st = interp->createSession(ScheduleConfig(), BackendConfig(), &session)) && (st = session->resize(shapes))) {
    std::printf("FLOPs: %.3f G (symbolic dimensions as 1)\n", session->stats().flops / 1e9);
    std::printf("activation arena: %.2f MB planned (activations add up to %.2f MB)\n",
                session->stats().arenaPeakBytes / 1048576.0, session->stats().activationBytesSum / 1048576.0);
    std::printf("ops as planned, by dtype (first input -> first output):\n");
    for (auto& [key, count] : session->stats().opsByDtype) std::printf("  %-44s %d\n", key.c_str(), count);
  } else {
    std::printf("FLOPs: unknown (%s)\n", st.message().c_str());
  }
  return 0;
}

int cmdBackends(int argc, char** argv) {
  for (auto& b : availableBackends()) {
    std::printf("%s\n", b.name.c_str());
    for (auto& d : b.devices) std::printf("  %s\n", d.c_str());
  }
  return 0;
}

}  // namespace osprey::cli
