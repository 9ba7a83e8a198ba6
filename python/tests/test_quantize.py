"""osprey.quantize (and `osprey quantize`): a float ONNX model with Conv, Relu, residual Add,
MaxPool, GlobalAveragePool and Gemm, quantized from calibration samples given as a folder of
.npy files or as dicts; the .osp runs integer ops and stays close to the float model."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

from conftest import IR_VERSION

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import osprey  # noqa: E402

SHAPE = (1, 4, 12, 12)


def float_model(path, rng):
    def w(*shape, scale=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32))

    inits = [w(8, 4, 3, 3), w(8, scale=0.1), w(8, 8, 1, 1), w(5, 8), w(5, scale=0.1), w(8, 16)]
    for t, name in zip(inits, ["w1", "b1", "w2", "gw", "gb", "mw"]):
        t.name = name
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"]),
             helper.make_node("Add", ["c2", "r1"], ["sum"]),
             helper.make_node("Relu", ["sum"], ["r2"]),
             helper.make_node("MaxPool", ["r2"], ["pooled"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("GlobalAveragePool", ["pooled"], ["gap"]),
             helper.make_node("Flatten", ["gap"], ["flat"]),
             helper.make_node("Gemm", ["flat", "gw", "gb"], ["y"], transB=1),
             helper.make_node("MatMul", ["flat", "mw"], ["z"])]
    graph = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=IR_VERSION)
    onnx.save(model, path)


def cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / np.sqrt((a @ a) * (b @ b)))


@pytest.fixture()
def setup(tmp_path):
    rng = np.random.default_rng(3)
    src = tmp_path / "model.onnx"
    float_model(str(src), rng)
    calib = tmp_path / "calib"
    calib.mkdir()
    samples = [rng.standard_normal(SHAPE).astype(np.float32) for _ in range(8)]
    for i, s in enumerate(samples):
        np.save(calib / ("%03d.npy" % i), s)
    return src, calib, samples


@pytest.mark.parametrize("method", ["minmax", "percentile", "entropy"])
def test_quantize_from_folder_matches_float_model(setup, tmp_path, method):
    src, calib, samples = setup
    out = tmp_path / "q.osp"
    report = osprey.quantize(src, out, calib, method=method, per_channel=True)
    assert report.quantized_by_type.get("Conv") == 2
    assert report.quantized_by_type.get("Add") == 1
    assert report.float_ops == 0
    # Entropy cuts each range where the 8-bit histogram loses least information, which on eight
    # samples of a toy model clips more than MinMax keeps; the others must stay close.
    floor = 0.85 if method == "entropy" else 0.99
    assert len(report.outputs) == 2 and all(t[2] > floor for t in report.outputs), report.outputs
    assert report.tensors and all(len(t) == 4 for t in report.tensors)
    x = np.random.default_rng(9).standard_normal(SHAPE).astype(np.float32)
    want = osprey.InferenceSession(str(src)).run(None, {"x": x})
    got = osprey.InferenceSession(str(out)).run(None, {"x": x})
    for a, b in zip(want, got):
        assert cosine(a, b) > floor


def test_quantize_from_samples_and_dynamic(setup, tmp_path):
    src, _, samples = setup
    static = osprey.quantize(src, tmp_path / "s.osp", [{"x": s} for s in samples])
    assert static.quantized_ops >= 8
    dynamic = osprey.quantize(src, tmp_path / "d.osp", dynamic=True)
    assert dynamic.quantized_by_type == {"Gemm": 1, "MatMul": 1}
    x = samples[0]
    want = osprey.InferenceSession(str(src)).run(None, {"x": x})
    got = osprey.InferenceSession(str(tmp_path / "d.osp")).run(None, {"x": x})
    for a, b in zip(want, got):
        assert cosine(a, b) > 0.999


def test_quantize_errors_name_what_is_wrong(setup, tmp_path):
    src, calib, _ = setup
    with pytest.raises(osprey.OspreyError, match="calibration"):
        osprey.quantize(src, tmp_path / "q.osp")
    with pytest.raises(osprey.OspreyError, match="method"):
        osprey.quantize(src, tmp_path / "q.osp", calib, method="kl")
    with pytest.raises(osprey.OspreyError, match="not a directory"):
        osprey.quantize(src, tmp_path / "q.osp", str(tmp_path / "missing"))
    with pytest.raises(osprey.OspreyError):
        osprey.quantize(src, tmp_path / "q.osp", [{"x": np.zeros((2, 2), np.float32)}])


def test_cli_quantize_prints_the_report(setup, tmp_path):
    src, calib, _ = setup
    cli = os.path.join(os.path.dirname(osprey.__file__), "_bin", "osprey")
    if not os.path.exists(cli):
        pytest.skip("the osprey CLI is not bundled in this package")
    out = tmp_path / "q.osp"
    done = subprocess.run([cli, "quantize", str(src), str(out), "--calibration", str(calib), "--per-channel"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "ops quantized" in done.stdout and "model output 0: cosine" in done.stdout
    assert out.exists()
    info = subprocess.run([cli, "info", str(out)], capture_output=True, text=True)
    assert "QLinearConv" in info.stdout


@pytest.mark.parametrize("bits", ["int8", "int4"])
def test_quantize_weights_only(setup, tmp_path, bits):
    src, calib, samples = setup
    out = tmp_path / ("w%s.osp" % bits)
    report = osprey.quantize(src, out, calib, weights_only=bits, block_size=16)
    assert report.quantized_by_type == {"Gemm": 1, "MatMul": 1}
    assert [t[1] for t in report.tensors] == ["MatMulNBits", "MatMulNBits"]
    assert all(t[2] > (0.999 if bits == "int8" else 0.98) for t in report.tensors), report.tensors
    x = samples[1]
    want = osprey.InferenceSession(str(src)).run(None, {"x": x})
    got = osprey.InferenceSession(str(out)).run(None, {"x": x})
    for a, b in zip(want, got):
        assert cosine(a, b) > (0.9995 if bits == "int8" else 0.99)
    with pytest.raises(ValueError, match="weights_only"):
        osprey.quantize(src, tmp_path / "bad.osp", weights_only="int3")
    with pytest.raises(osprey.OspreyError, match="power of 2"):
        osprey.quantize(src, tmp_path / "bad.osp", weights_only=bits, block_size=20)
    cli = os.path.join(os.path.dirname(osprey.__file__), "_bin", "osprey")
    if os.path.exists(cli):
        done = subprocess.run([cli, "quantize", str(src), str(tmp_path / "cli.osp"), "--weights-only", bits],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        info = subprocess.run([cli, "info", str(tmp_path / "cli.osp")], capture_output=True, text=True)
        assert "MatMulNBits" in info.stdout
