#!/usr/bin/env python3
"""Osprey's CUDA backend vs PyTorch on the same GPU, the same models and weights, in one run.

For every case MODEL:BATCH:PRECISION the script builds the model of make_models.py (random
weights, seed 0), exports it as static-shape ONNX at that batch, and times
  - Osprey:  `osprey bench MODEL.onnx --backend cuda --json` (fp16: `--precision low`),
  - PyTorch: eager fp32 (PyTorch's defaults), or autocast fp16 for fp16 cases,
each from host input to host output (the input, in pageable host memory for both, is copied to
the GPU and the output back every run, as Osprey's run does). After both warm up, their timed runs alternate (Osprey through
`osprey bench --step`), so a change in the machine's state hits both alike. Prints median
latency, throughput (samples/s) and the ratios.

  bench/cuda/compare_torch.py --osprey build/osprey [--make-models .devdeps/models/make_models.py]
      [--work-dir /tmp/osprey-vs-torch] [--warmup 10] [--loops 50]
      [--cases resnet50:1:fp32,resnet50:32:fp16,bert_base_l12_seq128:32:fp16] [--torch-pinned]

Targets (docs of the CUDA backend): ResNet-50 bs1 fp32 latency <= 0.6x eager; ResNet-50 bs32
fp16 throughput >= 1.2x autocast; BERT-base bs32 fp16 throughput >= 1.0x autocast.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

import numpy as np

DEFAULT_CASES = "resnet50:1:fp32,resnet50:32:fp16,bert_base_l12_seq128:32:fp16"
TARGETS = {("resnet50", 1, "fp32"): ("latency", 0.6), ("resnet50", 32, "fp16"): ("throughput", 1.2),
           ("bert_base_l12_seq128", 32, "fp16"): ("throughput", 1.0)}


def load_make_models(path):
    spec = importlib.util.spec_from_file_location("make_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_model(mm, name):
    """The model of make_models.py named `name` with its seeded random weights, and its input shape."""
    import torch
    bert_layers = 12
    if name.startswith("bert_base_l"):
        bert_layers = int(name[len("bert_base_l"):].split("_")[0])
    for i, (model_name, ctor, shape) in enumerate(mm.model_list(bert_layers)):
        if model_name == name:
            torch.manual_seed(0)
            return mm.randomize(ctor().eval(), name, shape, i), shape
    raise SystemExit(f"unknown model {name}; make_models.py has: {[m[0] for m in mm.model_list(bert_layers)]}")


def export(model, x, path):
    """TorchScript export (weights inside the file) at opset 17: newer PyTorch lowers attention
    through scaled_dot_product_attention, which opset 13 cannot express."""
    import torch
    kwargs = dict(opset_version=17, input_names=["input"], output_names=["output"], do_constant_folding=True)
    try:
        torch.onnx.export(model, (x,), path, dynamo=False, **kwargs)
    except TypeError:  # an older torch without the dynamo switch
        torch.onnx.export(model, (x,), path, **kwargs)


class OspreyWorker:
    """`osprey bench --step`: warms up, prints "ready", then times one run per line it reads."""

    def __init__(self, osprey, onnx_path, input_path, precision, warmup):
        cmd = [osprey, "bench", onnx_path, "--backend", "cuda", "--input", "input=" + input_path, "--json",
               "--warmup", str(warmup), "--step"]
        if precision == "fp16":
            cmd += ["--precision", "low"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1)
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError((line + " " + self.proc.stderr.read()).strip().splitlines()[-1][:300])

    def step(self):
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("osprey stopped: " + self.proc.stderr.read()[-300:])
        return float(line)

    def finish(self):
        self.proc.stdin.close()
        self.proc.wait()


def torch_runner(model, x_host, precision, pinned):
    """One timed PyTorch run from host input to host output, in ms. The input starts in ordinary
    (pageable) host memory, as the array a user hands to Osprey's Session::run does, or, with
    `pinned`, in page-locked memory (which Osprey's API cannot be handed)."""
    import torch
    model = model.cuda().eval()
    x_cpu = torch.from_numpy(x_host)
    if pinned:
        x_cpu = x_cpu.pin_memory()

    def run():
        t0 = time.perf_counter()
        with torch.no_grad():
            x = x_cpu.cuda()
            if precision == "fp16":
                with torch.autocast("cuda", dtype=torch.float16):
                    y = model(x)
            else:
                y = model(x)
            y.float().cpu()  # synchronises
        return (time.perf_counter() - t0) * 1000.0

    return run


def time_both(osprey, onnx_path, input_path, model, x, precision, warmup, loops, pinned):
    """Median ms of Osprey and of PyTorch, their timed runs alternating so that any drift in the
    machine's state hits both alike. Osprey's median is None (with the error) if it failed."""
    run_torch = torch_runner(model, x, precision, pinned)
    for _ in range(warmup):
        run_torch()
    try:
        worker = OspreyWorker(osprey, onnx_path, input_path, precision, warmup)
    except RuntimeError as e:
        times = sorted(run_torch() for _ in range(loops))
        return None, times[len(times) // 2], str(e)
    ours, theirs = [], []
    try:
        for _ in range(loops):
            ours.append(worker.step())
            theirs.append(run_torch())
    except RuntimeError as e:
        return None, sorted(theirs)[len(theirs) // 2] if theirs else float("nan"), str(e)
    finally:
        worker.finish()
    ours.sort()
    theirs.sort()
    return ours[len(ours) // 2], theirs[len(theirs) // 2], None


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--osprey", default=os.path.join(root, "build", "osprey"))
    p.add_argument("--make-models", default=os.path.join(root, ".devdeps", "models", "make_models.py"))
    p.add_argument("--work-dir", default="/tmp/osprey-vs-torch")
    p.add_argument("--cases", default=DEFAULT_CASES)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--loops", type=int, default=50)
    p.add_argument("--json-out", help="also write the rows as JSON here")
    p.add_argument("--torch-pinned", action="store_true", help="PyTorch's input in pinned host memory")
    args = p.parse_args()

    import torch
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to compare", file=sys.stderr)
        return 77
    os.makedirs(args.work_dir, exist_ok=True)
    mm = load_make_models(args.make_models)
    print(f"GPU: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
          f"cudnn.allow_tf32={torch.backends.cudnn.allow_tf32}, matmul precision {torch.get_float32_matmul_precision()}")
    header = (f"{'model':22} {'bs':>3} {'prec':5} {'osprey ms':>10} {'torch ms':>10} {'osprey/s':>10} "
              f"{'torch/s':>10} {'lat ratio':>9} {'thr ratio':>9}  target")
    print(header)
    rows = []
    for case in args.cases.split(","):
        name, batch, precision = case.split(":")
        batch = int(batch)
        model, shape = build_model(mm, name)
        shape = (batch,) + tuple(shape[1:])
        x = np.random.RandomState(0).standard_normal(shape).astype(np.float32)
        onnx_path = os.path.join(args.work_dir, f"{name}_bs{batch}.onnx")
        input_path = os.path.join(args.work_dir, f"{name}_bs{batch}.input.npy")
        if not os.path.exists(onnx_path):
            export(model, torch.from_numpy(x), onnx_path)
        np.save(input_path, x)
        ms, torch_ms, error = time_both(args.osprey, onnx_path, input_path, model, x, precision, args.warmup,
                                        args.loops, args.torch_pinned)
        row = {"model": name, "batch": batch, "precision": precision, "torch_ms": torch_ms,
               "torch_per_s": batch * 1000.0 / torch_ms}
        target = TARGETS.get((name, batch, precision))
        if ms is None:
            row["error"] = error
            print(f"{name:22} {batch:3d} {precision:5} {'failed':>10} {torch_ms:10.3f}  osprey: {error}")
        else:
            row.update({"osprey_ms": ms, "osprey_per_s": batch * 1000.0 / ms, "latency_ratio": ms / torch_ms,
                        "throughput_ratio": torch_ms / ms})
            verdict = ""
            if target:
                kind, bound = target
                ok = row["latency_ratio"] <= bound if kind == "latency" else row["throughput_ratio"] >= bound
                verdict = f"{kind} {'<=' if kind == 'latency' else '>='} {bound}: {'met' if ok else 'NOT met'}"
            print(f"{name:22} {batch:3d} {precision:5} {ms:10.3f} {torch_ms:10.3f} {row['osprey_per_s']:10.1f} "
                  f"{row['torch_per_s']:10.1f} {row['latency_ratio']:9.3f} {row['throughput_ratio']:9.3f}  {verdict}")
        sys.stdout.flush()
        rows.append(row)
        del model
        torch.cuda.empty_cache()
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
