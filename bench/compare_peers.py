#!/usr/bin/env python3
"""Osprey against ONNX Runtime, OpenVINO, MNN and ncnn on the same .onnx models, the same input
and the same thread count, alternating run by run in one process tree.

Each engine runs in a worker process of its own (so each peak RSS is its own): Osprey as
`osprey bench --step`, the peers as this script with --worker. After their warm-up runs the
workers are driven in lockstep, --block runs of each per iteration in a rotating order, each
after a --gap-ms idle pause, the first run of each block not counted: ONNX Runtime's workers spin
after a run and would otherwise take a core from whichever engine runs next (back to back, with
no gap, that doubled Osprey's ViT-tiny time on two cores while ONNX Runtime's own stayed put). Every engine's output is checked against NAME.ref.npy
(or, without one, ONNX Runtime's output) within 1e-3 * max(1, max|ref|) (--tolerance: another
factor than 1e-3, for quantized models, whose engines round differently).

MNN models are converted with `mnnconvert`, ncnn models with `pnnx` (both from PyPI: `mnn`,
`pnnx`); the conversions are cached in --work-dir. An engine that is not installed, or whose
converter refuses a model, is reported as such and left out of that model's row.

  bench/compare_peers.py [--models-dir /tmp/models] [--threads 2] [--loops 40] [--gap-ms 200] [--block 3]
                         [--engines osprey,ort,openvino,mnn,ncnn] [--osprey BIN] [MODEL ...]

`--engines osprey,ort` is the ONNX Runtime-only comparison. Prints each engine's median (ms),
Osprey / best peer, which peer was best, and each engine's peak RSS (MB; a Python worker's
includes its interpreter and numpy, about 30-40 MB).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from lockstep import Worker, alternate
from lockstep import summary as lockstep_summary

DEFAULT_MODELS = ["mobilenet_v2", "resnet18", "resnet50", "squeezenet1_1", "shufflenet_v2_x1_0",
                  "efficientnet_b0", "bert_base_l12_seq128", "vit_tiny_p16_224"]
PEERS = ["ort", "openvino", "mnn", "ncnn"]


class Engine:
    """One peer's session in a worker: load(model_file, input) then run() -> output array."""

    def __init__(self, threads):
        self.threads = threads


class OrtEngine(Engine):
    def load(self, model, x):
        import onnxruntime as ort
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self.threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        self.feeds = {self.sess.get_inputs()[0].name: x}

    def run(self):
        return self.sess.run(None, self.feeds)[0]


class OpenVinoEngine(Engine):
    def load(self, model, x):
        import openvino as ov
        core = ov.Core()
        config = {"INFERENCE_NUM_THREADS": self.threads, "NUM_STREAMS": 1, "PERFORMANCE_HINT": "LATENCY",
                  "INFERENCE_PRECISION_HINT": "f32"}
        self.compiled = core.compile_model(model, "CPU", config)
        self.request = self.compiled.create_infer_request()
        self.x = x

    def run(self):
        self.request.infer({0: self.x})
        return self.request.get_output_tensor(0).data.copy()


class MnnEngine(Engine):
    def load(self, model, x):
        import MNN
        self.MNN = MNN
        self.interp = MNN.Interpreter(model)
        self.session = self.interp.createSession({"numThread": self.threads, "precision": "high"})
        self.input = self.interp.getSessionInput(self.session)
        self.interp.resizeTensor(self.input, tuple(x.shape))
        self.interp.resizeSession(self.session)
        self.x = x

    def run(self):
        MNN = self.MNN
        host = MNN.Tensor(tuple(self.x.shape), MNN.Halide_Type_Float, self.x, MNN.Tensor_DimensionType_Caffe)
        self.input.copyFrom(host)
        self.interp.runSession(self.session)
        out = self.interp.getSessionOutput(self.session)
        import numpy as np
        result = MNN.Tensor(out.getShape(), MNN.Halide_Type_Float, np.zeros(out.getShape(), np.float32),
                            MNN.Tensor_DimensionType_Caffe)
        out.copyToHostTensor(result)
        return result.getNumpyData().copy()


class NcnnEngine(Engine):
    def load(self, model, x):
        import ncnn
        self.ncnn = ncnn
        self.net = ncnn.Net()
        self.net.opt.num_threads = self.threads
        self.net.opt.use_vulkan_compute = False
        # fp32 throughout, as every other engine here: ncnn's defaults store some blobs in fp16.
        for flag in ("use_fp16_packed", "use_fp16_storage", "use_fp16_arithmetic", "use_bf16_storage"):
            setattr(self.net.opt, flag, False)
        if self.net.load_param(model + ".ncnn.param") != 0 or self.net.load_model(model + ".ncnn.bin") != 0:
            raise RuntimeError("ncnn could not load " + model)
        # pnnx keeps the batch axis of a batch-1 model out of ncnn's blobs.
        self.x = x[0] if x.shape[0] == 1 else x

    def run(self):
        import numpy as np
        ex = self.net.create_extractor()
        ex.input("in0", self.ncnn.Mat(self.x))
        ret, out = ex.extract("out0")
        if ret != 0:
            raise RuntimeError(f"ncnn extract failed ({ret})")
        return np.array(out)[None]


ENGINES = {"ort": OrtEngine, "openvino": OpenVinoEngine, "mnn": MnnEngine, "ncnn": NcnnEngine}


def worker(engine, model, input_path, output_path, threads, warmup):
    """Speaks `osprey bench --step`'s protocol: one timed run per stdin line."""
    import numpy as np
    eng = ENGINES[engine](threads)
    eng.load(model, np.load(input_path))
    out = None
    for _ in range(max(warmup, 1)):
        out = eng.run()
    np.save(output_path, np.asarray(out, dtype=np.float32))
    print("ready", flush=True)
    times = []
    for _ in sys.stdin:
        t0 = time.perf_counter()
        eng.run()
        ms = (time.perf_counter() - t0) * 1000.0
        times.append(ms)
        print(f"{ms:.4f}", flush=True)
    times.sort()
    print(json.dumps({"min_ms": times[0], "median_ms": times[len(times) // 2], "max_ms": times[-1],
                      "peak_rss_bytes": peak_rss_bytes()}), flush=True)


def peak_rss_bytes():
    """This process's peak RSS since its exec (VmHWM): getrusage's ru_maxrss keeps the parent's
    peak across fork and exec on Linux, and the parent may have held a large model."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def prepare(engine, name, onnx_path, input_shape, work_dir):
    """The model file the engine loads, converting (once) where it needs its own format."""
    if engine in ("ort", "openvino"):
        return onnx_path
    os.makedirs(work_dir, exist_ok=True)
    if engine == "mnn":
        out = os.path.join(work_dir, name + ".mnn")
        if not os.path.exists(out):
            tool = shutil.which("mnnconvert") or os.path.join(os.path.dirname(sys.executable), "mnnconvert")
            r = subprocess.run([tool, "-f", "ONNX", "--modelFile", onnx_path, "--MNNModel", out, "--bizCode", "osprey"],
                               capture_output=True, text=True)
            if r.returncode != 0 or not os.path.exists(out):
                raise RuntimeError("mnnconvert failed: " + (r.stdout + r.stderr).strip().splitlines()[-1])
        return out
    if engine == "ncnn":
        base = os.path.join(work_dir, name)
        if not os.path.exists(base + ".ncnn.param"):
            tool = shutil.which("pnnx") or os.path.join(os.path.dirname(sys.executable), "pnnx")
            local = base + ".onnx"
            shutil.copyfile(onnx_path, local)
            shape = "[" + ",".join(str(d) for d in input_shape) + "]"
            r = subprocess.run([tool, local, f"inputshape={shape}"], capture_output=True, text=True, cwd=work_dir)
            if not os.path.exists(base + ".ncnn.param"):
                raise RuntimeError("pnnx failed: " + ((r.stdout + r.stderr).strip().splitlines() or ["?"])[-1])
        return base
    raise ValueError(engine)


def max_error(out_path, ref):
    import numpy as np
    out = np.load(out_path).astype(np.float64)
    if out.size != ref.size:
        return float("inf")
    return float(np.max(np.abs(out.reshape(-1) - ref.reshape(-1))))


def osprey_output(osprey, model, inp, input_name, out_path, threads):
    """Osprey's output for the check, from `osprey run` (the timed worker prints only times)."""
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([osprey, "run", model, "--input", f"{input_name}={inp}", "--threads", str(threads),
                            "--save-outputs", d, "--quiet"], capture_output=True, text=True)
        files = sorted(f for f in os.listdir(d) if f.startswith("0_"))
        if r.returncode != 0 or not files:
            raise RuntimeError("osprey run failed: " + (r.stdout + r.stderr).strip()[-300:])
        shutil.copyfile(os.path.join(d, files[0]), out_path)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="*", default=DEFAULT_MODELS)
    p.add_argument("--models-dir", default="/tmp/models")
    p.add_argument("--work-dir", default="/tmp/osprey-peers", help="converted MNN / ncnn models and outputs")
    p.add_argument("--engines", default="osprey," + ",".join(PEERS))
    p.add_argument("--tolerance", type=float, default=1e-3,
                   help="outputs must match the reference within TOLERANCE * max(1, max|ref|)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--loops", type=int, default=40)
    p.add_argument("--gap-ms", type=float, default=200.0, help="idle pause before each timed run (0: back to back)")
    p.add_argument("--settle-ms", type=float, default=0.0,
                   help="idle pause before each engine's block of runs (the engine before stops polling)")
    p.add_argument("--block", type=int, default=3,
                   help="runs of one engine in a row per turn, the first not counted (lockstep.alternate)")
    p.add_argument("--osprey", default=os.environ.get("OSPREY_BIN", os.path.join(here, "..", "build", "osprey")))
    p.add_argument("--peer-python", default=sys.executable, help="a python with numpy and the peers' packages")
    p.add_argument("--json", help="also write the rows to this file")
    p.add_argument("--worker", nargs=4, metavar=("ENGINE", "MODEL", "INPUT", "OUTPUT"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        return worker(*a.worker, a.threads, a.warmup)

    import numpy as np
    import onnx
    engines = [e for e in a.engines.split(",") if e]
    peers = [e for e in engines if e != "osprey"]
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} cpus, {a.threads} thread(s), "
          f"warm-up {a.warmup}, {a.loops} alternating loops of {a.block} runs, {a.gap_ms:g} ms gap; "
          f"OSPREY_CPU_ISA={os.environ.get('OSPREY_CPU_ISA', 'native')}")
    header = f"{'model':<22}" + "".join(f"{e + ' ms':>12}" for e in engines) + f"{'osp/best':>9} {'best peer':<9}" + \
        "".join(f"{e[:4] + ' MB':>9}" for e in engines)
    print(header)
    print("-" * len(header))
    rows = []
    for name in a.models:
        model = os.path.join(a.models_dir, name + ".onnx")
        inp = os.path.join(a.models_dir, name + ".input.npy")
        ref_path = os.path.join(a.models_dir, name + ".ref.npy")
        x = np.load(inp)
        input_name = onnx.load(model, load_external_data=False).graph.input[0].name
        out_dir = os.path.join(a.work_dir, "outputs")
        os.makedirs(out_dir, exist_ok=True)
        workers, notes, outputs = {}, [], {}
        for e in engines:
            out_path = os.path.join(out_dir, f"{name}.{e}.npy")
            try:
                if e == "osprey":
                    osprey_output(a.osprey, model, inp, input_name, out_path, a.threads)
                    cmd = [a.osprey, "bench", model, "--input", f"{input_name}={inp}", "--threads", str(a.threads),
                           "--warmup", str(a.warmup), "--loops", str(a.loops), "--step", "--json"]
                else:
                    path = prepare(e, name, model, x.shape, a.work_dir)
                    cmd = [a.peer_python, os.path.abspath(__file__), "--threads", str(a.threads), "--warmup",
                           str(a.warmup), "--worker", e, path, inp, out_path]
                workers[e] = Worker(cmd)
                outputs[e] = out_path
            except (RuntimeError, OSError, ValueError) as err:
                notes.append(f"{e}: {str(err).splitlines()[0][:120]}")
        ref = np.load(ref_path).astype(np.float64) if os.path.exists(ref_path) else None
        if ref is None and "ort" in outputs:
            ref = np.load(outputs["ort"]).astype(np.float64)
        bound = a.tolerance * max(1.0, float(np.max(np.abs(ref)))) if ref is not None else None
        times = alternate(workers, a.loops, a.gap_ms, a.block, a.settle_ms)
        summary = {e: w.finish() for e, w in workers.items()}
        counted = {e: lockstep_summary(t) for e, t in times.items()}
        row = {"model": name, "median_ms": {e: s["median_ms"] for e, s in counted.items()},
               "min_ms": {e: s["min_ms"] for e, s in counted.items()},
               "peak_rss_bytes": {e: s["peak_rss_bytes"] for e, s in summary.items()}, "max_error": {}, "notes": notes}
        for e, path in outputs.items():
            if ref is not None:
                err = max_error(path, ref)
                row["max_error"][e] = err
                if not err <= bound:
                    notes.append(f"{e}: output off by {err:.3g} (bound {bound:.3g}); its time is not compared")
        good = {e: ms for e, ms in row["median_ms"].items() if e in peers and row["max_error"].get(e, 0) <= (bound or 1e300)}
        best = min(good, key=good.get) if good else None
        osp = row["median_ms"].get("osprey")
        row["osprey_over_best_peer"] = osp / good[best] if best and osp else None
        row["best_peer"] = best
        rows.append(row)
        cells = "".join(f"{row['median_ms'][e]:>12.2f}" if e in row["median_ms"] else f"{'-':>12}" for e in engines)
        ratio = f"{row['osprey_over_best_peer']:>9.2f}" if row["osprey_over_best_peer"] else f"{'-':>9}"
        rss = "".join(f"{row['peak_rss_bytes'][e] / 2**20:>9.0f}" if e in row["peak_rss_bytes"] else f"{'-':>9}"
                      for e in engines)
        print(f"{name:<22}{cells}{ratio} {best or '-':<9}{rss}", flush=True)
        for n in notes:
            print(f"    {n}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
