"""ONNX sequences and optionals: sequence inputs and outputs as lists of arrays, optional ones as
None, against ONNX Runtime; and a list built in a scripted PyTorch loop (the pattern of
torchvision's MViT) against PyTorch."""
from __future__ import annotations

import io

import numpy as np
import pytest

from conftest import IR_VERSION, assert_close, make_model, onnx, ort
from onnx import TensorProto, helper

import osprey

F = TensorProto.FLOAT


def seq_info(name, rank=2, elem=F):
    """A sequence of `rank`-D tensors of symbolic shapes."""
    shape = ["%s_d%d" % (name, d) for d in range(rank)]
    return helper.make_value_info(name, helper.make_sequence_type_proto(helper.make_tensor_type_proto(elem, shape)))


def compare_lists(out, ref):
    assert len(out) == len(ref)
    for i, (o, r) in enumerate(zip(out, ref)):
        if isinstance(r, list):
            assert isinstance(o, list), "output %d: expected a list" % i
            assert len(o) == len(r), "output %d: %d items, expected %d" % (i, len(o), len(r))
            for k, (a, b) in enumerate(zip(o, r)):
                assert_close(a, b, "output %d item %d" % (i, k))
        else:
            assert_close(o, r, "output %d" % i)


def test_split_concat_insert_erase_against_onnxruntime(rng):
    nodes = [
        helper.make_node("SplitToSequence", ["x", "split"], ["parts"], axis=1),
        helper.make_node("SequenceErase", ["parts"], ["fewer"]),  # drops the last part
        helper.make_node("SequenceInsert", ["fewer", "y", "zero"], ["grown"]),
        helper.make_node("SequenceLength", ["grown"], ["n"]),
        helper.make_node("SequenceAt", ["grown", "minus_one"], ["last"]),
        helper.make_node("Relu", ["last"], ["relu"]),
        helper.make_node("ConcatFromSequence", ["grown"], ["joined"], axis=1),
        helper.make_node("SplitToSequence", ["x"], ["rows"], axis=0, keepdims=0),
        helper.make_node("ConcatFromSequence", ["rows"], ["stacked"], axis=-1, new_axis=1),
    ]
    inits = [helper.make_tensor("split", TensorProto.INT64, [3], [2, 3, 2]),
             helper.make_tensor("zero", TensorProto.INT64, [], [0]),
             helper.make_tensor("minus_one", TensorProto.INT64, [], [-1])]
    model = make_model(nodes, [helper.make_tensor_value_info("x", F, [3, 7]), helper.make_tensor_value_info("y", F, [3, 5])],
                       ["joined", "n", "relu", "stacked", seq_info("grown")], inits)
    feed = {"x": rng.standard_normal((3, 7)).astype(np.float32), "y": rng.standard_normal((3, 5)).astype(np.float32)}
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feed)
    out = osprey.InferenceSession(model, threads=2).run(None, feed)
    compare_lists(out, ref)
    assert [a.shape for a in out[4]] == [(3, 5), (3, 2), (3, 3)]


def test_sequence_input_as_a_list_and_node_args(rng):
    nodes = [helper.make_node("SequenceConstruct", ["a", "b"], ["pair"]),
             helper.make_node("ConcatFromSequence", ["s"], ["joined"], axis=0),
             helper.make_node("SequenceLength", ["s"], ["n"])]
    model = make_model(nodes, [seq_info("s"), helper.make_tensor_value_info("a", F, [2]),
                               helper.make_tensor_value_info("b", F, [3])],
                       ["joined", "n", seq_info("pair", rank=1)])
    session = osprey.InferenceSession(model)
    assert session.get_inputs()[0].type == "seq(tensor(float))"
    assert session.get_outputs()[2].type == "seq(tensor(float))"
    ref_session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    for n in (3, 1):
        items = [rng.standard_normal((k + 1, 4)).astype(np.float32) for k in range(n)]
        feed = {"s": items, "a": np.ones(2, np.float32), "b": np.zeros(3, np.float32)}
        compare_lists(session.run(None, feed), ref_session.run(None, feed))
    with pytest.raises(osprey.InvalidArgumentError, match="sequence of float32"):
        session.run(None, {"s": [np.zeros((1, 4), np.int64)], "a": np.ones(2, np.float32), "b": np.zeros(3, np.float32)})


def test_optional_input_none_and_present(rng):
    opt = helper.make_value_info("o", helper.make_optional_type_proto(helper.make_tensor_type_proto(F, [2])))
    nodes = [helper.make_node("OptionalHasElement", ["o"], ["has"]),
             helper.make_node("Identity", ["o"], ["same"])]
    same = helper.make_value_info("same", helper.make_optional_type_proto(helper.make_tensor_type_proto(F, [2])))
    model = make_model(nodes, [opt], ["has", same], opset=18)
    session = osprey.InferenceSession(model)
    assert session.get_inputs()[0].type == "optional(tensor(float))"
    has, value = session.run(None, {"o": None})
    assert not bool(has) and value is None
    x = rng.standard_normal(2).astype(np.float32)
    has, value = session.run(None, {"o": x})
    assert bool(has)
    np.testing.assert_array_equal(value, x)


def test_scripted_list_loop_against_pytorch():
    torch = pytest.importorskip("torch")

    class Pieces(torch.nn.Module):  # appends to a list in a loop, then concatenates it
        def forward(self, x):
            parts = []
            for i in range(x.shape[0]):
                parts.append(torch.relu(x[i] * float(i + 1)))
            return torch.cat(parts, 0)

    from caffe_models import to_torch  # Debian's torch and the venv's numpy meet through lists

    module = torch.jit.script(Pieces())
    buffer = io.BytesIO()
    rng = np.random.default_rng(5)
    x = to_torch(rng.standard_normal((4, 3, 5)).astype(np.float32))
    torch.onnx.export(module, (x,), buffer, opset_version=13, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "n"}})
    model = buffer.getvalue()
    ops = {n.op_type for n in onnx.load_from_string(model).graph.node}
    assert {"Loop", "ConcatFromSequence"} <= ops, ops
    session = osprey.InferenceSession(model)
    for n in (4, 2):
        xn = rng.standard_normal((n, 3, 5)).astype(np.float32)
        with torch.no_grad():
            ref = np.array(module(to_torch(xn)).tolist(), np.float32)
        assert_close(session.run(None, {"x": xn})[0], ref, "n=%d" % n)
