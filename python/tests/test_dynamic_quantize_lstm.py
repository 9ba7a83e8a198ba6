"""com.microsoft.DynamicQuantizeLSTM, as ONNX Runtime's quantize_dynamic writes it for an LSTM:
Osprey runs it as the LSTM of the dequantized weights. Against the float model that LSTM is
exact up to the weights' rounding; against ONNX Runtime (which also rounds X and H to uint8 at
each step) it agrees within that activation rounding."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import IR_VERSION

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import osprey  # noqa: E402

SEQ, BATCH, INPUT, HIDDEN = 6, 3, 10, 7


def lstm_model(path, rng, direction, per_layer_inputs):
    dirs = 2 if direction == "bidirectional" else 1
    inits = {"W": rng.standard_normal((dirs, 4 * HIDDEN, INPUT)) * 0.4,
             "R": rng.standard_normal((dirs, 4 * HIDDEN, HIDDEN)) * 0.4,
             "B": rng.standard_normal((dirs, 8 * HIDDEN)) * 0.1,
             "h0": rng.standard_normal((dirs, BATCH, HIDDEN)) * 0.5}
    inputs = ["x", "W", "R", "B", "", "h0"] if per_layer_inputs else ["x", "W", "R"]
    node = helper.make_node("LSTM", inputs, ["y", "y_h", "y_c"], hidden_size=HIDDEN, direction=direction)
    graph = helper.make_graph(
        [node], "lstm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [SEQ, BATCH, INPUT])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "y_h", "y_c")],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items() if k in inputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=IR_VERSION)
    onnx.save(model, path)


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
@pytest.mark.parametrize("per_channel", [False, True])
def test_dynamic_quantize_lstm_runs_as_the_lstm_of_its_weights(tmp_path, direction, per_channel):
    rng = np.random.default_rng(5)
    src, dst = str(tmp_path / "lstm.onnx"), str(tmp_path / "lstm.q.onnx")
    lstm_model(src, rng, direction, per_layer_inputs=per_channel)
    quantization.quantize_dynamic(src, dst, op_types_to_quantize=["LSTM"], per_channel=per_channel,
                                  weight_type=quantization.QuantType.QInt8)
    quantized = onnx.load(dst)
    assert [n.op_type for n in quantized.graph.node] == ["DynamicQuantizeLSTM"]
    x = rng.standard_normal((SEQ, BATCH, INPUT)).astype(np.float32)
    got = osprey.InferenceSession(dst).run(None, {"x": x})
    ort_q = ort.InferenceSession(dst, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    ort_f = ort.InferenceSession(src, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for g, q, f in zip(got, ort_q, ort_f):
        assert g.shape == q.shape and g.dtype == q.dtype
        # Weights rounded to int8: within a few hundredths of the float LSTM, as ORT's is.
        assert np.max(np.abs(g - f)) < 0.03, np.max(np.abs(g - f))
        assert np.max(np.abs(g - q)) < 0.03, np.max(np.abs(g - q))
    # The same weights dequantized by hand, in the float LSTM: Osprey's result to float rounding.
    init = {t.name: numpy_helper.to_array(t) for t in quantized.graph.initializer}
    node = quantized.graph.node[0]
    def weights(w, s, z):
        q, scale, zero = init[node.input[w]], init[node.input[s]], init[node.input[z]]
        dirs = q.shape[0]
        scale = scale.reshape(dirs, -1)[:, None, :]
        zero = zero.reshape(dirs, -1)[:, None, :].astype(np.float32)
        return ((q.astype(np.float32) - zero) * scale).transpose(0, 2, 1)
    float_model = onnx.load(src)
    for t in float_model.graph.initializer:
        if t.name in ("W", "R"):
            t.CopyFrom(numpy_helper.from_array(weights(*((1, 8, 9) if t.name == "W" else (2, 10, 11))).astype(np.float32), t.name))
    ref = ort.InferenceSession(float_model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5)


def test_dynamic_quantize_lstm_needs_constant_weights(tmp_path):
    w = helper.make_tensor_value_info("W", TensorProto.INT8, [1, INPUT, 4 * HIDDEN])
    node = helper.make_node("DynamicQuantizeLSTM", ["x", "W", "R", "", "", "", "", "", "ws", "wz", "rs", "rz"],
                            ["y"], domain="com.microsoft", hidden_size=HIDDEN)
    inits = [numpy_helper.from_array(np.zeros((1, HIDDEN, 4 * HIDDEN), np.int8), "R"),
             numpy_helper.from_array(np.float32(0.1), "ws"), numpy_helper.from_array(np.int8(0), "wz"),
             numpy_helper.from_array(np.float32(0.1), "rs"), numpy_helper.from_array(np.int8(0), "rz")]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [SEQ, BATCH, INPUT]), w],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("com.microsoft", 1)],
                              ir_version=IR_VERSION)
    with pytest.raises(osprey.OspreyError, match="constant"):
        osprey.InferenceSession(model.SerializeToString())
