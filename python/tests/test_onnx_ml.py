"""ONNX-ML ops (ai.onnx.ml) against ONNX Runtime: random tree ensembles (every node mode, missing
values, each aggregate function and post transform), LabelEncoder between strings and numbers,
Binarizer, ArrayFeatureExtractor."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import IR_VERSION, assert_close, ort
from onnx import TensorProto, helper, numpy_helper
import onnx

import osprey

F = TensorProto.FLOAT


def ml_model(node, inputs, outputs, ml_opset):
    graph = helper.make_graph([node], "ml", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", ml_opset)])
    model.ir_version = 10
    return model.SerializeToString()


def random_trees(rng, trees, depth, features, targets):
    """Complete binary trees of `depth` levels of branches over random features and modes."""
    attrs = {k: [] for k in ("nodes_featureids", "nodes_truenodeids", "nodes_falsenodeids", "nodes_trueleafs",
                             "nodes_falseleafs", "nodes_missing_value_tracks_true", "leaf_targetids", "tree_roots")}
    modes, splits, weights, members = [], [], [], []
    for _ in range(trees):
        base = len(modes)
        attrs["tree_roots"].append(base)
        branches = 2 ** depth - 1
        for b in range(branches):
            mode = int(rng.integers(0, 7))
            modes.append(mode)
            attrs["nodes_featureids"].append(int(rng.integers(0, features)))
            if mode == 6:
                members.extend(rng.integers(0, 4, 3).astype(float).tolist() + [np.nan])  # ONNX Runtime takes small whole numbers
                splits.append(0.0)
            else:
                splits.append(float(np.round(rng.standard_normal(), 1)))
            attrs["nodes_missing_value_tracks_true"].append(int(rng.integers(0, 2)))
            for side in ("true", "false"):
                child = 2 * b + (1 if side == "true" else 2)
                if child < branches:
                    attrs["nodes_%snodeids" % side].append(base + child)
                    attrs["nodes_%sleafs" % side].append(0)
                else:
                    attrs["nodes_%snodeids" % side].append(len(weights))
                    attrs["nodes_%sleafs" % side].append(1)
                    weights.append(float(rng.standard_normal()))
                    attrs["leaf_targetids"].append(int(rng.integers(0, targets)))
    attrs["nodes_modes"] = numpy_helper.from_array(np.array(modes, np.uint8), "nodes_modes")
    attrs["nodes_splits"] = numpy_helper.from_array(np.array(splits, np.float32), "nodes_splits")
    attrs["leaf_weights"] = numpy_helper.from_array(np.array(weights, np.float32), "leaf_weights")
    if members:
        attrs["membership_values"] = numpy_helper.from_array(np.array(members, np.float32), "membership_values")
    return attrs


def onnxruntime_swaps_softmax_and_logistic():
    """One branch to a leaf of weight 1 for target 0 of two: SOFTMAX gives [0.73, 0.27], LOGISTIC
    [0.73, 0.5]."""
    node = helper.make_node("TreeEnsemble", ["x"], ["y"], domain="ai.onnx.ml", n_targets=2, post_transform=1,
                            tree_roots=[0], nodes_featureids=[0], nodes_truenodeids=[0], nodes_falsenodeids=[1],
                            nodes_trueleafs=[1], nodes_falseleafs=[1], leaf_targetids=[0, 1],
                            nodes_modes=numpy_helper.from_array(np.array([0], np.uint8), "m"),
                            nodes_splits=numpy_helper.from_array(np.array([0], np.float32), "s"),
                            leaf_weights=numpy_helper.from_array(np.array([1, 0], np.float32), "w"))
    model = ml_model(node, [helper.make_tensor_value_info("x", F, [1, 1])], [helper.make_tensor_value_info("y", F, [1, 2])], 5)
    y = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": np.zeros((1, 1), np.float32)})[0]
    return abs(float(y[0, 1]) - 0.5) < 1e-6


@pytest.mark.parametrize("aggregate,post", [(1, 0), (0, 2), (2, 1), (3, 0), (1, 3)])
def test_tree_ensemble_against_onnxruntime(aggregate, post):
    rng = np.random.default_rng(aggregate * 10 + post)
    attrs = random_trees(rng, trees=7, depth=3, features=5, targets=3)
    node = helper.make_node("TreeEnsemble", ["x"], ["y"], domain="ai.onnx.ml", n_targets=3, aggregate_function=aggregate,
                            post_transform=post, **attrs)
    model = ml_model(node, [helper.make_tensor_value_info("x", F, [None, 5])], [helper.make_tensor_value_info("y", F, [None, 3])], 5)
    x = (np.round(rng.standard_normal((40, 5)) * 4) / 2).astype(np.float32)  # halves: splits and members are hit
    x[rng.random(x.shape) < 0.1] = np.nan
    # ONNX numbers post_transform SOFTMAX 1, LOGISTIC 2; ONNX Runtime 1.32 reads the two the other way
    # round, so there its SOFTMAX is asked for as 2 and its LOGISTIC as 1.
    theirs = onnx.load_from_string(model)
    for a in theirs.graph.node[0].attribute:
        if a.name == "post_transform" and a.i in (1, 2) and onnxruntime_swaps_softmax_and_logistic():
            a.i = 3 - a.i
    ref = ort.InferenceSession(theirs.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert_close(osprey.InferenceSession(model).run(None, {"x": x})[0], ref, "TreeEnsemble")


def test_label_encoder_binarizer_features_against_onnxruntime():
    nodes = [helper.make_node("LabelEncoder", ["words"], ["ids"], domain="ai.onnx.ml", keys_strings=["cat", "dog", "eel"],
                              values_int64s=[3, 5, 7], default_int64=-9),
             helper.make_node("LabelEncoder", ["ids"], ["names"], domain="ai.onnx.ml", keys_int64s=[3, 7],
                              values_strings=["three", "seven"], default_string="?"),
             helper.make_node("LabelEncoder", ["x"], ["codes"], domain="ai.onnx.ml", keys_floats=[0.5, -1.0],
                              values_floats=[10.0, 20.0]),
             helper.make_node("Binarizer", ["x"], ["bits"], domain="ai.onnx.ml", threshold=0.25),
             helper.make_node("ArrayFeatureExtractor", ["x", "cols"], ["picked"], domain="ai.onnx.ml")]
    graph = helper.make_graph(nodes, "ml", [helper.make_tensor_value_info("words", TensorProto.STRING, [4]),
                                            helper.make_tensor_value_info("x", F, [3, 4])],
                              [helper.make_tensor_value_info(n, t, None) for n, t in
                               (("ids", TensorProto.INT64), ("names", TensorProto.STRING), ("codes", F), ("bits", F), ("picked", F))],
                              [numpy_helper.from_array(np.array([3, 0, 3], np.int64), "cols")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 4)])
    model.ir_version = 10
    data = model.SerializeToString()
    feed = {"words": np.array(["dog", "cow", "eel", "cat"], dtype=object),
            "x": np.array([[0.5, -1.0, 0.25, 2.0], [0.3, 0.0, -1.0, 0.5], [1.0, 0.5, 0.1, -3.0]], np.float32)}
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feed)
    out = osprey.InferenceSession(data).run(None, feed)
    for o, r in zip(out, ref):
        np.testing.assert_array_equal(o, r)
