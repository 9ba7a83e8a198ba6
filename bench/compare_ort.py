#!/usr/bin/env python3
"""Osprey vs ONNX Runtime on the same .onnx models, the same input and the same thread count.

Each engine runs in its own worker process (so each one's peak RSS is its own): Osprey as
`osprey bench --step`, ONNX Runtime as this script with --ort-worker. After their warm-up runs
the two are driven in lockstep, one timed run of each per iteration, so a change of machine
load hits both alike. Prints: model, medians, the ratio Osprey/ORT and each peak RSS.

  bench/compare_ort.py [--models-dir /tmp/models] [--threads 2] [--warmup 5] [--loops 60]
                       [--gap-ms 200] [--osprey BIN] [--ort-python PY] [MODEL ...]
"""
import argparse
import json
import os
import resource
import sys
import time

from lockstep import Worker

DEFAULT_MODELS = ["mobilenet_v2", "resnet18", "resnet50", "squeezenet1_1", "shufflenet_v2_x1_0",
                  "efficientnet_b0", "bert_base_l12_seq128", "vit_tiny_p16_224"]


def ort_worker(model, input_path, threads, warmup):
    """Speaks the same protocol as `osprey bench --step`: one timed run per stdin line."""
    import numpy as np
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    feeds = {sess.get_inputs()[0].name: np.load(input_path)}
    for _ in range(max(warmup, 1)):
        sess.run(None, feeds)
    print("ready", flush=True)
    times = []
    for _ in sys.stdin:
        t0 = time.perf_counter()
        sess.run(None, feeds)
        ms = (time.perf_counter() - t0) * 1000.0
        times.append(ms)
        print(f"{ms:.4f}", flush=True)
    times.sort()
    print(json.dumps({"min_ms": times[0], "median_ms": times[len(times) // 2], "max_ms": times[-1],
                      "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}), flush=True)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="*", default=DEFAULT_MODELS)
    p.add_argument("--models-dir", default="/tmp/models")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=5)
    # On a noisy VM the median of 30 runs moved a ratio by 5% between two runs of the script;
    # 60 runs narrow that by about 1/sqrt(2) (about 4 minutes for the eight models).
    p.add_argument("--loops", type=int, default=60)
    p.add_argument("--gap-ms", type=float, default=200.0, help="idle pause before each timed run (ORT's workers spin for tens of ms after a run)")
    p.add_argument("--osprey", default=os.environ.get("OSPREY_BIN", os.path.join(here, "..", "build", "osprey")))
    p.add_argument("--ort-python", default=sys.executable, help="a python with onnxruntime and numpy")
    p.add_argument("--json", help="also write the rows to this file")
    p.add_argument("--ort-worker", nargs=2, metavar=("MODEL", "INPUT"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.ort_worker:
        return ort_worker(a.ort_worker[0], a.ort_worker[1], a.threads, a.warmup)

    try:
        load = os.getloadavg()
        print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} cpus, "
              f"{a.threads} thread(s), warm-up {a.warmup}, {a.loops} alternating loops")
    except OSError:
        pass
    rows = []
    header = f"{'model':<22} {'osprey ms':>10} {'ort ms':>10} {'ratio':>7} {'osprey RSS MB':>14} {'ort RSS MB':>11}"
    print(header)
    print("-" * len(header))
    for name in a.models:
        model = os.path.join(a.models_dir, name + ".onnx")
        inp = os.path.join(a.models_dir, name + ".input.npy")
        try:
            osp = Worker([a.osprey, "bench", model, "--input", inp, "--threads", str(a.threads), "--warmup",
                          str(a.warmup), "--loops", str(a.loops), "--step", "--json"])
            ort = Worker([a.ort_python, os.path.abspath(__file__), "--ort-worker", model, inp, "--threads",
                          str(a.threads), "--warmup", str(a.warmup)])
            # Alternate, the first engine swapped each iteration. The pause lets the other
            # engine's pool go idle first: ORT's workers spin after a run, which on a machine
            # with few cores would otherwise eat into whichever engine runs next.
            for i in range(a.loops):
                for engine in ((ort, osp) if i % 2 else (osp, ort)):
                    time.sleep(a.gap_ms / 1000.0)
                    engine.step()
            so, sr = osp.finish(), ort.finish()
        except (RuntimeError, OSError, ValueError) as e:
            print(f"{name:<22} error: {e}".splitlines()[0])
            continue
        row = {"model": name, "osprey_median_ms": so["median_ms"], "ort_median_ms": sr["median_ms"],
               "ratio": so["median_ms"] / sr["median_ms"], "osprey_peak_rss_bytes": so["peak_rss_bytes"],
               "ort_peak_rss_bytes": sr["peak_rss_bytes"], "osprey_min_ms": so["min_ms"], "ort_min_ms": sr["min_ms"]}
        rows.append(row)
        print(f"{name:<22} {row['osprey_median_ms']:>10.2f} {row['ort_median_ms']:>10.2f} {row['ratio']:>7.2f} "
              f"{row['osprey_peak_rss_bytes'] / 2**20:>14.1f} {row['ort_peak_rss_bytes'] / 2**20:>11.1f}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    print("ORT's RSS includes its Python interpreter and numpy (about 30-40 MB).")


if __name__ == "__main__":
    sys.exit(main())
