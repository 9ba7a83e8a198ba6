#!/usr/bin/env python3
"""Writes Osprey's bundled default model: a small image classifier (Conv-BatchNorm-ReLU
blocks, a depthwise stage, a residual Add, global pooling, Gemm, Softmax) with seeded random
weights, as ONNX opset 13, plus a seeded input. Needs only numpy and onnx.

Usage: make_default_model.py OUTDIR   ->  OUTDIR/tiny_classifier.onnx, OUTDIR/tiny_classifier.input.npy"""
import os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(rng):
    nodes, inits = [], []

    def const(name, array):
        inits.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def conv_bn_relu(x, cin, cout, k, stride, group, tag, relu="Relu"):
        w = const(tag + ".w", rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / (cin // group * k * k)))
        nodes.append(helper.make_node("Conv", [x, w], [tag + ".conv"], name=tag + "/Conv", kernel_shape=[k, k],
                                      strides=[stride, stride], pads=[k // 2] * 4, group=group))
        bn = [const(tag + ".bn." + p, v) for p, v in
              (("scale", 1 + 0.1 * rng.standard_normal(cout)), ("bias", 0.1 * rng.standard_normal(cout)),
               ("mean", 0.1 * rng.standard_normal(cout)), ("var", 1 + 0.1 * rng.random(cout)))]
        nodes.append(helper.make_node("BatchNormalization", [tag + ".conv"] + bn, [tag + ".bn"], name=tag + "/BN"))
        if relu == "Relu":
            nodes.append(helper.make_node("Relu", [tag + ".bn"], [tag + ".out"], name=tag + "/Relu"))
            return tag + ".out"
        return tag + ".bn"

    x = conv_bn_relu("input", 3, 16, 3, 2, 1, "stem")
    y = conv_bn_relu(x, 16, 16, 3, 1, 16, "dw")
    y = conv_bn_relu(y, 16, 16, 1, 1, 1, "pw", relu=None)
    nodes.append(helper.make_node("Add", [x, y], ["res"], name="residual/Add"))
    z = conv_bn_relu("res", 16, 32, 3, 2, 1, "down")
    nodes.append(helper.make_node("GlobalAveragePool", [z], ["pool"], name="head/Pool"))
    nodes.append(helper.make_node("Flatten", ["pool"], ["flat"], name="head/Flatten", axis=1))
    w = const("fc.w", rng.standard_normal((10, 32)) * 0.3)
    b = const("fc.b", rng.standard_normal(10) * 0.1)
    nodes.append(helper.make_node("Gemm", ["flat", w, b], ["logits"], name="head/Gemm", transB=1))
    nodes.append(helper.make_node("Softmax", ["logits"], ["probabilities"], name="head/Softmax", axis=-1))
    graph = helper.make_graph(nodes, "tiny_classifier",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 64, 64])],
                              [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="osprey-default-model")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.RandomState(0)
    model = build(rng)
    onnx.save(model, os.path.join(outdir, "tiny_classifier.onnx"))
    np.save(os.path.join(outdir, "tiny_classifier.input.npy"), rng.standard_normal((1, 3, 64, 64)).astype(np.float32))
    print("wrote", os.path.join(outdir, "tiny_classifier.onnx"))


if __name__ == "__main__":
    main()
