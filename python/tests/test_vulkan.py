"""backend="vulkan" from Python: a small CNN with an op that falls back to the CPU, and a model
run in planned stages (NonZero, If), against ONNX Runtime. Skipped where the build has no Vulkan
backend or no Vulkan device is installed."""
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import osprey
from conftest import assert_close, make_model, ort
from test_runtime import staged_model

pytestmark = [
    pytest.mark.skipif(not osprey.available_backends().get("vulkan"),
                       reason="no Vulkan backend in this build, or no Vulkan device installed"),
    # Mesa's lavapipe compiles shaders with its LLVM, which crashes once TensorFlow has loaded its
    # own into the process; scripts/test_python.sh runs the TensorFlow tests in a pytest of their own.
    pytest.mark.skipif("tensorflow" in sys.modules,
                       reason="TensorFlow is loaded in this process, and lavapipe's LLVM crashes beside it"),
]


def cnn_model() -> bytes:
    """Conv+Relu, MaxPool, GlobalAveragePool, Gemm, Sin (no Vulkan kernel: the CPU), Softmax."""
    rng = np.random.default_rng(5)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")
    fc = numpy_helper.from_array(rng.standard_normal((10, 8)).astype(np.float32), "fc")
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc"], ["z"], transB=1),
        helper.make_node("Sin", ["z"], ["s"]),
        helper.make_node("Softmax", ["s"], ["y"], axis=-1),
    ]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 15, 13])], ["y"],
                      [w, b, fc])


def test_cnn_with_a_cpu_op_matches_onnxruntime():
    model = cnn_model()
    x = np.random.default_rng(6).standard_normal((2, 3, 15, 13)).astype(np.float32)
    session = osprey.InferenceSession(model, backend="vulkan")
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for _ in range(2):  # the second run replays the first's command buffers
        assert_close(session.run(None, {"x": x})[0], ref, "vulkan cnn")


def test_staged_model_matches_onnxruntime():
    model = staged_model()
    x = np.random.default_rng(7).standard_normal((5, 7)).astype(np.float32)
    session = osprey.InferenceSession(model, backend="vulkan")
    refs = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for out, ref, name in zip(session.run(None, {"x": x}), refs, ["y", "z", "pre"]):
        assert_close(out, ref, name)


def test_unknown_device_names_it():
    with pytest.raises(osprey.OspreyError, match="no-such-device"):
        osprey.InferenceSession(cnn_model(), backend="vulkan", vulkan_device="no-such-device")
