#!/usr/bin/env python3
"""How far 8-bit quantization can keep a float CNN's output, whatever the quantizer: ONNX Runtime
runs the float model with each error source alone, and prints the output's cosine to the float
output (the `osprey quantize` goal is 0.99 on the benchmark input).

- input noise: Gaussian noise of 0.1%, 0.3% and 1% of the input's standard deviation (an 8-bit
  code of the input image is about 1%): how much this model amplifies a small error;
- weights: every Conv / Gemm weight rounded to int8, symmetric per output channel (what
  `osprey quantize --per-channel` and ONNX Runtime's per-channel QDQ store);
- activations: a QuantizeLinear / DequantizeLinear pair (uint8, min-max range over the
  calibration inputs, widened to hold 0) after the input and every Conv, Clip, Relu, Add and
  GlobalAveragePool, where the integer graph holds bytes; also with the first N of those tensors
  left in float.

  bench/int8_sensitivity.py --models-dir build/int8-bench/models [--model mobilenet_v2] [--keep-float 0,7,17]

Needs onnx, numpy and onnxruntime; reads NAME.onnx, NAME.input.npy and NAME.calib/*.npy as
bench/int8_bench.py caches them.
"""
import argparse
import glob
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ACTIVATION_OPS = ("Conv", "Clip", "Relu", "Add", "GlobalAveragePool")


def session(model):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def run(model, x):
    s = session(model)
    return s.run(None, {s.get_inputs()[0].name: x})[0].ravel().astype(np.float64)


def cosine(a, b):
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def activation_points(model):
    """The input, then each output the integer graph would hold as bytes, in graph order (a Conv
    read only by a Clip / Relu is fused with it: only the activation's output counts)."""
    readers = {}
    for n in model.graph.node:
        for i in n.input:
            readers.setdefault(i, []).append(n.op_type)
    points = [model.graph.input[0].name]
    for n in model.graph.node:
        if n.op_type not in ACTIVATION_OPS:
            continue
        if n.op_type == "Conv" and readers.get(n.output[0]) in (["Clip"], ["Relu"]):
            continue
        points.append(n.output[0])
    return points


def ranges(model, points, calibration):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    del m.graph.output[:]
    for p in points:
        m.graph.output.append(helper.make_tensor_value_info(p, TensorProto.FLOAT, None))
    s = session(m)
    lo, hi = {p: 0.0 for p in points}, {p: 0.0 for p in points}  # widened to hold 0
    for c in calibration:
        for p, v in zip(points, s.run(None, {s.get_inputs()[0].name: c})):
            lo[p], hi[p] = min(lo[p], float(v.min())), max(hi[p], float(v.max()))
    return lo, hi


def with_weights_rounded(model):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    names = {n.input[1] for n in m.graph.node if n.op_type in ("Conv", "Gemm")}
    for init in m.graph.initializer:
        if init.name in names:
            w = numpy_helper.to_array(init).astype(np.float32)
            scale = np.abs(w).max(axis=tuple(range(1, w.ndim)), keepdims=True) / 127.0
            scale[scale == 0] = 1.0
            init.CopyFrom(numpy_helper.from_array((np.clip(np.round(w / scale), -127, 127) * scale).astype(np.float32),
                                                  init.name))
    return m


def with_activations_rounded(model, points, lo, hi):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    chosen = set(points)
    for p in points:
        scale = (hi[p] - lo[p]) / 255.0 or 1.0
        zero = int(np.clip(np.round(-lo[p] / scale), 0, 255))
        m.graph.initializer.extend([numpy_helper.from_array(np.array(scale, np.float32), p + "_qs"),
                                    numpy_helper.from_array(np.array(zero, np.uint8), p + "_qz")])
    nodes = list(m.graph.node)
    del m.graph.node[:]

    def pair(p):
        return [helper.make_node("QuantizeLinear", [p, p + "_qs", p + "_qz"], [p + "_q"]),
                helper.make_node("DequantizeLinear", [p + "_q", p + "_qs", p + "_qz"], [p + "_dq"])]

    if m.graph.input[0].name in chosen:
        m.graph.node.extend(pair(m.graph.input[0].name))
    for n in nodes:
        for k, i in enumerate(n.input):
            if i in chosen:
                n.input[k] = i + "_dq"
        m.graph.node.append(n)
        if n.output[0] in chosen:
            m.graph.node.extend(pair(n.output[0]))
    return m


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models-dir", default=os.path.join("build", "int8-bench", "models"))
    p.add_argument("--model", default="mobilenet_v2")
    p.add_argument("--keep-float", default="0,4,7,17", help="counts of leading activation tensors left in float")
    args = p.parse_args()
    base = os.path.join(args.models_dir, args.model)
    model = onnx.load(base + ".onnx")
    x = np.load(base + ".input.npy")
    calibration = [np.load(f) for f in sorted(glob.glob(os.path.join(base + ".calib", "*.npy")))]
    if not calibration:
        raise SystemExit(f"no calibration inputs in {base}.calib (bench/int8_bench.py writes them)")
    ref = run(model, x)
    print(f"{args.model}: output cosine to the float model on {base}.input.npy")
    s = session(model)
    rng = np.random.default_rng(0)
    for share in (0.001, 0.003, 0.01):
        noisy = (x + share * x.std() * rng.standard_normal(x.shape)).astype(np.float32)
        out = s.run(None, {s.get_inputs()[0].name: noisy})[0].ravel().astype(np.float64)
        print(f"  input noise {share * 100:.1f}% of its std:              {cosine(out, ref):.5f}")
    print(f"  weights int8 per channel, activations float:  {cosine(run(with_weights_rounded(model), x), ref):.5f}")
    points = activation_points(model)
    lo, hi = ranges(model, points, calibration)
    for keep in (int(k) for k in args.keep_float.split(",") if k):
        m = with_activations_rounded(model, points[keep:], lo, hi)
        print(f"  activations uint8 ({len(points) - keep:3d} of {len(points)} tensors), weights float: "
              f"{cosine(run(m, x), ref):.5f}")
    both = with_activations_rounded(with_weights_rounded(model), points, lo, hi)
    print(f"  both (what a per-channel min-max quantizer does): {cosine(run(both, x), ref):.5f}")


if __name__ == "__main__":
    main()
