"""String tensors of a run (host values): numpy str / object arrays in and out of the string ops,
against ONNX Runtime."""
from __future__ import annotations

import numpy as np

from conftest import make_model, ort
from onnx import TensorProto, helper

import osprey

S = TensorProto.STRING


def test_string_ops_against_onnxruntime():
    nodes = [helper.make_node("StringSplit", ["x"], ["parts", "counts"], maxsplit=2),
             helper.make_node("StringConcat", ["x", "suffix"], ["joined"]),
             helper.make_node("StringNormalizer", ["words"], ["normal"], case_change_action="LOWER",
                              stopwords=["the", "A"], is_case_sensitive=0, locale="C"),
             helper.make_node("Equal", ["x", "probe"], ["same"]),
             helper.make_node("RegexFullMatch", ["joined"], ["email"], pattern=r"[\w.]+@\w+\.com!")]
    inputs = [helper.make_tensor_value_info("x", S, [2, 2]), helper.make_tensor_value_info("suffix", S, [1]),
              helper.make_tensor_value_info("words", S, [5]), helper.make_tensor_value_info("probe", S, [2])]
    model = make_model(nodes, inputs, ["parts", "counts", "joined", "normal", "same", "email"], opset=20)
    feed = {"x": np.array([["a b  c d", "x@y.com"], ["", " one "]], dtype=object),
            "suffix": np.array(["!"], dtype=object),
            "words": np.array(["The", "Quick", "a", "FOX", "the"], dtype=object),
            "probe": np.array(["", " one "], dtype=object)}
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feed)
    session = osprey.InferenceSession(model, threads=2)
    for _ in range(2):
        out = session.run(None, feed)
        assert len(out) == len(ref)
        for o, r in zip(out, ref):
            assert o.shape == r.shape
            np.testing.assert_array_equal(o, r)
