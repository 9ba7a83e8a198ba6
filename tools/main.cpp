// osprey: convert | run | bench | quantize | info | backends
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cli_common.h"

namespace {
void usage() {
  std::fprintf(stderr,
               "usage: osprey <command> [options]\n"
               "  convert SRC.onnx DST.osp          convert an ONNX model (or SRC.tflite, or a Caffe\n"
               "                                    deploy.prototxt and its net.caffemodel, a TensorFlow .pb\n"
               "                                    or SavedModel directory: [--signature NAME])\n"
               "  run MODEL [--input NAME=FILE]... [--save-outputs DIR] [--backend cpu] [--threads N]\n"
               "        [--precision normal|high|low] [--memory-limit BYTES[K|M|G|T]] [--time-limit-ms MS]\n"
               "        [--dump-tensors DIR]        every op's outputs of the first run as DIR/NNNN_<name>.npy\n"
               "                                    run a model and print its outputs (MODEL: .osp, .onnx,\n"
               "                                    .tflite, deploy.prototxt net.caffemodel, a TensorFlow .pb\n"
               "                                    or SavedModel directory [--signature NAME])\n"
               "  bench MODEL [--input [NAME=]FILE]... [--backend B] [--threads N] [--warmup W] [--loops L]\n"
               "        [--per-op] [--json] [--trace FILE] [--gap-ms G] [--precision normal|high|low]\n"
               "        [--memory-limit BYTES[K|M|G|T]]   refuse plans needing more (default: physical memory)\n"
               "        [--time-limit-ms MS]              fail a run that takes longer\n"
               "        [--plan-cache N]                  plans of N other input shapes kept (default 4)\n"
               "        [--device-io]                     inputs and outputs bound in device memory (no host copies)\n"
               "        [--batch N] [--shape NAME=D0,D1,...]   shapes of the generated inputs\n"
               "                                    latency (min/median/max), peak RSS, per-op profile\n"
               "  quantize MODEL OUT.osp --calibration DIR [--method minmax|entropy|percentile] [--percentile P]\n"
               "        [--per-channel] [--exclude OPS] [--threads N]\n"
               "                                    post-training int8 quantization from a folder of input .npy\n"
               "                                    files (DIR/*.npy, or DIR/<sample>/<input>.npy), with a per-\n"
               "                                    tensor report; --dynamic: MatMuls quantize activations at run time\n"
               "        --weights-only int8|int4 [--block-size 32]   MatMul/Gemm weights only (MatMulNBits)\n"
               "        [--accuracy-level 4]        4: int4 weights multiply int8-quantized activations; 0: float\n"
               "  info MODEL                        inputs, outputs, op histogram, parameters, FLOPs\n"
               "  backends                          backends compiled in and their devices\n");
  std::fputs(osprey::cli::configOptionsUsage(), stderr);
}

// OSPREY_CPU_ISA=avx2|scalar limits the CPU kernel table, as benchmark procedures set it; the
// library reads no environment. --cpu-isa, applied later, overrides it.
int applyCpuIsaFromEnvironment() {
  const char* name = std::getenv("OSPREY_CPU_ISA");
  if (!name || !*name) return 0;
  osprey::CpuIsa isa;
  if (!osprey::cpuIsaFromName(name, &isa))
    return osprey::cli::fail(osprey::Status::invalidArgument(std::string("OSPREY_CPU_ISA must be native, avx2 or scalar, got '") +
                                                             name + "'"));
  const osprey::Status st = osprey::setCpuIsaLimit(isa);
  return st ? 0 : osprey::cli::fail(st);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  if (int rc = applyCpuIsaFromEnvironment()) return rc;
  try {
    if (cmd == "convert") return osprey::cli::cmdConvert(argc, argv);
    if (cmd == "run") return osprey::cli::cmdRun(argc, argv);
    if (cmd == "bench") return osprey::cli::cmdBench(argc, argv);
    if (cmd == "info") return osprey::cli::cmdInfo(argc, argv);
    if (cmd == "backends") return osprey::cli::cmdBackends(argc, argv);
    if (cmd == "quantize") return osprey::cli::cmdQuantize(argc, argv);
  } catch (const std::exception& e) {  // e.g. bad_alloc on a model too large for memory
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "error: unknown command '%s'\n", cmd.c_str());
  usage();
  return 2;
}
