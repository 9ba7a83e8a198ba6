#!/usr/bin/env python3
"""Osprey vs LiteRT (its default XNNPACK delegate) on the .tflite models of the Keras test
generator (python/tests/tflite_keras_models.py), float32 and full-integer int8, the same input
and the same thread count.

Each engine runs in its own worker process: Osprey as `osprey bench --step`, LiteRT as this
script with --litert-worker. After their warm-up runs the two are driven in lockstep, one timed
run of each per iteration, the first engine swapped each time, so a change of machine load hits
both alike. Prints: model, variant, medians and the ratio Osprey/LiteRT.

Models missing from --models-dir are converted first (needs tensorflow, as the tests do).

  bench/compare_tflite.py [--models-dir /tmp/tflite_models] [--threads 2] [--warmup 5] [--loops 40]
                          [--osprey BIN] [--litert-python PY] [MODEL.VARIANT ...]
"""
import argparse
import json
import os
import sys
import time

from lockstep import Worker, alternate
from lockstep import summary as lockstep_summary

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MODELS = ["%s.%s" % (m, v) for m in ("mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "resnet50",
                                             "transformer", "lstm_text", "segmentation")
                  for v in ("float32", "int8")]


def litert_worker(model, input_path, threads, warmup):
    """Speaks the protocol of `osprey bench --step`: one timed run per stdin line."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter
    interp = Interpreter(model_path=model, num_threads=threads)
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], np.load(input_path))
    for _ in range(max(warmup, 1)):
        interp.invoke()
    print("ready", flush=True)
    times = []
    for _ in sys.stdin:
        t0 = time.perf_counter()
        interp.invoke()
        ms = (time.perf_counter() - t0) * 1000.0
        times.append(ms)
        print(f"{ms:.4f}", flush=True)
    times.sort()
    print(json.dumps({"min_ms": times[0], "median_ms": times[len(times) // 2], "max_ms": times[-1]}), flush=True)


def prepare(models_dir, name, variant):
    """The model's path and an input .npy for it (made once)."""
    model = os.path.join(models_dir, f"{name}.{variant}.tflite")
    inp = os.path.join(models_dir, f"{name}.{variant}.input.npy")
    if os.path.exists(model) and os.path.exists(inp):
        return model, inp
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter
    if not os.path.exists(model):
        sys.path.insert(0, os.path.join(HERE, "..", "python", "tests"))
        import tflite_keras_models as km
        km.ModelCache(models_dir).path(name, variant)
    detail = Interpreter(model_path=model).get_input_details()[0]
    rng = np.random.default_rng(0)
    if detail["dtype"] == np.int32:
        value = rng.integers(0, 100, detail["shape"])
    else:
        value = rng.standard_normal(detail["shape"])
    if detail["dtype"] == np.int8:
        scale, zero = detail["quantization"]
        value = np.clip(np.round(value / scale) + zero, -128, 127)
    np.save(inp, value.astype(detail["dtype"]))
    return model, inp


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="*", default=DEFAULT_MODELS)
    p.add_argument("--models-dir", default="/tmp/tflite_models")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--loops", type=int, default=40)
    p.add_argument("--gap-ms", type=float, default=50.0, help="idle pause before each timed run")
    p.add_argument("--block", type=int, default=3,
                   help="runs of one engine in a row per turn, the first not counted (lockstep.alternate)")
    p.add_argument("--osprey", default=os.path.join(HERE, "..", "build", "osprey"))
    p.add_argument("--litert-python", default=sys.executable, help="a python with ai-edge-litert and numpy")
    p.add_argument("--json", help="also write the rows to this file")
    p.add_argument("--litert-worker", nargs=2, metavar=("MODEL", "INPUT"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.litert_worker:
        return litert_worker(a.litert_worker[0], a.litert_worker[1], a.threads, a.warmup)

    os.makedirs(a.models_dir, exist_ok=True)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} cpus, "
          f"{a.threads} thread(s), warm-up {a.warmup}, {a.loops} alternating loops")
    rows = []
    header = f"{'model':<20} {'variant':<8} {'osprey ms':>10} {'litert ms':>10} {'ratio':>7}"
    print(header)
    print("-" * len(header))
    for spec in a.models:
        name, variant = spec.rsplit(".", 1)
        try:
            model, inp = prepare(a.models_dir, name, variant)
            osp = Worker([a.osprey, "bench", model, "--input", inp, "--threads", str(a.threads), "--warmup",
                          str(a.warmup), "--loops", str(a.loops), "--step", "--json"])
            lit = Worker([a.litert_python, os.path.abspath(__file__), "--litert-worker", model, inp, "--threads",
                          str(a.threads), "--warmup", str(a.warmup)])
            times = alternate({"osprey": osp, "litert": lit}, a.loops, a.gap_ms, a.block)
            osp.finish(), lit.finish()
            so, sl = lockstep_summary(times["osprey"]), lockstep_summary(times["litert"])
        except (RuntimeError, OSError, ValueError) as e:
            print(f"{name:<20} {variant:<8} error: {e}".splitlines()[0])
            continue
        row = {"model": name, "variant": variant, "osprey_median_ms": so["median_ms"],
               "litert_median_ms": sl["median_ms"], "ratio": so["median_ms"] / sl["median_ms"]}
        rows.append(row)
        print(f"{name:<20} {variant:<8} {row['osprey_median_ms']:>10.2f} {row['litert_median_ms']:>10.2f} "
              f"{row['ratio']:>7.2f}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
