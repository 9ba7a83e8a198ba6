"""Weight-only quantized MatMul: a float MatMul with a constant [K, N] weight quantized by ONNX
Runtime's MatMulNBitsQuantizer into com.microsoft MatMulNBits (4 bits, block 32, symmetric and
asymmetric), run by Osprey and by ONNX Runtime (rtol and atol 1e-4), from the ONNX model and
from a converted .osp file; and hand-built MatMulNBits nodes (8 bits, a bias, K not a multiple
of the block, batch dimensions on A)."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import IR_VERSION

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import osprey  # noqa: E402

MS = "com.microsoft"
K, N = 256, 96


def float_model(rng, k=K, n=N):
    w = (rng.standard_normal((k, n)) * 0.1).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "nbits",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 7, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 7, n])],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = IR_VERSION
    return model


def quantize(model, symmetric, bits=4, block_size=32):
    nbits = pytest.importorskip("onnxruntime.quantization.matmul_nbits_quantizer")
    quantizer = nbits.MatMulNBitsQuantizer(model, bits=bits, block_size=block_size, is_symmetric=symmetric)
    quantizer.process()
    return quantizer.model.model


def check(model_bytes, feeds, sessions):
    ref = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    for feed in feeds:
        expected = ref.run(None, feed)[0]
        for session in sessions:
            out = session.run(None, feed)[0]
            assert out.shape == expected.shape and out.dtype == expected.dtype
            np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("symmetric", [True, False])
def test_quantizer_output_matches_onnxruntime(tmp_path, symmetric):
    rng = np.random.default_rng(5 if symmetric else 6)
    quantized = quantize(float_model(rng), symmetric)
    nodes = [(n.domain, n.op_type) for n in quantized.graph.node]
    assert nodes == [(MS, "MatMulNBits")], nodes
    inputs = quantized.graph.node[0].input
    assert (len(inputs) >= 4 and inputs[3]) != symmetric, inputs  # zero points only when asymmetric
    path, osp = str(tmp_path / "q.onnx"), str(tmp_path / "q.osp")
    onnx.save(quantized, path)
    osprey.convert(path, osp)  # the .osp file names the op
    sessions = [osprey.InferenceSession(quantized.SerializeToString(), threads=2),
                osprey.InferenceSession(osp, threads=1)]
    feeds = [{"x": rng.standard_normal((b, 7, K)).astype(np.float32)} for b in (1, 3)]
    feeds.append({"x": rng.standard_normal((1, 7, K)).astype(np.float32) * 10})
    check(quantized.SerializeToString(), feeds, sessions)


def nbits_model(rng, k, n, bits, block_size, zero_points, bias, a_shape):
    """A MatMulNBits node built by hand: random codes, scales, packed zero points and bias."""
    k_blocks = (k + block_size - 1) // block_size
    blob = block_size * bits // 8
    b = rng.integers(0, 256, size=(n, k_blocks, blob)).astype(np.uint8)
    scales = rng.uniform(0.001, 0.05, size=(n, k_blocks)).astype(np.float32)
    inits = [numpy_helper.from_array(b, "b"), numpy_helper.from_array(scales, "scales")]
    names = ["a", "b", "scales"]
    if zero_points or bias:
        names.append("zp" if zero_points else "")
    if zero_points:
        row = k_blocks if bits == 8 else (k_blocks + 1) // 2
        inits.append(numpy_helper.from_array(rng.integers(0, 256, size=(n * row,)).astype(np.uint8), "zp"))
    if bias:
        names += ["", "bias"]
        inits.append(numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "bias"))
    node = helper.make_node("MatMulNBits", names, ["y"], domain=MS, K=k, N=n, bits=bits, block_size=block_size)
    graph = helper.make_graph([node], "nbits", [helper.make_tensor_value_info("a", TensorProto.FLOAT, a_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    model.ir_version = IR_VERSION
    return model.SerializeToString()


@pytest.mark.parametrize("bits,block_size,k,n,zero_points,bias,rows", [
    (8, 32, 100, 37, True, True, 5),
    (8, 16, 64, 9, False, False, 1),
    (4, 128, 200, 33, True, False, 3),
    (4, 16, 77, 13, False, True, 70),
])
def test_hand_built_nodes_match_onnxruntime(bits, block_size, k, n, zero_points, bias, rows):
    rng = np.random.default_rng(bits * 1000 + k)
    model = nbits_model(rng, k, n, bits, block_size, zero_points, bias, [2, rows, k])
    feeds = [{"a": rng.standard_normal((2, rows, k)).astype(np.float32)} for _ in range(2)]
    check(model, feeds, [osprey.InferenceSession(model, threads=2)])


def test_unsupported_bits_are_named():
    rng = np.random.default_rng(1)
    model = nbits_model(rng, 32, 4, 8, 16, False, False, [1, 32])
    bad = onnx.load_from_string(model)
    for a in bad.graph.node[0].attribute:
        if a.name == "bits":
            a.i = 2
    with pytest.raises(Exception, match="MatMulNBits.*bits 2"):
        osprey.InferenceSession(bad.SerializeToString()).run(None, {"a": np.zeros((1, 32), np.float32)})


@pytest.mark.parametrize("symmetric", [True, False])
def test_int8_activations_as_close_to_float_as_onnxruntime(symmetric):
    """accuracy_level 4 (int8 activations, ONNX Runtime's CompInt8): Osprey and ONNX Runtime each
    round A to int8 per block, in their own order of float steps, so their outputs differ by
    about one rounding step of A; each must be as close to the float-activation result (level 0,
    the same weights) as the other, within a tenth."""
    rng = np.random.default_rng(7 if symmetric else 8)
    model = quantize(float_model(rng), symmetric)
    float_bytes = model.SerializeToString()
    for attr in model.graph.node[0].attribute:
        if attr.name == "accuracy_level":
            model.graph.node[0].attribute.remove(attr)
    model.graph.node[0].attribute.append(helper.make_attribute("accuracy_level", 4))
    int8_bytes = model.SerializeToString()
    exact = ort.InferenceSession(float_bytes, providers=["CPUExecutionProvider"])
    theirs = ort.InferenceSession(int8_bytes, providers=["CPUExecutionProvider"])
    ours = osprey.InferenceSession(int8_bytes, threads=2)
    x = rng.standard_normal((3, 7, K)).astype(np.float32)
    want = exact.run(None, {"x": x})[0]
    our_error = np.abs(ours.run(None, {"x": x})[0] - want).max()
    their_error = np.abs(theirs.run(None, {"x": x})[0] - want).max()
    scale = np.abs(want).max()
    assert 0 < our_error < 0.02 * scale, (our_error, scale)  # the activations were rounded
    assert our_error <= 1.1 * their_error or their_error == 0, (our_error, their_error)
