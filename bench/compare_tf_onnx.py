#!/usr/bin/env python3
"""Osprey on a TensorFlow-imported model against Osprey on the same network converted to ONNX by
tf2onnx: the TensorFlow frontend must add no runtime cost (issue #39: within 1.05x).

The frozen graphs come from python/tests/tf_graph_models.py (TensorFlow itself builds them);
tf2onnx converts each GraphDef (opset 17). Both files run as `osprey bench --step` workers on the
same input, driven in lockstep (bench/lockstep.py), the first engine swapped each iteration.
Prints medians and the ratio TensorFlow-imported / ONNX-imported.

  bench/compare_tf_onnx.py [--models-dir /tmp/tf_vs_onnx] [--threads 2] [--warmup 5] [--loops 40]
                           [--osprey BIN] [MODEL ...]      (needs tensorflow and tf2onnx)
"""
import argparse
import os
import sys

import numpy as np

from lockstep import Worker

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python", "tests"))
# bert_encoder is left out: tf2onnx 1.17 cannot convert its Keras GELU (Erfc).
DEFAULT_MODELS = ["mobilenet_v2", "resnet50", "efficientnet_b0"]


def prepare(name, out_dir):
    """<name>.pb (TensorFlow), <name>.onnx (tf2onnx), <name>.input.npy; returns their paths."""
    pb, onnx_path, npy = (os.path.join(out_dir, name + ext) for ext in (".pb", ".onnx", ".input.npy"))
    if os.path.exists(pb) and os.path.exists(onnx_path) and os.path.exists(npy):
        return pb, onnx_path, npy
    import tensorflow as tf
    import tf2onnx
    import tf_graph_models
    _, inputs, _ = tf_graph_models.make(name, out_dir)
    if len(inputs) != 1:
        raise RuntimeError(f"{name}: one input expected, the graph has {len(inputs)}")
    np.save(npy, inputs[0])
    graph_def = tf.compat.v1.GraphDef()
    with open(pb, "rb") as f:
        graph_def.ParseFromString(f.read())
    consumed = {i.split(":")[0].lstrip("^") for node in graph_def.node for i in node.input}
    placeholders = [n.name + ":0" for n in graph_def.node if n.op == "Placeholder"]
    outputs = [n.name + ":0" for n in graph_def.node if n.name not in consumed and n.op not in ("Placeholder", "NoOp")]
    tf2onnx.convert.from_graph_def(graph_def, input_names=placeholders, output_names=outputs, opset=17,
                                   output_path=onnx_path)
    return pb, onnx_path, npy


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="*", default=DEFAULT_MODELS)
    p.add_argument("--models-dir", default="/tmp/tf_vs_onnx")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--loops", type=int, default=40)
    p.add_argument("--osprey", default=os.path.join(HERE, "..", "build", "osprey"))
    a = p.parse_args()
    os.makedirs(a.models_dir, exist_ok=True)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} cpus, {a.threads} thread(s), "
          f"warm-up {a.warmup}, {a.loops} alternating loops")
    print(f"{'model':<18} {'from .pb ms':>12} {'from .onnx ms':>14} {'ratio':>6}")
    for name in a.models:
        try:
            pb, onnx_path, npy = prepare(name, a.models_dir)
            workers = [Worker([a.osprey, "bench", path, "--input", npy, "--threads", str(a.threads), "--warmup",
                               str(a.warmup), "--loops", str(a.loops), "--step", "--json"]) for path in (pb, onnx_path)]
            for i in range(a.loops):
                for k in range(2):
                    workers[(i + k) % 2].step()
            tf_ms, onnx_ms = (w.finish()["median_ms"] for w in workers)
        except Exception as e:  # one model's failure is a row, not the end of the table
            print(f"{name:<18} error: {str(e).splitlines()[0][:200]}")
            continue
        print(f"{name:<18} {tf_ms:>12.3f} {onnx_ms:>14.3f} {tf_ms / onnx_ms:>6.3f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
