"""QDQ models (onnxruntime.quantization.quantize_static with QuantFormat.QDQ) in Osprey: the
converter fuses DequantizeLinear -> op -> QuantizeLinear into the integer ops (QLinearConv,
QLinearAdd, QGemm, ...) and runs MaxPool / Reshape on the bytes; the results must stay within
a few output quantization steps of ONNX Runtime's, which fuses the same patterns into its own
integer kernels."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import IR_VERSION

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import osprey  # noqa: E402

INPUT_SHAPE = (1, 3, 12, 10)
BYTE_TYPES = (np.uint8, np.int8)


def float_model(rng):
    """Conv+Relu, Conv, residual Add, MaxPool, GlobalAveragePool, Reshape, then Gemm and MatMul."""
    c_in, c_mid, classes, features = 3, 8, 5, 6

    def weights(*shape, scale=0.3):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    inits = {"w1": weights(c_mid, c_in, 3, 3), "b1": weights(c_mid, scale=0.1),
             "w2": weights(c_mid, c_mid, 3, 3, scale=0.15), "b2": weights(c_mid, scale=0.1),
             "shape": np.array([1, c_mid], np.int64),
             "gw": weights(classes, c_mid), "gb": weights(classes, scale=0.1),
             "mw": weights(c_mid, features)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "r1"], ["sum"]),
             helper.make_node("MaxPool", ["sum"], ["pooled"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("GlobalAveragePool", ["pooled"], ["gap"]),
             helper.make_node("Reshape", ["gap", "shape"], ["flat"]),
             helper.make_node("Gemm", ["flat", "gw", "gb"], ["y"], transB=1),
             helper.make_node("MatMul", ["flat", "mw"], ["z"])]
    graph = helper.make_graph(
        nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, INPUT_SHAPE)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, classes]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, features])],
        [numpy_helper.from_array(a, n) for n, a in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = IR_VERSION
    return model


def quantized_model(tmp_path, activation_type, per_channel):
    rng = np.random.default_rng(7)
    src, dst = str(tmp_path / "float.onnx"), str(tmp_path / "qdq.onnx")
    onnx.save(float_model(rng), src)

    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            calibration = np.random.default_rng(8)
            self.data = iter([{"x": calibration.standard_normal(INPUT_SHAPE).astype(np.float32)} for _ in range(8)])

        def get_next(self):
            return next(self.data, None)

    quantization.quantize_static(src, dst, Reader(), quant_format=quantization.QuantFormat.QDQ,
                                 activation_type=activation_type, weight_type=quantization.QuantType.QInt8,
                                 per_channel=per_channel)
    return dst


def output_scales(model):
    """The scale of the DequantizeLinear writing each graph output."""
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    writers = {n.output[0]: n for n in model.graph.node}
    scales = {}
    for out in model.graph.output:
        node = writers[out.name]
        assert node.op_type == "DequantizeLinear", "output %s is written by %s" % (out.name, node.op_type)
        scales[out.name] = float(inits[node.input[1]])
    return scales


def op_inputs(session, feed):
    """(op type, dtype of its first input) for every op the session runs."""
    seen = []

    def before(op, inputs):
        seen.append((op["type"], inputs[0].dtype if inputs and inputs[0] is not None else None))

    session.run_with_callbacks(None, feed, before=before)
    return seen


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("activations", ["QUInt8", "QInt8"])
def test_quantize_static_qdq_runs_fused_and_matches_onnxruntime(tmp_path, activations, per_channel):
    path = quantized_model(tmp_path, getattr(quantization.QuantType, activations), per_channel)
    quantized = onnx.load(path)
    ops = {n.op_type for n in quantized.graph.node}
    assert {"QuantizeLinear", "DequantizeLinear", "Conv", "Gemm"} <= ops, ops  # the QDQ format
    scales = output_scales(quantized)
    model = quantized.SerializeToString()

    reference = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    session = osprey.InferenceSession(model, threads=2)
    osp = str(tmp_path / "qdq.osp")
    report = osprey.convert(path, osp)
    assert report.fused_ops >= 6, report
    from_file = osprey.InferenceSession(osp, threads=1)
    names = [o.name for o in reference.get_outputs()]

    worst = 0.0
    for seed in range(6):
        feed = {"x": np.random.default_rng(100 + seed).standard_normal(INPUT_SHAPE).astype(np.float32)}
        want = reference.run(None, feed)
        got = session.run(None, feed)
        for name, g, w, f in zip(names, got, want, from_file.run(None, feed)):
            assert g.dtype == np.float32 and g.shape == w.shape
            np.testing.assert_array_equal(f, g)
            # ONNX Runtime runs its own integer kernels on the same QDQ graph. Each layer's
            # requantization may round a tie or a float-multiplier difference the other way (one
            # step of that layer), and such a step moves the next layers' results by about a step
            # of theirs; two steps of the output's scale cover that and still catch any error of
            # a whole step in the fused ops (a wrong zero point, bias or scale).
            steps = float(np.max(np.abs(g.astype(np.float64) - w))) / scales[name]
            worst = max(worst, steps)
            assert steps <= 2.0 + 1e-3, "%s: %.2f output steps from ONNX Runtime" % (name, steps)

    feed = {"x": np.random.default_rng(99).standard_normal(INPUT_SHAPE).astype(np.float32)}
    ran = op_inputs(session, feed)
    types = {t for t, _ in ran}
    fused = {"QLinearConv", "QLinearAdd", "QLinearGlobalAveragePool", "QGemm", "QLinearMatMul"}
    assert fused <= types, types
    assert not {"Conv", "Add", "GlobalAveragePool", "Gemm", "MatMul"} & types, types
    # Data movement on the bytes: MaxPool and Reshape read uint8/int8, and the only float
    # conversions left are the input's QuantizeLinear and the outputs' DequantizeLinear.
    for op in ("MaxPool", "Reshape"):
        dtypes = [d for t, d in ran if t == op]
        assert dtypes and all(d in BYTE_TYPES for d in dtypes), (op, dtypes)
    assert sum(t == "QuantizeLinear" for t, _ in ran) == 1, ran
    assert sum(t == "DequantizeLinear" for t, _ in ran) == len(names), ran
