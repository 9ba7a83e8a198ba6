#!/usr/bin/env python3
"""Resident memory under churn: 2,000 runs of a dynamic-shape model cycling through three input
shape sets (each run re-plans), then 500 sessions created, run and destroyed. Prints RSS at
checkpoints and exits 1 if it grows after the warm-up by more than --max-growth-mib.

    python3 bench/churn_rss.py --churn build/osprey_churn [--runs 2000] [--sessions 500]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SHAPE_SETS = [
    "x=1,3,32,32;t=1,16,32",
    "x=2,3,48,40;t=2,40,32",
    "x=1,3,64,64;t=1,7,32",
]


def dynamic_model(path):
    """A CNN branch on x [N, 3, H, W] and an attention-like branch on t [N, S, 32]."""
    rng = np.random.default_rng(0)
    weights = {
        "w1": rng.standard_normal((16, 3, 3, 3)).astype(np.float32) * 0.2,
        "w2": rng.standard_normal((32, 16, 3, 3)).astype(np.float32) * 0.1,
        "fc": rng.standard_normal((32, 10)).astype(np.float32) * 0.1,
        "wq": rng.standard_normal((32, 32)).astype(np.float32) * 0.1,
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("MatMul", ["f", "fc"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["t", "wq"], ["q"]),
        helper.make_node("Transpose", ["t"], ["tt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "tt"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["attn"], axis=-1),
        helper.make_node("MatMul", ["attn", "t"], ["mixed"]),
    ]
    graph = helper.make_graph(
        nodes, "churn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"]),
         helper.make_tensor_value_info("t", TensorProto.FLOAT, ["N", "S", 32])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10]),
         helper.make_tensor_value_info("mixed", TensorProto.FLOAT, ["N", "S", 32])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--churn", default=os.environ.get("OSPREY_CHURN", "build/osprey_churn"))
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--sessions", type=int, default=500)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-growth-mib", type=float, default=1.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "churn.onnx")
        dynamic_model(model)
        cmd = [args.churn, model, "--runs", str(args.runs), "--sessions", str(args.sessions),
               "--threads", str(args.threads)]
        for s in SHAPE_SETS:
            cmd += ["--shapes", s]
        proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stdout + proc.stderr)
        return 1
    points = {}
    for line in proc.stdout.splitlines():
        _, phase, count, kib = line.split()
        points.setdefault(phase, []).append((int(count), int(kib) / 1024.0))
    print("%-9s %7s %9s" % ("phase", "count", "RSS MiB"))
    for phase, rows in points.items():
        for count, mib in rows:
            if phase == "start" or count in (100, 200, 500, 1000) or count % 1000 == 0 or (count, mib) == rows[-1] \
                    or (phase == "sessions" and count % 100 == 0):
                print("%-9s %7d %9.1f" % (phase, count, mib))
    failed = False
    # Warm-up: the first 200 runs (every shape set planned and seen several times) and the first
    # 50 sessions (the allocator's pools settled); growth after it is what a server would leak.
    # Growth is the median of the last four samples against the first four after the warm-up: a
    # session's worker threads come and go with their stacks and malloc arenas, so one sample
    # swings by up to a MiB (500 sessions: 8.0, 8.5, 8.2, 8.2, 8.5 MiB) while a leak keeps rising.
    for phase, warm in (("runs", 200), ("sessions", 50)):
        rows = points.get(phase, [])
        after = [mib for count, mib in rows if count >= warm]
        if not any(count == warm for count, _ in rows):
            continue
        window = min(4, max(1, len(after) // 2))
        growth = statistics.median(after[-window:]) - statistics.median(after[:window])
        base = [after[0]]
        peak = max(mib for count, mib in rows if count >= warm)
        flat = growth <= args.max_growth_mib
        failed |= not flat
        print("%s: %.1f MiB after %d, %.1f MiB after %d (peak %.1f): growth %+.2f MiB, %s" % (
            phase, base[0], warm, rows[-1][1], rows[-1][0], peak, growth,
            "flat" if flat else "NOT flat (limit %.1f MiB)" % args.max_growth_mib))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
