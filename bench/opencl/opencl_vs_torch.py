#!/usr/bin/env python3
"""Latency of Osprey's OpenCL backend next to PyTorch eager fp32 on the same machine.

For every case MODEL:BATCH the torchvision model (random weights, seed 0) is exported as a
static-shape ONNX file at that batch and timed
  - Osprey:  `osprey bench MODEL.onnx --backend opencl --json` (host input to host output),
  - PyTorch: eager fp32 on CUDA when available (else the CPU), input copied to the device and
             the output back every run, as Osprey's run does.
Prints the median latency of both and the ratio.

  bench/opencl/opencl_vs_torch.py --osprey BUILD/osprey [--work-dir DIR] [--warmup 5] [--loops 20]
      [--cases resnet50:1,resnet50:32,mobilenet_v2:1,mobilenet_v2:32] [--precision normal|low]
"""
import argparse
import json
import os
import subprocess
import sys
import time


def export(name, batch, path):
    import torch
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    x = torch.randn(batch, 3, 224, 224)
    kwargs = dict(opset_version=13, input_names=["input"], output_names=["output"], do_constant_folding=True)
    try:
        torch.onnx.export(model, (x,), path, dynamo=False, **kwargs)
    except TypeError:  # older torch without the dynamo switch
        torch.onnx.export(model, (x,), path, **kwargs)
    if os.path.exists(path + ".data"):  # weights inline: the converter reads one file
        import onnx
        onnx.save_model(onnx.load(path), path, save_as_external_data=False)
        os.remove(path + ".data")
    return model


def torch_latency(model, batch, warmup, loops):
    import torch
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = model.to(device)
    x = torch.randn(batch, 3, 224, 224)
    times = []
    with torch.no_grad():
        for i in range(warmup + loops):
            if device == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            y = model(x.to(device)).cpu()
            if device == "cuda":
                torch.cuda.synchronize()
            if i >= warmup:
                times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2], device


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--osprey", required=True)
    ap.add_argument("--work-dir", default="/tmp/osprey-opencl-vs-torch")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--loops", type=int, default=20)
    ap.add_argument("--precision", default="normal")
    ap.add_argument("--cases", default="resnet50:1,resnet50:32,mobilenet_v2:1,mobilenet_v2:32")
    args = ap.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    rows, failed = [], 0
    for case in args.cases.split(","):
        name, batch = case.split(":")
        batch = int(batch)
        path = os.path.join(args.work_dir, "%s_b%d.onnx" % (name, batch))
        model = export(name, batch, path)
        cmd = [args.osprey, "bench", path, "--backend", "opencl", "--json", "--warmup", str(args.warmup),
               "--loops", str(args.loops), "--precision", args.precision]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            print("osprey bench failed for %s: %s" % (case, run.stderr.strip()), flush=True)
            failed += 1
            continue
        line = [l for l in run.stdout.splitlines() if l.startswith("{")][-1]
        osprey_ms = json.loads(line)["median_ms"]
        torch_ms, device = torch_latency(model, batch, args.warmup, args.loops)
        rows.append((name, batch, osprey_ms, torch_ms, device))
        print("%-14s batch %-3d osprey opencl %9.2f ms   pytorch eager fp32 (%s) %9.2f ms   ratio %.2fx" %
              (name, batch, osprey_ms, device, torch_ms, osprey_ms / torch_ms), flush=True)
    print("\n%-14s %6s %16s %22s %8s" % ("model", "batch", "osprey opencl ms", "pytorch eager fp32 ms", "ratio"))
    for name, batch, o, t, device in rows:
        print("%-14s %6d %16.2f %17.2f (%s) %7.2fx" % (name, batch, o, t, device, o / t))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
