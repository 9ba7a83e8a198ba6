"""Configuration as values: the keyword options of InferenceSession and Runtime, the CPU ISA
limit, and the CLI's flags for the same fields (python -m osprey runs the packaged CLI)."""
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import osprey
from conftest import make_model


def conv_model() -> bytes:
    w = numpy_helper.from_array(np.random.default_rng(1).standard_normal((8, 5, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3]), helper.make_node("Relu", ["c"], ["y"])]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5, 7, 6])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])


def test_options_take_effect_and_keep_results():
    model = conv_model()
    x = np.random.default_rng(2).standard_normal((1, 5, 7, 6)).astype(np.float32)
    plain = osprey.InferenceSession(model, threads=2, cpu_pinning="off")
    packed = osprey.InferenceSession(model, threads=2, cpu_layout="nc8hw8", memory="low",
                                     fp32_stem=0.0, cuda_graphs=False, cuda_autotune=True, cuda_cache="/nonexistent/c",
                                     opencl_tune="fast", opencl_platform=0)
    ref = plain.run(None, {"x": x})[0]
    out = packed.run(None, {"x": x})[0]
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    assert plain.stats()["relaid_tensors"] == 0
    assert packed.stats()["relaid_tensors"] > 0


def qconv_model() -> bytes:
    """QuantizeLinear, a QLinearConv and DequantizeLinear: bytes in between."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s"), numpy_helper.from_array(np.array(0, np.uint8), "z"),
             numpy_helper.from_array(rng.integers(-127, 128, (8, 5, 3, 3)).astype(np.int8), "w"),
             numpy_helper.from_array(np.array(0.01, np.float32), "ws"), numpy_helper.from_array(np.array(0, np.int8), "wz"),
             numpy_helper.from_array(np.array(0.2, np.float32), "ys"), numpy_helper.from_array(np.array(7, np.uint8), "yz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("QLinearConv", ["q", "s", "z", "w", "ws", "wz", "ys", "yz"], ["c"], kernel_shape=[3, 3]),
             helper.make_node("DequantizeLinear", ["c", "ys", "yz"], ["y"])]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5, 7, 6])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)


def test_quantized_layout_option_keeps_results():
    x = np.random.default_rng(4).standard_normal((1, 5, 7, 6)).astype(np.float32)
    runs = {}
    for layout in ("nchw", "nhwc", "auto"):
        session = osprey.InferenceSession(qconv_model(), threads=2, cpu_quantized_layout=layout)
        runs[layout] = (session.run(None, {"x": x})[0], session.stats()["relaid_tensors"])
    np.testing.assert_array_equal(runs["nhwc"][0], runs["nchw"][0])
    np.testing.assert_array_equal(runs["auto"][0], runs["nchw"][0])
    assert runs["nchw"][1] == 0 and runs["nhwc"][1] > 0 and runs["auto"][1] > 0
    with pytest.raises(osprey.InvalidArgumentError, match="cpu_quantized_layout"):
        osprey.InferenceSession(qconv_model(), cpu_quantized_layout="nc4hw4")


def test_runtime_passes_options_to_its_sessions():
    rt = osprey.Runtime("cpu", threads=2, cpu_pinning="off", cpu_layout="nc8hw8")
    assert rt.thread_count() == 2
    session = osprey.InferenceSession(conv_model(), runtime=rt)
    session.run(None, {"x": np.zeros((1, 5, 7, 6), np.float32)})
    assert session.stats()["relaid_tensors"] > 0


@pytest.mark.parametrize("kwargs", [{"cpu_pinning": "sometimes"}, {"memory": "huge"},
                                    {"cuda_layout": "nc4hw4"}, {"opencl_tune": "max"}, {"opencl_memory": "disk"},
                                    {"cuda_low_precision": "fp8"}, {"fp32_stem": 2.0}])
def test_bad_option_values_are_errors(kwargs):
    name = next(iter(kwargs))
    with pytest.raises(osprey.InvalidArgumentError, match=name):
        osprey.InferenceSession(conv_model(), **kwargs)


def test_cpu_isa_limit_is_fixed_once_chosen():
    osprey.InferenceSession(conv_model()).run(None, {"x": np.zeros((1, 5, 7, 6), np.float32)})
    assert osprey.cpu_isa() in ("scalar", "avx2_fma", "avx512f")
    other = "scalar" if osprey.cpu_isa() != "scalar" else "native"
    with pytest.raises(osprey.InvalidArgumentError, match="already chosen"):
        osprey.set_cpu_isa_limit(other)
    with pytest.raises(osprey.InvalidArgumentError, match="unknown CPU ISA"):
        osprey.set_cpu_isa_limit("sse")


def cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "osprey"] + list(args), capture_output=True, text=True, timeout=120,
                          env=env)


@pytest.mark.parametrize("flag,value", [("--cpu-pinning", "maybe"), ("--memory", "huge"),
                                        ("--cuda-graphs", "1"), ("--opencl-tune", "max"), ("--cpu-layout", "nc4hw4"),
                                        ("--cpu-quantized-layout", "nc8hw8"),
                                        ("--opencl-memory", "disk"), ("--fp32-stem", "x"), ("--cpu-isa", "sse")])
def test_cli_flag_errors_name_the_flag(tmp_path, flag, value):
    path = tmp_path / "conv.onnx"
    path.write_bytes(conv_model())
    r = cli("run", str(path), flag, value)
    assert r.returncode == 1, r.stderr
    assert flag in r.stderr and value in r.stderr, r.stderr


def test_cli_accepts_the_flags(tmp_path):
    path = tmp_path / "conv.onnx"
    path.write_bytes(conv_model())
    r = cli("run", str(path), "--threads", "2", "--cpu-pinning", "off", "--cpu-layout", "nc8hw8",
            "--cpu-quantized-layout", "nchw", "--memory", "low", "--cuda-graphs", "off", "--opencl-tune", "wide", "--cpu-isa", "native", "--quiet")
    assert r.returncode == 0, r.stderr


def test_cli_honours_osprey_cpu_isa(tmp_path):
    import os
    env = dict(os.environ, OSPREY_CPU_ISA="bogus")
    r = cli("backends", env=env)
    assert r.returncode == 1 and "OSPREY_CPU_ISA" in r.stderr, r.stderr
