#!/usr/bin/env python3
"""Osprey's CUDA backend vs PyTorch on the same GPU, the same models and weights, in one run.

For every case MODEL:BATCH:PRECISION the script builds the model of make_models.py (random
weights, seed 0), exports it as static-shape ONNX at that batch, and times, runs alternating so
that a change in the machine's state hits every engine alike:
  - Osprey:  `osprey bench MODEL.onnx --backend cuda --step` (fp16: `--precision low`),
  - PyTorch, each variant of --torch: `eager` (fp32 with TF32 convolutions and matmuls, as
    PyTorch allows them; fp16: the model in half precision), `compile` (torch.compile, default
    mode), `reduce-overhead` (torch.compile with CUDA graphs) and `max-autotune`
    (torch.compile(mode="max-autotune"): Triton / cuDNN / cuBLAS choices timed per shape, CUDA
    graphs). fp16 models run in channels-last memory where their
    input is an image, as PyTorch's documentation advises for tensor cores.
--io says where inputs and outputs live: `device` (Osprey `--device-io`: bound device tensors,
IoBinding; PyTorch: the input already on the GPU, the output left there; both synchronise at
the end of each run), `host` (pageable host memory in and out: every run uploads its input and
reads its output back), or `both` (two tables). Compiled graphs are cached under --work-dir
(TORCHINDUCTOR_CACHE_DIR), so a second run of the script compiles far less. Prints median ms per
engine and Osprey's time over the fastest compiled PyTorch and over the fastest of all.

  bench/cuda/compare_torch.py --osprey build/osprey [--make-models .devdeps/models/make_models.py]
      [--work-dir /tmp/osprey-vs-torch] [--warmup 10] [--loops 50] [--io device|host|both]
      [--torch eager,compile,reduce-overhead[,max-autotune]] [--osprey-variants default[,autotune]]
      [--json-out FILE]
      [--cases resnet50:32:fp16,bert_base_l12_seq128:32:fp16,vit_tiny_p16_224:32:fp16]
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

import numpy as np

DEFAULT_CASES = "resnet50:32:fp16,bert_base_l12_seq128:32:fp16,vit_tiny_p16_224:32:fp16"


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

    def __init__(self, osprey, onnx_path, input_path, precision, warmup, device_io, extra_args=()):
        cmd = [osprey, "bench", onnx_path, "--backend", "cuda", "--input", "input=" + input_path, "--json",
               "--warmup", str(warmup), "--step"] + list(extra_args)
        if precision == "fp16":
            cmd += ["--precision", "low"]
        if device_io:
            cmd += ["--device-io"]
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


def torch_runner(model, x_host, precision, variant, device_io):
    """One timed PyTorch run, in ms: `variant` is eager, compile or max-autotune; with device_io
    the input is on the GPU before the clock starts and the output stays there (the run ends
    with a synchronise), else the input starts in pageable host memory and the output is read
    back. Returns (run, compile seconds of the first call)."""
    import torch
    half = precision == "fp16"
    image = x_host.ndim == 4
    fmt = torch.channels_last if half and image else torch.contiguous_format
    model = model.cuda().eval()
    if half:
        model = model.half()
    if image:
        model = model.to(memory_format=fmt)
    fn = model
    if variant == "compile":
        fn = torch.compile(model)
    elif variant in ("reduce-overhead", "max-autotune"):
        fn = torch.compile(model, mode=variant)
    elif variant != "eager":
        raise SystemExit(f"unknown PyTorch variant {variant}: eager, compile, reduce-overhead or max-autotune")
    x_cpu = torch.from_numpy(x_host)
    dtype = torch.float16 if half else torch.float32

    def upload():
        x = x_cpu.cuda()
        x = x.to(dtype) if half else x
        return x.contiguous(memory_format=fmt) if image else x

    x_dev = upload()

    def run():
        with torch.no_grad():
            t0 = time.perf_counter()
            y = fn(x_dev if device_io else upload())
            if device_io:
                torch.cuda.synchronize()
            else:
                y.float().cpu()  # synchronises
            return (time.perf_counter() - t0) * 1000.0

    t0 = time.perf_counter()
    run()
    return run, time.perf_counter() - t0


def osprey_variant_args(variant, work_dir):
    """`osprey bench` arguments of an Osprey variant: `default`, `autotune` (cuBLASLt / cuDNN
    algorithms timed per shape, kept in WORK_DIR/cuda-tuning.cache for the next process),
    `stemS` (--fp32-stem S at fp16), or several joined by '+' (autotune+stem0.05)."""
    args = []
    for part in variant.split("+"):
        if part == "default":
            continue
        if part == "autotune":
            args += ["--cuda-autotune", "on", "--cuda-cache", os.path.join(work_dir, "cuda-tuning.cache")]
        elif part.startswith("stem") and part[4:].replace(".", "", 1).isdigit():
            args += ["--fp32-stem", part[4:]]
        else:
            raise SystemExit(f"unknown Osprey variant {part}: default, autotune or stemS")
    return args


def osprey_engine(variant):
    return "osprey" if variant == "default" else "osprey-" + variant


def time_case(osprey, onnx_path, input_path, model, x, precision, variants, device_io, warmup, loops,
              osprey_variants=("default",), work_dir="."):
    """{engine: median ms} for each Osprey and PyTorch variant, their timed runs alternating, and
    {engine: error or compile note}."""
    import torch
    runners, notes = {}, {}
    for v in variants:
        try:
            runners[v], compile_s = torch_runner(model, x, precision, v, device_io)
            if v != "eager":
                notes[v] = f"first call {compile_s:.1f} s"
        except Exception as e:  # a variant that cannot compile leaves the others
            notes[v] = f"failed: {str(e).splitlines()[0][:200]}"
            torch.cuda.empty_cache()
    for run in runners.values():
        for _ in range(warmup):
            run()
    workers = {}
    for v in osprey_variants:
        try:
            workers[osprey_engine(v)] = OspreyWorker(osprey, onnx_path, input_path, precision, warmup, device_io,
                                                     osprey_variant_args(v, work_dir))
        except RuntimeError as e:
            notes[osprey_engine(v)] = f"failed: {e}"
    times = {name: [] for name in list(workers) + list(runners)}
    try:
        for _ in range(loops):
            for name, worker in list(workers.items()):
                try:
                    times[name].append(worker.step())
                except RuntimeError as e:
                    notes[name] = f"failed: {e}"
                    times.pop(name, None)
                    workers.pop(name).finish()
            for name, run in runners.items():
                times[name].append(run())
    finally:
        for worker in workers.values():
            worker.finish()
    return {name: sorted(t)[len(t) // 2] for name, t in times.items() if t}, notes


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--osprey", default=os.path.join(root, "build", "osprey"))
    p.add_argument("--make-models", default=os.path.join(root, ".devdeps", "models", "make_models.py"))
    p.add_argument("--work-dir", default="/tmp/osprey-vs-torch")
    p.add_argument("--cases", default=DEFAULT_CASES)
    p.add_argument("--io", choices=["device", "host", "both"], default="both")
    p.add_argument("--torch", default="eager,compile,reduce-overhead",
                   help="PyTorch variants, comma-separated (max-autotune: minutes of tuning per model)")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--loops", type=int, default=50)
    p.add_argument("--osprey-variants", default="default",
                   help="Osprey variants, comma-separated: default, autotune (--cuda-autotune with a cache "
                        "file in --work-dir); the fastest is the one compared")
    p.add_argument("--json-out", help="also write the rows as JSON here")
    args = p.parse_args()

    os.makedirs(args.work_dir, exist_ok=True)
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(args.work_dir, "inductor-cache"))
    import torch
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to compare", file=sys.stderr)
        return 77
    # PyTorch's fp32 with TF32 tensor cores (its convolutions' default; matmuls opt in).
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    variants = [v for v in args.torch.split(",") if v]
    mm = load_make_models(args.make_models)
    print(f"GPU: {torch.cuda.get_device_name(0)}, torch {torch.__version__}; fp32 with TF32; "
          f"median of {args.loops} alternating runs after {args.warmup} warm-up runs")
    ios = ["device", "host"] if args.io == "both" else [args.io]
    osprey_variants = [v for v in args.osprey_variants.split(",") if v]
    for v in osprey_variants:
        osprey_variant_args(v, args.work_dir)  # an unknown one stops here, before any model is built
    ours = [osprey_engine(v) for v in osprey_variants]
    engines = ours + variants
    header = (f"{'model':22} {'bs':>3} {'prec':5} {'io':6}" + "".join(f" {e + ' ms':>16}" for e in engines) +
              f" {'vs compiled':>11} {'vs best':>8}")
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
        for io in ios:
            medians, notes = time_case(args.osprey, onnx_path, input_path, model, x, precision, variants,
                                       io == "device", args.warmup, args.loops, osprey_variants, args.work_dir)
            row = {"model": name, "batch": batch, "precision": precision, "io": io, "ms": medians, "notes": notes}
            line = f"{name:22} {batch:3d} {precision:5} {io:6}" + "".join(
                f" {medians[e]:16.3f}" if e in medians else f" {'-':>16}" for e in engines)
            compiled = [medians[v] for v in variants if v != "eager" and v in medians]
            theirs = [medians[v] for v in variants if v in medians]
            mine = [medians[e] for e in ours if e in medians]
            if mine and compiled:
                row["vs_compiled"] = min(mine) / min(compiled)
                line += f" {row['vs_compiled']:10.2f}x"
            else:
                line += f" {'-':>11}"
            if mine and theirs:
                row["vs_best"] = min(mine) / min(theirs)
                line += f" {row['vs_best']:7.2f}x"
            print(line + ("   " + "; ".join(f"{k}: {v}" for k, v in notes.items()) if notes else ""), flush=True)
            rows.append(row)
        del model
        torch.cuda.empty_cache()
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
