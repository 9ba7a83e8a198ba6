#!/usr/bin/env python3
"""Writes the hand-made hostile ONNX graphs (each about 100 bytes) that once crashed `osprey run`
into fuzz/regressions/osprey_fuzz_onnx/, where the fuzz_regressions test replays them and
tests/models/check_corrupt_models.py runs them through the CLI. Rerun after changing a graph."""
import os
import numpy as np
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "regressions", "osprey_fuzz_onnx")
F = TensorProto.FLOAT


def model(nodes, inputs, outputs, inits=(), opset=13):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="hostile")


def vi(name, shape=(2, 3), dtype=F):
    return helper.make_tensor_value_info(name, dtype, list(shape))


def graphs():
    x, y = vi("x"), vi("y")
    yield "empty_initializer_name", model([helper.make_node("Relu", ["x"], ["y"])], [x], [y],
                                          [numpy_helper.from_array(np.ones(3, np.float32), "")])
    yield "empty_input_name", model([helper.make_node("Relu", ["x"], ["y"])], [x, vi("")], [y])
    yield "empty_output_name", model([helper.make_node("Relu", ["x"], [""])], [x], [vi("")])
    yield "cast_no_input", model([helper.make_node("Cast", [], ["y"], to=F)], [x], [y])
    yield "cast_empty_input", model([helper.make_node("Cast", [""], ["y"], to=F)], [x], [y])
    yield "batchnorm_missing_inputs", model([helper.make_node("BatchNormalization", ["x", "s"], ["y"])], [x], [y],
                                            [numpy_helper.from_array(np.ones(3, np.float32), "s")])
    yield "batchnorm_empty_input", model([helper.make_node("BatchNormalization", ["x", "", "s", "s", "s"], ["y"])],
                                         [x], [y], [numpy_helper.from_array(np.ones(3, np.float32), "s")])
    yield "reshape_overflow", model([helper.make_node("Reshape", ["x", "shape"], ["y"])], [x], [vi("y", ())],
                                    [numpy_helper.from_array(np.array([1 << 62, 8], np.int64), "shape")])
    yield "reshape_overflow_const", model([helper.make_node("Reshape", ["c", "shape"], ["y"])], [x], [vi("y", ())],
                                          [numpy_helper.from_array(np.ones(6, np.float32), "c"),
                                           numpy_helper.from_array(np.array([-1, 1 << 62, 8], np.int64), "shape")])
    yield "expand_huge", model([helper.make_node("Expand", ["x", "shape"], ["y"])], [x], [vi("y", ())],
                               [numpy_helper.from_array(np.array([1 << 40, 1 << 20, 3], np.int64), "shape")])
    yield "constant_of_shape_huge", model([helper.make_node("ConstantOfShape", ["shape"], ["y"])], [x], [vi("y", ())],
                                          [numpy_helper.from_array(np.array([1 << 31, 1 << 31], np.int64), "shape")])
    yield "huge_input_dims", model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", (1 << 40, 1 << 40))], [y])
    yield "self_loop", model([helper.make_node("Relu", ["y"], ["y"])], [x], [y])
    yield "duplicate_output", model([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Relu", ["x"], ["y"])],
                                    [x], [y])
    yield "undefined_input", model([helper.make_node("Add", ["x", "nowhere"], ["y"])], [x], [y])


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, m in graphs():
        with open(os.path.join(OUT, f"hostile_{name}.onnx"), "wb") as f:
            f.write(m.SerializeToString())


if __name__ == "__main__":
    main()
