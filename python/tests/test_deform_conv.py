"""DeformConv (opset 19) against torchvision's deform_conv2d, which it follows, on odd shapes with
offsets reaching past the map's edges, groups, offset groups, masks and biases."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import assert_close, make_model
from onnx import TensorProto, helper

import osprey

F = TensorProto.FLOAT


def deform_model(x, w, offset, mask, bias, stride, pad, dilation, group, offset_group):
    names = ["x", "w", "offset", "b" if bias is not None else "", "mask" if mask is not None else ""]
    while names[-1] == "":
        names.pop()
    node = helper.make_node("DeformConv", names, ["y"], strides=[stride, stride], pads=[pad] * 4,
                            dilations=[dilation, dilation], group=group, offset_group=offset_group,
                            kernel_shape=list(w.shape[2:]))
    feeds = {"x": x, "w": w, "offset": offset, "b": bias, "mask": mask}
    inputs = [helper.make_tensor_value_info(n, F, feeds[n].shape) for n in names if n]
    return make_model([node], inputs, ["y"], opset=19), {n: feeds[n] for n in names if n}


@pytest.mark.parametrize("stride,pad,dilation,group,offset_group,with_mask,with_bias",
                         [(1, 1, 1, 1, 1, False, False), (2, 1, 2, 2, 2, True, True), (1, 0, 1, 1, 4, True, False),
                          (3, 2, 1, 2, 1, False, True)])
def test_deform_conv_against_torchvision(stride, pad, dilation, group, offset_group, with_mask, with_bias):
    torch = pytest.importorskip("torch")
    ops = pytest.importorskip("torchvision.ops")
    from caffe_models import to_torch  # Debian's torch and the venv's numpy meet through lists
    rng = np.random.default_rng(stride * 7 + group)
    x = rng.standard_normal((2, 4, 7, 9)).astype(np.float32)
    w = rng.standard_normal((6, 4 // group, 3, 2)).astype(np.float32)
    oh = (7 + 2 * pad - dilation * 2 - 1) // stride + 1
    ow = (9 + 2 * pad - dilation * 1 - 1) // stride + 1
    offset = (rng.standard_normal((2, offset_group * 2 * 6, oh, ow)) * 2.5).astype(np.float32)
    mask = rng.random((2, offset_group * 6, oh, ow)).astype(np.float32) if with_mask else None
    bias = rng.standard_normal(6).astype(np.float32) if with_bias else None
    model, feeds = deform_model(x, w, offset, mask, bias, stride, pad, dilation, group, offset_group)
    got = osprey.InferenceSession(model).run(None, feeds)[0]
    ref = ops.deform_conv2d(to_torch(x), to_torch(offset), to_torch(w), None if bias is None else to_torch(bias),
                            stride=stride, padding=pad, dilation=dilation, mask=None if mask is None else to_torch(mask))
    assert_close(got, np.array(ref.tolist(), np.float32), "DeformConv")
