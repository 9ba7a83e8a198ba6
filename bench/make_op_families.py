#!/usr/bin/env python3
"""One small ONNX model per op family that real models spend their time in, for
`bench/compare_peers.py --models-dir DIR --engines osprey,ort` (Osprey vs ONNX Runtime,
alternating; add openvino,mnn,ncnn for the other peers).

Shapes come from the models that showed each family: OCR detectors and segmentation heads
(Resize), MobileNetV3 / PP-OCR (HardSwish, HardSigmoid after Conv), CRNN (bidirectional LSTM,
k x 1 convolutions on W = 1), speech and text (GRU, 1-D convolutions), RegNetX (grouped 3x3
convolutions of group width 8 and 16), BatchNormalization after a Gemm, and fp16 models.

  bench/make_op_families.py OUT_DIR [--list]
Writes OUT_DIR/NAME.onnx and OUT_DIR/NAME.input.npy for every family and prints the names.
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(7)


def weights(name, shape, dtype=np.float32, scale=None):
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
    s = scale if scale is not None else 1.0 / np.sqrt(max(fan_in, 1))
    return numpy_helper.from_array((RNG.standard_normal(shape) * s).astype(dtype), name)


def model(nodes, x_shape, y_name, inits, elem=TensorProto.FLOAT, opset=17):
    x = helper.make_tensor_value_info("x", elem, x_shape)
    y = helper.make_tensor_value_info(y_name, elem, None)
    g = helper.make_graph(nodes, "family", [x], [y], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(onnx.shape_inference.infer_shapes(m))
    return m


def resize(mode, coord, shape=(1, 96, 40, 60)):
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    attrs = {"mode": mode, "coordinate_transformation_mode": coord}
    if mode == "nearest":
        attrs["nearest_mode"] = "floor"
    return model([helper.make_node("Resize", ["x", "", "scales"], ["y"], **attrs)], shape, "y", [scales])


def conv_act(act, cin, cout, hw, k, group=1, act_attrs=None):
    w = weights("w", [cout, cin // group, k, k])
    b = weights("b", [cout], scale=0.1)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k], pads=[k // 2] * 4, group=group)]
    if act:
        nodes.append(helper.make_node(act, ["c"], ["y"], **(act_attrs or {})))
    else:
        nodes[-1].output[0] = "y"
    return model(nodes, [1, cin, hw, hw], "y", [w, b])


def rnn(op, seq, inp, hidden, bidirectional):
    dirs = 2 if bidirectional else 1
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    w = weights("W", [dirs, gates * hidden, inp])
    r = weights("R", [dirs, gates * hidden, hidden])
    b = weights("B", [dirs, 2 * gates * hidden], scale=0.1)
    attrs = {"hidden_size": hidden, "direction": "bidirectional" if bidirectional else "forward"}
    if op == "GRU":
        attrs["linear_before_reset"] = 1
    node = helper.make_node(op, ["x", "W", "R", "B"], ["y"], **attrs)
    return model([node], [seq, 1, inp], "y", [w, r, b])


def conv1d(cin, cout, length, k):
    w = weights("w", [cout, cin, k])
    b = weights("b", [cout], scale=0.1)
    node = helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k], pads=[k // 2, k // 2])
    return model([node, helper.make_node("Relu", ["c"], ["y"])], [1, cin, length], "y", [w, b])


def conv_kx1(cin, cout, h, k):
    w = weights("w", [cout, cin, k, 1])
    b = weights("b", [cout], scale=0.1)
    node = helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, 1], pads=[k // 2, 0, k // 2, 0])
    return model([node, helper.make_node("Relu", ["c"], ["y"])], [1, cin, h, 1], "y", [w, b])


def unary(op, shape=(1, 128, 56, 56)):
    return model([helper.make_node(op, ["x"], ["y"])], list(shape), "y", [])


def gemm_batchnorm(rows, k, n):
    w = weights("w", [k, n])
    bn = [numpy_helper.from_array(a.astype(np.float32), nm) for nm, a in (
        ("gamma", RNG.uniform(0.5, 1.5, n)), ("beta", RNG.standard_normal(n) * 0.1),
        ("mean", RNG.standard_normal(n) * 0.1), ("var", RNG.uniform(0.5, 1.5, n)))]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]),
             helper.make_node("BatchNormalization", ["m", "gamma", "beta", "mean", "var"], ["y"])]
    return model(nodes, [rows, k], "y", [w] + bn)


def fp16_convs(c=64, hw=56):
    inits, nodes, prev = [], [], "x"
    for i in range(3):
        inits += [weights(f"w{i}", [c, c, 3, 3], np.float16), weights(f"b{i}", [c], np.float16, 0.1)]
        nodes += [helper.make_node("Conv", [prev, f"w{i}", f"b{i}"], [f"c{i}"], kernel_shape=[3, 3], pads=[1] * 4),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        prev = f"r{i}"
    nodes[-1].output[0] = "y"
    return model(nodes, [1, c, hw, hw], "y", inits, TensorProto.FLOAT16)


def fp16_mlp(rows=128, d=768):
    inits = [weights("w1", [d, 4 * d], np.float16), weights("b1", [4 * d], np.float16, 0.1),
             weights("w2", [4 * d, d], np.float16), weights("b2", [d], np.float16, 0.1)]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["a1"]),
             helper.make_node("Relu", ["a1"], ["r1"]), helper.make_node("MatMul", ["r1", "w2"], ["m2"]),
             helper.make_node("Add", ["m2", "b2"], ["y"])]
    return model(nodes, [1, rows, d], "y", inits, TensorProto.FLOAT16)


FAMILIES = {
    "resize_nearest_2x": lambda: resize("nearest", "asymmetric"),
    "resize_linear_2x": lambda: resize("linear", "half_pixel"),
    "resize_linear_align": lambda: resize("linear", "align_corners"),
    "conv_hardswish": lambda: conv_act("HardSwish", 32, 64, 80, 1),
    "conv_hardsigmoid": lambda: conv_act("HardSigmoid", 64, 64, 40, 1, act_attrs={"alpha": 0.2, "beta": 0.5}),
    "dwconv_hardswish": lambda: conv_act("HardSwish", 96, 96, 40, 3, group=96),
    "lstm_crnn_bidir": lambda: rnn("LSTM", 40, 512, 256, True),
    "gru_bidir": lambda: rnn("GRU", 100, 128, 128, True),
    "rnn_tanh": lambda: rnn("RNN", 100, 128, 128, False),
    "grouped_conv_gw16": lambda: conv_act("Relu", 64, 64, 56, 3, group=4),
    "grouped_conv_gw8": lambda: conv_act("Relu", 168, 168, 28, 3, group=21),
    "conv1d_k3": lambda: conv1d(256, 256, 400, 3),
    "conv_kx1_w1": lambda: conv_kx1(256, 256, 64, 3),
    "tanh": lambda: unary("Tanh"),
    "exp": lambda: unary("Exp"),
    "softplus": lambda: unary("Softplus"),
    "gemm_batchnorm": lambda: gemm_batchnorm(64, 256, 512),
    "fp16_convs": fp16_convs,
    "fp16_mlp": fp16_mlp,
}


def input_for(m):
    vi = m.graph.input[0]
    shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    dtype = np.float16 if vi.type.tensor_type.elem_type == TensorProto.FLOAT16 else np.float32
    return RNG.standard_normal(shape).astype(dtype)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir")
    p.add_argument("--only", help="comma-separated family names")
    a = p.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    names = a.only.split(",") if a.only else list(FAMILIES)
    for name in names:
        m = FAMILIES[name]()
        onnx.save(m, os.path.join(a.out_dir, name + ".onnx"))
        np.save(os.path.join(a.out_dir, name + ".input.npy"), input_for(m))
    print(" ".join(names))


if __name__ == "__main__":
    sys.exit(main())
