#!/usr/bin/env python3
"""Osprey vs ncnn (the PyPI `ncnn` wheel, built with Vulkan) on the make_models.py models, batch
1, the same input: Osprey on --backend (vulkan by default) against ncnn's Vulkan compute in fp32
storage and in its default fp16 storage and arithmetic (--backend cpu: both on the CPU, ncnn
in fp32, --threads each).

ncnn models come from the ONNX files through pnnx (`pip install pnnx`; its `pnnx` program must be
on PATH or given with --pnnx), converted once into --ncnn-dir. Each engine runs in its own worker
process, driven in lockstep with the others (bench/lockstep.py), the first engine rotating each
iteration. Timings are host to host for both: inputs uploaded, outputs read back. Prints
medians, ncnn's largest difference from the PyTorch reference, and Osprey's time over each.

On a GPU machine --columns adds Osprey's other GPU backends and precisions to the same
lockstep run (e.g. vulkan:normal,vulkan:low,cuda:normal,cuda:low,opencl:normal; --osprey-for
cuda=BIN where a backend is in another build), and --batch N times N images per step: Osprey
as one batch of N (random inputs, `osprey bench --batch`), ncnn as N extractions (it takes one
image at a time). Ratios are each Osprey column over ncnn fp32, and `low` columns over ncnn fp16.

  bench/compare_ncnn.py --models-dir DIR [--ncnn-dir DIR] [--backend vulkan|cpu] [--threads 2]
                        [--warmup 5] [--loops 40] [--osprey BIN] [--ncnn-python PY] [--batch N]
                        [--columns BACKEND:PRECISION,...] [--osprey-for BACKEND=BIN] [MODEL ...]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

from lockstep import Worker

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MODELS = ["mobilenet_v2", "resnet50", "vit_tiny_p16_224"]


def ncnn_worker(param, weights, input_path, ref_path, gpu, fp16, threads, warmup, batch=1):
    """Speaks the protocol of `osprey bench --step`; the first line after "ready" is its error."""
    import ncnn
    import numpy as np
    net = ncnn.Net()
    net.opt.use_vulkan_compute = gpu
    net.opt.num_threads = threads
    if not fp16:
        net.opt.use_fp16_packed = net.opt.use_fp16_storage = net.opt.use_fp16_arithmetic = False
    net.load_param(param)
    net.load_model(weights)
    x = np.ascontiguousarray(np.load(input_path)[0], dtype=np.float32)
    ref = np.load(ref_path)

    def image():
        with net.create_extractor() as ex:
            ex.input("in0", ncnn.Mat(x).clone())
            _, out = ex.extract("out0")
            return np.array(out)

    def once():
        for _ in range(batch - 1):
            image()
        return image()

    error = float(np.abs(once().reshape(ref.shape[1:]) - ref[0]).max())  # the first image's output
    for _ in range(max(warmup, 1)):
        once()
    print("ready", flush=True)
    print(f"{error:.3g}", flush=True)
    times = []
    for _ in sys.stdin:
        t0 = time.perf_counter()
        once()
        ms = (time.perf_counter() - t0) * 1000.0
        times.append(ms)
        print(f"{ms:.4f}", flush=True)
    times.sort()
    print(json.dumps({"min_ms": times[0], "median_ms": times[len(times) // 2], "max_ms": times[-1]}), flush=True)


def ncnn_files(onnx_path, ncnn_dir, pnnx, shape):
    """The .param/.bin of the model, converted by pnnx the first time."""
    name = os.path.splitext(os.path.basename(onnx_path))[0]
    param, weights = (os.path.join(ncnn_dir, f"{name}.ncnn.{ext}") for ext in ("param", "bin"))
    if not (os.path.exists(param) and os.path.exists(weights)):
        os.makedirs(ncnn_dir, exist_ok=True)
        local = os.path.join(ncnn_dir, os.path.basename(onnx_path))
        shutil.copyfile(onnx_path, local)
        dims = ",".join(str(d) for d in shape)
        r = subprocess.run([pnnx, os.path.basename(local), f"inputshape=[{dims}]"], cwd=ncnn_dir, capture_output=True,
                           text=True)
        if r.returncode != 0:
            raise RuntimeError(f"pnnx failed on {local}: {(r.stdout + r.stderr)[-300:]}")
    return param, weights


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="*", default=DEFAULT_MODELS)
    p.add_argument("--models-dir", help="make_models.py's output (.onnx, .input.npy, .ref.npy)")
    p.add_argument("--ncnn-dir", default="/tmp/ncnn_models")
    p.add_argument("--backend", default="vulkan", choices=["vulkan", "cpu"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--loops", type=int, default=40)
    p.add_argument("--osprey", default=os.path.join(HERE, "..", "build", "osprey"))
    p.add_argument("--ncnn-python", default=sys.executable, help="a python with ncnn and numpy")
    p.add_argument("--pnnx", default="pnnx")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--columns", help="Osprey columns BACKEND:PRECISION,... (default: --backend at normal precision)")
    p.add_argument("--osprey-for", action="append", default=[], metavar="BACKEND=BIN")
    p.add_argument("--ncnn-worker", nargs=5, metavar=("PARAM", "BIN", "INPUT", "REF", "FP16"), help=argparse.SUPPRESS)
    a = p.parse_args()
    gpu = a.backend != "cpu"
    if a.ncnn_worker:
        param, weights, inp, ref, fp16 = a.ncnn_worker
        return ncnn_worker(param, weights, inp, ref, gpu, fp16 == "1", a.threads, a.warmup, a.batch)
    columns = [tuple(c.split(":")) for c in (a.columns or a.backend + ":normal").split(",")]
    binaries = dict(item.split("=", 1) for item in a.osprey_for)
    if not a.models_dir:
        p.error("--models-dir is required")

    import numpy as np
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} cpus, backend {a.backend}, "
          f"{a.threads} thread(s), warm-up {a.warmup}, {a.loops} alternating loops")
    modes = [("ncnn fp32", "0")] + ([("ncnn fp16", "1")] if gpu else [])
    names = [f"{b} {prec}" for b, prec in columns]
    header = f"{'model':<18} {'batch':>5}" + "".join(f" {n:>14}" for n in names + [m for m, _ in modes])
    header += "".join(f" {n + ' ratio':>18}" for n in names)
    print(header)
    print("-" * len(header))
    for name in a.models:
        base = os.path.join(a.models_dir, name)
        try:
            param, weights = ncnn_files(base + ".onnx", a.ncnn_dir, a.pnnx, np.load(base + ".input.npy").shape)
            inputs = ["--input", base + ".input.npy"] if a.batch == 1 else ["--batch", str(a.batch)]
            workers = [Worker([binaries.get(b, a.osprey), "bench", base + ".onnx", *inputs, "--backend", b, "--precision",
                               prec, "--threads", str(a.threads), "--warmup", str(a.warmup), "--loops", str(a.loops),
                               "--step", "--json"]) for b, prec in columns]
            errors = []
            for _, fp16 in modes:
                w = Worker([a.ncnn_python, os.path.abspath(__file__), "--ncnn-worker", param, weights,
                            base + ".input.npy", base + ".ref.npy", fp16, "--backend", a.backend, "--threads",
                            str(a.threads), "--warmup", str(a.warmup), "--batch", str(a.batch)])
                errors.append(w.proc.stdout.readline().strip())
                workers.append(w)
            for i in range(a.loops):
                for k in range(len(workers)):
                    workers[(i + k) % len(workers)].step()
            medians = [w.finish()["median_ms"] for w in workers]
        except (RuntimeError, OSError, ValueError, KeyError, subprocess.CalledProcessError) as e:
            print(f"{name:<18} error: {e}".splitlines()[0])
            continue
        ncnn = dict(zip([m for m, _ in modes], medians[len(columns):]))
        row = f"{name:<18} {a.batch:>5}" + "".join(f" {m:>14.3f}" for m in medians)
        for (b, prec), m in zip(columns, medians):
            against = ncnn.get("ncnn fp16" if prec == "low" else "ncnn fp32", ncnn["ncnn fp32"])
            row += f" {m / against:>18.2f}"
        print(row + "   ncnn |diff| " + " ".join(errors), flush=True)


if __name__ == "__main__":
    sys.exit(main())
