"""IoBinding with objects other than numpy arrays: host objects that only speak DLPack, and, on a
machine with CUDA, torch CUDA tensors bound through __cuda_array_interface__ and __dlpack__ and
read and written in place (skipped where torch or a CUDA device is missing)."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import osprey
from conftest import make_model


@pytest.fixture(scope="module")
def mlp_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("binding") / "mlp.onnx")
    w = numpy_helper.from_array(np.random.default_rng(21).standard_normal((7, 3)).astype(np.float32), "w")
    with open(path, "wb") as f:
        f.write(make_model([helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Relu", ["t"], ["y"])],
                           [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 7])],
                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])], [w]))
    return path


class HostDLPack:
    """A host tensor that offers only the DLPack protocol (no __array__)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, stream=None):
        return self._array.__dlpack__()

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_host_dlpack_objects_bind_in_place(mlp_path):
    session = osprey.InferenceSession(mlp_path)
    x = np.random.default_rng(22).standard_normal((4, 7)).astype(np.float32)
    y = np.zeros((4, 3), np.float32)
    binding = session.io_binding()
    binding.bind_input("x", HostDLPack(x))
    binding.bind_output("y", HostDLPack(y))
    session.run_with_iobinding(binding)
    assert np.array_equal(y, session.run(None, {"x": x})[0])


def cuda_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device for torch")
    if "cuda" not in osprey.available_backends():
        pytest.skip("this osprey build has no CUDA backend")
    return torch


@pytest.mark.parametrize("protocol", ["cuda_array_interface", "dlpack"])
def test_torch_cuda_tensors_bind_in_place(mlp_path, protocol):
    torch = cuda_torch()
    session = osprey.InferenceSession(mlp_path, backend="cuda")
    x = torch.randn(5, 7, device="cuda")
    y = torch.full((5, 3), -1.0, device="cuda")

    class DLPackOnly:  # hides __cuda_array_interface__, so the binding reads __dlpack__
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    wrap = (lambda t: t) if protocol == "cuda_array_interface" else DLPackOnly
    binding = session.io_binding()
    binding.bind_input("x", wrap(x))
    binding.bind_output("y", wrap(y))
    session.run_with_iobinding(binding)
    want = session.run(None, {"x": x.cpu().numpy()})[0]
    np.testing.assert_allclose(y.cpu().numpy(), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(osprey.InvalidArgumentError, match="contiguous"):
        session.io_binding().bind_input("x", wrap(torch.randn(7, 5, device="cuda").t()))
