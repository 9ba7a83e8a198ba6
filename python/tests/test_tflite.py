"""TFLite models (built by tflite_builder.py) run by Osprey and by LiteRT's own interpreter
(ai-edge-litert), compared output by output."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

import tflite_builder
from tflite_builder import ModelBuilder

litert = pytest.importorskip("ai_edge_litert.interpreter", reason="ai-edge-litert is not installed (pip install ai-edge-litert)")
pytest.importorskip("flatbuffers", reason="flatbuffers is not installed (pip install flatbuffers)")
if tflite_builder.generated_module_dir() is None:
    pytest.skip("flatc is not on PATH: the test models cannot be written", allow_module_level=True)

import osprey  # noqa: E402

RELU, RELU_N1_TO_1, RELU6, TANH = 1, 2, 3, 4
SAME, VALID = 0, 1


def reference(model: bytes, feed):
    interp = litert.Interpreter(model_content=model)
    interp.allocate_tensors()
    for detail, value in zip(interp.get_input_details(), feed):
        interp.set_tensor(detail["index"], value)
    interp.invoke()
    return [interp.get_tensor(d["index"]) for d in interp.get_output_details()]


def run_both(m: ModelBuilder, feed, tmp_path, rtol=1e-5, atol=1e-5):
    model = m.build()
    ref = reference(model, feed)
    path = os.path.join(str(tmp_path), "model.tflite")
    with open(path, "wb") as f:
        f.write(model)
    for source in (path, model):
        session = osprey.InferenceSession(source, threads=2)
        names = [i.name for i in session.get_inputs()]
        out = session.run(None, dict(zip(names, feed)))
        assert len(out) == len(ref)
        for o, r in zip(out, ref):
            assert o.shape == r.shape, "shape %s != %s" % (o.shape, r.shape)
            assert o.dtype == r.dtype, "dtype %s != %s" % (o.dtype, r.dtype)
            np.testing.assert_allclose(o, r, rtol=rtol, atol=atol)
    return path


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def randn(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("padding,stride,dilation,act", [(SAME, 1, 1, 0), (SAME, 2, 1, RELU), (VALID, 2, 1, RELU6),
                                                         (SAME, 1, 2, TANH), (VALID, 1, 2, RELU_N1_TO_1), (SAME, 3, 1, 0)])
def test_conv2d(rng, tmp_path, padding, stride, dilation, act):
    m = ModelBuilder()
    x = m.input([2, 13, 11, 3])
    w = m.const(randn(rng, 5, 3, 2, 3))
    b = m.const(randn(rng, 5))
    y = m.output(m.tensor([0]))
    m.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", padding=padding, stride_w=stride, stride_h=stride,
         dilation_w_factor=dilation, dilation_h_factor=dilation, fused_activation_function=act)
    fix_shape(m, y, reference_shape(m, [randn(rng, 2, 13, 11, 3)]))
    run_both(m, [randn(rng, 2, 13, 11, 3)], tmp_path)


def reference_shape(m, feed):
    return reference(m.build(), feed)[0].shape


def fix_shape(m, t, shape):
    m.tensors[t]["shape"] = list(shape)


@pytest.mark.parametrize("multiplier,padding,stride", [(1, SAME, 1), (2, VALID, 2), (3, SAME, 2)])
def test_depthwise_conv(rng, tmp_path, multiplier, padding, stride):
    m = ModelBuilder()
    x = m.input([1, 9, 12, 4])
    w = m.const(randn(rng, 1, 3, 3, 4 * multiplier))
    b = m.const(randn(rng, 4 * multiplier))
    y = m.output(m.tensor([0]))
    m.op("DEPTHWISE_CONV_2D", [x, w, b], [y], "DepthwiseConv2DOptions", padding=padding, stride_w=stride,
         stride_h=stride, depth_multiplier=multiplier, fused_activation_function=RELU6)
    feed = [randn(rng, 1, 9, 12, 4)]
    fix_shape(m, y, reference_shape(m, feed))
    run_both(m, feed, tmp_path)


@pytest.mark.parametrize("padding,stride", [(SAME, 2), (VALID, 2), (SAME, 1)])
def test_transpose_conv(rng, tmp_path, padding, stride):
    m = ModelBuilder()
    x = m.input([1, 5, 7, 3])
    out_h = 5 * stride if padding == SAME else (5 - 1) * stride + 3
    out_w = 7 * stride if padding == SAME else (7 - 1) * stride + 3
    shape = m.const(np.array([1, out_h, out_w, 4], np.int32))
    w = m.const(randn(rng, 4, 3, 3, 3))
    y = m.output(m.tensor([1, out_h, out_w, 4]))
    m.op("TRANSPOSE_CONV", [shape, w, x], [y], "TransposeConvOptions", padding=padding, stride_w=stride, stride_h=stride)
    run_both(m, [randn(rng, 1, 5, 7, 3)], tmp_path)


@pytest.mark.parametrize("code", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
@pytest.mark.parametrize("padding,stride,size", [(SAME, 2, 3), (VALID, 2, 2), (SAME, 1, 3)])
def test_pool(rng, tmp_path, code, padding, stride, size):
    m = ModelBuilder()
    x = m.input([2, 11, 9, 3])
    y = m.output(m.tensor([0]))
    m.op(code, [x], [y], "Pool2DOptions", padding=padding, stride_w=stride, stride_h=stride, filter_width=size,
         filter_height=size)
    feed = [randn(rng, 2, 11, 9, 3)]
    fix_shape(m, y, reference_shape(m, feed))
    run_both(m, feed, tmp_path)


@pytest.mark.parametrize("keep", [False, True])
def test_fully_connected(rng, tmp_path, keep):
    m = ModelBuilder()
    x = m.input([2, 3, 13])
    w = m.const(randn(rng, 7, 13))
    b = m.const(randn(rng, 7))
    y = m.output(m.tensor([2, 3, 7] if keep else [6, 7]))
    m.op("FULLY_CONNECTED", [x, w, b], [y], "FullyConnectedOptions", keep_num_dims=keep, fused_activation_function=RELU)
    run_both(m, [randn(rng, 2, 3, 13)], tmp_path)


@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, False), (False, True)])
def test_batch_matmul(rng, tmp_path, adj_x, adj_y):
    m = ModelBuilder()
    a_shape = [2, 7, 5] if adj_x else [2, 5, 7]
    b_shape = [2, 3, 7] if adj_y else [2, 7, 3]
    a, b = m.input(a_shape), m.input(b_shape)
    y = m.output(m.tensor([2, 5, 3]))
    m.op("BATCH_MATMUL", [a, b], [y], "BatchMatMulOptions", adj_x=adj_x, adj_y=adj_y)
    run_both(m, [randn(rng, *a_shape), randn(rng, *b_shape)], tmp_path)


BINARY = [("ADD", "AddOptions"), ("SUB", "SubOptions"), ("MUL", "MulOptions"), ("DIV", "DivOptions"),
          ("MAXIMUM", None), ("MINIMUM", None), ("SQUARED_DIFFERENCE", None)]


@pytest.mark.parametrize("code,options", BINARY)
def test_binary_broadcast(rng, tmp_path, code, options):
    m = ModelBuilder()
    a, b = m.input([2, 5, 1, 3]), m.input([4, 3])
    y = m.output(m.tensor([2, 5, 4, 3]))
    fields = {"fused_activation_function": RELU} if options else {}
    m.op(code, [a, b], [y], options, **fields)
    feed = [randn(rng, 2, 5, 1, 3), randn(rng, 4, 3) + (3 if code == "DIV" else 0)]
    run_both(m, feed, tmp_path)


UNARY = ["RELU", "RELU6", "RELU_N1_TO_1", "LOGISTIC", "TANH", "EXP", "HARD_SWISH", "ELU", "ABS", "NEG"]


@pytest.mark.parametrize("code", UNARY)
def test_unary(rng, tmp_path, code):
    m = ModelBuilder()
    x = m.input([3, 7, 5])
    y = m.output(m.tensor([3, 7, 5]))
    m.op(code, [x], [y])
    run_both(m, [randn(rng, 3, 7, 5) * 3], tmp_path)


@pytest.mark.parametrize("code", ["SQRT", "RSQRT", "LOG"])
def test_positive_unary(rng, tmp_path, code):
    m = ModelBuilder()
    x = m.input([3, 7, 5])
    y = m.output(m.tensor([3, 7, 5]))
    m.op(code, [x], [y])
    run_both(m, [np.abs(randn(rng, 3, 7, 5)) + 0.1], tmp_path)


def test_leaky_relu_gelu_prelu(rng, tmp_path):
    m = ModelBuilder()
    x = m.input([2, 5, 7, 3])
    a, g, p = m.tensor([2, 5, 7, 3]), m.tensor([2, 5, 7, 3]), m.output(m.tensor([2, 5, 7, 3]))
    m.op("LEAKY_RELU", [x], [a], "LeakyReluOptions", alpha=0.2)
    m.op("GELU", [a], [g], "GeluOptions", approximate=False)
    m.op("PRELU", [g, m.const(randn(rng, 1, 1, 3))], [p])
    run_both(m, [randn(rng, 2, 5, 7, 3)], tmp_path, atol=1e-5)


@pytest.mark.parametrize("beta", [1.0, 0.5])
def test_softmax(rng, tmp_path, beta):
    m = ModelBuilder()
    x = m.input([3, 11])
    y = m.output(m.tensor([3, 11]))
    m.op("SOFTMAX", [x], [y], "SoftmaxOptions", beta=beta)
    run_both(m, [randn(rng, 3, 11) * 3], tmp_path)


@pytest.mark.parametrize("code", ["MEAN", "SUM", "REDUCE_MAX"])
@pytest.mark.parametrize("axes,keep", [([1, 2], False), ([1, 2], True), ([3], False), ([0, 2], True)])
def test_reduce(rng, tmp_path, code, axes, keep):
    m = ModelBuilder()
    x = m.input([2, 5, 7, 3])
    ref_shape = list(np.sum(np.zeros([2, 5, 7, 3]), axis=tuple(axes), keepdims=keep).shape)
    y = m.output(m.tensor(ref_shape))
    m.op(code, [x, m.const(np.array(axes, np.int32))], [y], "ReducerOptions", keep_dims=keep)
    run_both(m, [randn(rng, 2, 5, 7, 3)], tmp_path)


def test_reshape_squeeze_expand_transpose(rng, tmp_path):
    m = ModelBuilder()
    x = m.input([2, 3, 4, 5])
    r, s, e, t = m.tensor([6, 1, 20]), m.tensor([6, 20]), m.tensor([6, 20, 1]), m.output(m.tensor([20, 1, 6]))
    m.op("RESHAPE", [x, m.const(np.array([6, 1, 20], np.int32))], [r])
    m.op("SQUEEZE", [r], [s], "SqueezeOptions", squeeze_dims=[1])
    m.op("EXPAND_DIMS", [s, m.const(np.array([2], np.int32))], [e])
    m.op("TRANSPOSE", [e, m.const(np.array([1, 2, 0], np.int32))], [t])
    run_both(m, [randn(rng, 2, 3, 4, 5)], tmp_path)


def test_concat_split_pack_unpack(rng, tmp_path):
    m = ModelBuilder()
    a, b = m.input([2, 3, 5]), m.input([2, 4, 5])
    c = m.tensor([2, 7, 5])
    m.op("CONCATENATION", [a, b], [c], "ConcatenationOptions", axis=1)
    parts = [m.tensor([2, 7, 1]) for _ in range(5)]
    m.op("SPLIT", [m.const(np.array([2], np.int32)), c], parts, "SplitOptions", num_splits=5)
    v = [m.output(m.tensor([2, 2, 5])), m.output(m.tensor([2, 5, 5]))]
    m.op("SPLIT_V", [c, m.const(np.array([2, -1], np.int32)), m.const(np.array([1], np.int32))], v, "SplitVOptions",
         num_splits=2)
    packed = m.output(m.tensor([2, 7, 2]))
    m.op("PACK", [parts[0], parts[4]], [packed], "PackOptions", values_count=2, axis=2)
    rows = [m.output(m.tensor([7, 5])) for _ in range(2)]
    m.op("UNPACK", [c], rows, "UnpackOptions", num=2, axis=0)
    run_both(m, [randn(rng, 2, 3, 5), randn(rng, 2, 4, 5)], tmp_path)


@pytest.mark.parametrize("begin,end,strides,masks", [
    ([0, 1, 0, 0], [1, 5, 7, 3], [1, 2, 1, 1], {}),
    ([0, -1, 0, 1], [0, 0, 0, 3], [1, -1, 2, 1], {"begin_mask": 1, "end_mask": 3}),
    ([0, 2, 0, 0], [0, 3, 0, 0], [1, 1, 1, 1], {"shrink_axis_mask": 2, "begin_mask": 13, "end_mask": 13}),
    ([1, 0], [2, 3], [1, 1], {"ellipsis_mask": 1}),
    ([0, 0, 1], [0, 0, 4], [1, 1, 1], {"new_axis_mask": 1, "begin_mask": 2, "end_mask": 2}),
])
def test_strided_slice(rng, tmp_path, begin, end, strides, masks):
    m = ModelBuilder()
    x = m.input([2, 5, 7, 3])
    y = m.output(m.tensor([0]))
    m.op("STRIDED_SLICE", [x, m.const(np.array(begin, np.int32)), m.const(np.array(end, np.int32)),
                           m.const(np.array(strides, np.int32))], [y], "StridedSliceOptions", **masks)
    feed = [randn(rng, 2, 5, 7, 3)]
    fix_shape(m, y, reference_shape(m, feed))
    run_both(m, feed, tmp_path)


def test_slice_gather_pad_tile(rng, tmp_path):
    m = ModelBuilder()
    x = m.input([2, 5, 7, 3])
    s, g = m.output(m.tensor([1, 3, 7, 2])), m.output(m.tensor([2, 5, 4, 3]))
    m.op("SLICE", [x, m.const(np.array([1, 1, 0, 1], np.int32)), m.const(np.array([1, 3, -1, 2], np.int32))], [s])
    m.op("GATHER", [x, m.const(np.array([6, 0, 2, 2], np.int32))], [g], "GatherOptions", axis=2)
    p = m.output(m.tensor([3, 8, 9, 3]))
    m.op("PADV2", [x, m.const(np.array([[0, 1], [2, 1], [1, 1], [0, 0]], np.int32)), m.const(np.array(1.5, np.float32))], [p])
    r = m.output(m.tensor([2, 7, 9, 3]))
    m.op("MIRROR_PAD", [x, m.const(np.array([[0, 0], [1, 1], [2, 0], [0, 0]], np.int32))], [r], "MirrorPadOptions", mode=0)
    t = m.output(m.tensor([4, 5, 14, 3]))
    m.op("TILE", [x, m.const(np.array([2, 1, 2, 1], np.int32))], [t])
    # SYMMETRIC repeats the edge: pads up to the axis' size, on three axes at once.
    sym = m.output(m.tensor([3, 10, 14, 4]))
    m.op("MIRROR_PAD", [x, m.const(np.array([[1, 0], [0, 5], [7, 0], [0, 1]], np.int32))], [sym], "MirrorPadOptions",
         mode=1)
    run_both(m, [randn(rng, 2, 5, 7, 3)], tmp_path)


@pytest.mark.parametrize("code,options,align,half", [
    ("RESIZE_BILINEAR", "ResizeBilinearOptions", False, False), ("RESIZE_BILINEAR", "ResizeBilinearOptions", True, False),
    ("RESIZE_BILINEAR", "ResizeBilinearOptions", False, True),
    ("RESIZE_NEAREST_NEIGHBOR", "ResizeNearestNeighborOptions", False, False),
    ("RESIZE_NEAREST_NEIGHBOR", "ResizeNearestNeighborOptions", True, False),
    ("RESIZE_NEAREST_NEIGHBOR", "ResizeNearestNeighborOptions", False, True)])
def test_resize(rng, tmp_path, code, options, align, half):
    m = ModelBuilder()
    x = m.input([1, 5, 7, 3])
    y = m.output(m.tensor([1, 11, 9, 3]))
    m.op(code, [x, m.const(np.array([11, 9], np.int32))], [y], options, align_corners=align, half_pixel_centers=half)
    run_both(m, [randn(rng, 1, 5, 7, 3)], tmp_path)


def test_space_depth_argmax_cast(rng, tmp_path):
    m = ModelBuilder()
    x = m.input([1, 4, 6, 3])
    d = m.output(m.tensor([1, 2, 3, 12]))
    m.op("SPACE_TO_DEPTH", [x], [d], "SpaceToDepthOptions", block_size=2)
    s = m.output(m.tensor([1, 4, 6, 3]))
    m.op("DEPTH_TO_SPACE", [d], [s], "DepthToSpaceOptions", block_size=2)
    a = m.output(m.tensor([1, 4, 6], np.int32))
    m.op("ARG_MAX", [x, m.const(np.array([3], np.int32))], [a], "ArgMaxOptions", output_type=2)
    a2 = m.output(m.tensor([1, 6, 3], np.int64))
    m.op("ARG_MIN", [x, m.const(np.array([1], np.int32))], [a2], "ArgMinOptions", output_type=4)
    c = m.output(m.tensor([1, 4, 6, 3], np.int32))
    m.op("CAST", [x], [c])
    sh = m.output(m.tensor([4], np.int32))
    m.op("SHAPE", [d], [sh], "ShapeOptions", out_type=2)
    run_both(m, [randn(rng, 1, 4, 6, 3) * 4], tmp_path)


def test_fp16_weights_dequantize(rng, tmp_path):
    m = ModelBuilder()
    x = m.input([1, 6, 6, 3])
    w16 = m.const(randn(rng, 4, 3, 3, 3).astype(np.float16))
    w = m.tensor([4, 3, 3, 3])
    m.op("DEQUANTIZE", [w16], [w])
    y = m.output(m.tensor([1, 6, 6, 4]))
    m.op("CONV_2D", [x, w, m.const(randn(rng, 4))], [y], "Conv2DOptions", padding=SAME, stride_w=1, stride_h=1)
    run_both(m, [randn(rng, 1, 6, 6, 3)], tmp_path)


def sparse_weights(rng, *shape, keep=0.3):
    w = randn(rng, *shape)
    return w * (rng.uniform(size=shape) < keep)


@pytest.mark.parametrize("formats,block_map,block_sizes", [("DS", [], []), ("SD", [], []), ("SS", [], []),
                                                           ("DSD", [1], [4]), ("DSDD", [0, 1], [2, 4])])
def test_sparse_weights_densify(rng, tmp_path, formats, block_map, block_sizes):
    m = ModelBuilder()
    x = m.input([3, 12])
    ws = m.sparse_const(sparse_weights(rng, 8, 12), formats, block_map, block_sizes)
    w = m.tensor([8, 12])
    m.op("DENSIFY", [ws], [w])
    y = m.output(m.tensor([3, 8]))
    m.op("FULLY_CONNECTED", [x, w, m.const(randn(rng, 8))], [y], "FullyConnectedOptions")
    run_both(m, [randn(rng, 3, 12)], tmp_path)


def test_sparse_fp16_conv_weights(rng, tmp_path):
    """MediaPipe's sparse detectors: fp16 1x1 conv weights, CSR over the input channels."""
    m = ModelBuilder()
    x = m.input([1, 5, 7, 16])
    ws = m.sparse_const(sparse_weights(rng, 8, 1, 1, 16).astype(np.float16), "DDDS")
    w16, w = m.tensor([8, 1, 1, 16], np.float16), m.tensor([8, 1, 1, 16])
    m.op("DENSIFY", [ws], [w16])
    m.op("DEQUANTIZE", [w16], [w])
    y = m.output(m.tensor([1, 5, 7, 8]))
    m.op("CONV_2D", [x, w, m.const(randn(rng, 8))], [y], "Conv2DOptions", padding=SAME, stride_w=1, stride_h=1)
    run_both(m, [randn(rng, 1, 5, 7, 16)], tmp_path)


def test_corrupt_sparsity_is_an_error(rng, tmp_path):
    m = ModelBuilder()
    x = m.input([3, 12])
    ws = m.sparse_const(sparse_weights(rng, 8, 12), "DS", name="weights")
    m.tensors[ws]["sparsity"]["levels"][1][3][0] = 12  # a column index past the 12 columns
    w = m.tensor([8, 12])
    m.op("DENSIFY", [ws], [w])
    y = m.output(m.tensor([3, 8]))
    m.op("FULLY_CONNECTED", [x, w], [y], "FullyConnectedOptions")
    with pytest.raises(Exception, match="sparse constant tensor 'weights': sparsity level 1: index 12 is outside its size 12"):
        osprey.InferenceSession(m.build())


@pytest.mark.parametrize("padding,stride", [(1, 2), (2, 2), (1, 1)])
def test_mediapipe_transpose_conv_bias(rng, tmp_path, padding, stride):
    """The custom op Convolution2DTransposeBias (MediaPipe; LiteRT runs it in XNNPACK)."""
    m = ModelBuilder()
    x = m.input([1, 5, 7, 3])
    out_h = 5 * stride if padding == 1 else (5 - 1) * stride + 3
    out_w = 7 * stride if padding == 1 else (7 - 1) * stride + 3
    y = m.output(m.tensor([1, out_h, out_w, 4]))
    options = np.array([padding, stride, stride], np.int32).tobytes()
    m.op("CUSTOM", [x, m.const(randn(rng, 4, 3, 3, 3)), m.const(randn(rng, 4))], [y],
         custom_code="Convolution2DTransposeBias", custom_options=options)
    run_both(m, [randn(rng, 1, 5, 7, 3)], tmp_path)


def test_gather_nd_embedding_lookup(rng, tmp_path):
    m = ModelBuilder()
    x = m.input([4, 5, 3])
    ids = m.input([6], np.int32)
    g = m.output(m.tensor([3, 3]))
    m.op("GATHER_ND", [x, m.const(np.array([[0, 1], [3, 4], [2, 0]], np.int32))], [g])
    e = m.output(m.tensor([6, 5, 3]))
    m.op("EMBEDDING_LOOKUP", [ids, x], [e])
    run_both(m, [randn(rng, 4, 5, 3), np.array([3, 0, 1, 1, 2, 3], np.int32)], tmp_path)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_scatter_nd(rng, tmp_path, dtype):
    """Whole rows and single elements; repeated indices add up, as in TFLite."""
    m = ModelBuilder()
    updates_rows = m.input([4, 5], dtype)
    updates_cells = m.input([6], dtype)
    rows, cells = m.output(m.tensor([3, 5], dtype)), m.output(m.tensor([3, 5], dtype))
    m.op("SCATTER_ND", [m.const(np.array([[2], [0], [2], [1]], np.int32)), updates_rows,
                        m.const(np.array([3, 5], np.int32))], [rows])
    m.op("SCATTER_ND", [m.const(np.array([[0, 4], [2, 2], [0, 4], [1, 0], [2, 2], [2, 2]], np.int32)), updates_cells,
                        m.const(np.array([3, 5], np.int32))], [cells])
    feed = [(randn(rng, 4, 5) * 4).astype(dtype), (randn(rng, 6) * 4).astype(dtype)]
    run_both(m, feed, tmp_path)


def test_topk_cumsum_broadcast_zeros_like(rng, tmp_path):
    m = ModelBuilder()
    x = m.input([3, 11])
    values, indices = m.output(m.tensor([3, 4])), m.output(m.tensor([3, 4], np.int32))
    m.op("TOPK_V2", [x, m.const(np.array(4, np.int32))], [values, indices])
    for exclusive, reverse in [(False, False), (True, False), (False, True), (True, True)]:
        c = m.output(m.tensor([3, 11]))
        m.op("CUMSUM", [x, m.const(np.array(1, np.int32))], [c], "CumsumOptions", exclusive=exclusive, reverse=reverse)
    b = m.output(m.tensor([2, 3, 11]))
    m.op("BROADCAST_TO", [x, m.const(np.array([2, 3, 11], np.int32))], [b], version=2)
    z = m.output(m.tensor([3, 11]))
    m.op("ZEROS_LIKE", [x], [z])
    feed = randn(rng, 3, 11)
    feed[1, 3] = feed[1, 7]  # a tie: the lower index comes first
    run_both(m, [feed], tmp_path)


def test_select_v1_rows(rng, tmp_path):
    m = ModelBuilder()
    cond = m.input([4], np.bool_)
    x, y = m.input([4, 3]), m.input([4, 3])
    out = m.output(m.tensor([4, 3]))
    m.op("SELECT", [cond, x, y], [out])
    run_both(m, [np.array([True, False, False, True]), randn(rng, 4, 3), randn(rng, 4, 3)], tmp_path)


@pytest.mark.parametrize("time_major,peephole,activation", [(False, False, TANH), (True, True, TANH),
                                                              (False, True, RELU)])
def test_unidirectional_sequence_lstm(rng, tmp_path, time_major, peephole, activation):
    batch, steps, features, units = 2, 7, 5, 6
    m = ModelBuilder()
    x = m.input([steps, batch, features] if time_major else [batch, steps, features])
    ins = [x]
    ins += [m.const(randn(rng, units, features) * 0.5) for _ in range(4)]
    ins += [m.const(randn(rng, units, units) * 0.5) for _ in range(4)]
    ins += [m.const(randn(rng, units) * 0.5) for _ in range(3)] if peephole else [-1, -1, -1]
    ins += [m.const(randn(rng, units)) for _ in range(4)]
    ins += [-1, -1, m.variable([batch, units]), m.variable([batch, units])]
    y = m.output(m.tensor([steps, batch, units] if time_major else [batch, steps, units]))
    m.op("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [y], "UnidirectionalSequenceLSTMOptions",
         fused_activation_function=activation, time_major=time_major)
    run_both(m, [randn(rng, *([steps, batch, features] if time_major else [batch, steps, features]))], tmp_path)


@pytest.mark.parametrize("time_major,merge,peephole,activation", [(True, True, False, TANH), (False, True, True, TANH),
                                                                    (True, False, True, RELU), (False, False, False, TANH)])
def test_bidirectional_sequence_lstm(rng, tmp_path, time_major, merge, peephole, activation):
    """LiteRT's batch-major BIDIRECTIONAL_SEQUENCE_LSTM reads memory it never wrote (its outputs
    change from process to process), so a batch-major model is held to LiteRT's result for its
    time-major twin (the same weights, the input and outputs transposed)."""
    batch, steps, features, units = 2, 6, 5, 4

    def direction():
        ins = [randn(rng, units, features) * 0.5 for _ in range(4)] + [randn(rng, units, units) * 0.5 for _ in range(4)]
        ins += [randn(rng, units) * 0.5 for _ in range(3)] if peephole else [None] * 3
        return ins + [randn(rng, units) for _ in range(4)] + [None, None]

    weights = direction() + direction()

    def build(major):
        m = ModelBuilder()
        shape = [steps, batch] if major else [batch, steps]
        ins = [m.input(shape + [features])] + [-1 if w is None else m.const(w) for w in weights]
        ins += [m.variable([batch, units]) for _ in range(4)]  # forward h, c; backward h, c
        ins += [-1] * 9  # no auxiliary input
        outs = [m.output(m.tensor(shape + [2 * units]))] if merge else [m.output(m.tensor(shape + [units])) for _ in range(2)]
        m.op("BIDIRECTIONAL_SEQUENCE_LSTM", ins, outs, "BidirectionalSequenceLSTMOptions",
             fused_activation_function=activation, merge_outputs=merge, time_major=major)
        return m

    x = randn(rng, *([steps, batch, features] if time_major else [batch, steps, features]))
    if time_major:
        run_both(build(True), [x], tmp_path)
        return
    want = [np.swapaxes(r, 0, 1) for r in reference(build(True).build(), [np.swapaxes(x, 0, 1).copy()])]
    session = osprey.InferenceSession(build(False).build(), threads=2)
    got = session.run(None, {session.get_inputs()[0].name: x})
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def while_model(body_index=2):
    """v, i = WHILE(v, i): i < 5 (subgraph 1); v = v * 1.5 + 1, i = i + 1 (subgraph 2)."""
    m = ModelBuilder()
    v, i = m.input([2, 3]), m.input([], np.int32)
    v_out, i_out = m.output(m.tensor([2, 3])), m.output(m.tensor([], np.int32))
    m.op("WHILE", [v, i], [v_out, i_out], "WhileOptions", cond_subgraph_index=1, body_subgraph_index=body_index)
    cond = m.subgraph()
    cv, ci = cond.input([2, 3]), cond.input([], np.int32)
    cond.op("LESS", [ci, cond.const(np.array(5, np.int32))], [cond.output(cond.tensor([], np.bool_))])
    body = m.subgraph()
    bv, bi = body.input([2, 3]), body.input([], np.int32)
    scaled = body.tensor([2, 3])
    body.op("MUL", [bv, body.const(np.full([2, 3], 1.5, np.float32))], [scaled], "MulOptions")
    body.op("ADD", [scaled, body.const(np.ones([2, 3], np.float32))], [body.output(body.tensor([2, 3]))], "AddOptions")
    body.op("ADD", [bi, body.const(np.array(1, np.int32))], [body.output(body.tensor([], np.int32))], "AddOptions")
    return m


@pytest.mark.parametrize("start", [0, 3, 7])
def test_while(rng, tmp_path, start):
    run_both(while_model(), [randn(rng, 2, 3), np.array(start, np.int32)], tmp_path)


def test_if(rng, tmp_path):
    m = ModelBuilder()
    c, x = m.input([], np.bool_), m.input([4])
    m.op("IF", [c, x], [m.output(m.tensor([4]))], "IfOptions", then_subgraph_index=1, else_subgraph_index=2)
    for code in ("EXP", "NEG"):
        branch = m.subgraph()
        branch.op(code, [branch.input([4])], [branch.output(branch.tensor([4]))])
    for flag in (True, False):
        run_both(m, [np.array(flag), randn(rng, 4)], tmp_path)


def test_recursive_subgraph_is_an_error(tmp_path):
    with pytest.raises(osprey.InvalidModelError, match="subgraph 0 calls itself"):
        osprey.InferenceSession(while_model(body_index=0).build())
    with pytest.raises(osprey.InvalidModelError, match="subgraph 9 does not exist; the model has 3 subgraphs"):
        osprey.InferenceSession(while_model(body_index=9).build())


def cnn(rng):
    """conv -> depthwise -> pool -> add -> concat -> mean -> fully connected -> softmax."""
    m = ModelBuilder()
    x = m.input([1, 16, 16, 3], name="image")
    c1 = m.tensor([1, 8, 8, 8])
    m.op("CONV_2D", [x, m.const(randn(rng, 8, 3, 3, 3)), m.const(randn(rng, 8))], [c1], "Conv2DOptions",
         padding=SAME, stride_w=2, stride_h=2, fused_activation_function=RELU6)
    d1 = m.tensor([1, 8, 8, 8])
    m.op("DEPTHWISE_CONV_2D", [c1, m.const(randn(rng, 1, 3, 3, 8)), m.const(randn(rng, 8))], [d1],
         "DepthwiseConv2DOptions", padding=SAME, stride_w=1, stride_h=1, depth_multiplier=1, fused_activation_function=RELU)
    s = m.tensor([1, 8, 8, 8])
    m.op("ADD", [c1, d1], [s], "AddOptions")
    b = m.tensor([1, 8, 8, 8])
    m.op("MUL", [s, m.const(randn(rng, 8))], [b], "MulOptions")
    p = m.tensor([1, 4, 4, 8])
    m.op("MAX_POOL_2D", [b], [p], "Pool2DOptions", padding=VALID, stride_w=2, stride_h=2, filter_width=2, filter_height=2)
    q = m.tensor([1, 4, 4, 8])
    m.op("AVERAGE_POOL_2D", [b], [q], "Pool2DOptions", padding=SAME, stride_w=2, stride_h=2, filter_width=3, filter_height=3)
    cat = m.tensor([1, 4, 4, 16])
    m.op("CONCATENATION", [p, q], [cat], "ConcatenationOptions", axis=3)
    mean = m.tensor([1, 16])
    m.op("MEAN", [cat, m.const(np.array([1, 2], np.int32))], [mean], "ReducerOptions", keep_dims=False)
    fc = m.tensor([1, 10])
    m.op("FULLY_CONNECTED", [mean, m.const(randn(rng, 10, 16)), m.const(randn(rng, 10))], [fc], "FullyConnectedOptions")
    y = m.output(m.tensor([1, 10], name="probabilities"))
    m.op("SOFTMAX", [fc], [y], "SoftmaxOptions", beta=1.0)
    return m


def test_cnn_transposes(rng, tmp_path):
    m = cnn(rng)
    path = run_both(m, [randn(rng, 1, 16, 16, 3)], tmp_path)
    bin_dir = os.path.join(os.path.dirname(osprey.__file__), "_bin", "osprey")
    if os.path.exists(bin_dir):
        info = subprocess.run([bin_dir, "info", path], capture_output=True, text=True, check=True).stdout
        transposes = [line for line in info.splitlines() if line.strip().startswith("Transpose ")]
        count = int(transposes[0].split()[1]) if transposes else 0
        assert count <= 2, info
    osp = os.path.join(str(tmp_path), "model.osp")
    osprey.convert(path, osp)
    session = osprey.InferenceSession(osp, threads=2)
    feed = randn(rng, 1, 16, 16, 3)
    np.testing.assert_allclose(session.run(None, {"image": feed})[0], reference(m.build(), [feed])[0], rtol=1e-5, atol=1e-5)


def test_signature_names(rng, tmp_path):
    m = ModelBuilder()
    x = m.input([2, 3], name="serving_default_x:0")
    y = m.output(m.tensor([2, 3], name="StatefulPartitionedCall:0"))
    m.op("RELU", [x], [y])
    m.signature = ([("x", x)], [("y", y)])
    path = os.path.join(str(tmp_path), "sig.tflite")
    with open(path, "wb") as f:
        f.write(m.build())
    session = osprey.InferenceSession(path)
    feed = randn(rng, 2, 3)
    np.testing.assert_array_equal(session.run(["y"], {"x": feed})[0], np.maximum(feed, 0))


def test_unsupported_ops_listed(tmp_path):
    m = ModelBuilder()
    x = m.input([2, 3])
    a, b, c, d = m.tensor([2, 3]), m.tensor([2, 3]), m.tensor([2, 3]), m.output(m.tensor([2, 3]))
    m.op("LSH_PROJECTION", [x], [a])
    m.op("LSH_PROJECTION", [a], [b])
    m.op("CUSTOM", [b], [c], custom_code="MyCustomOp")
    m.op("RELU", [c], [d])
    path = os.path.join(str(tmp_path), "bad.tflite")
    with open(path, "wb") as f:
        f.write(m.build())
    with pytest.raises(osprey.UnsupportedError) as e:
        osprey.InferenceSession(path)
    assert "LSH_PROJECTION x2" in str(e.value) and "custom 'MyCustomOp' x1" in str(e.value)


def after_conv(rng, m, shape=(2, 7, 9, 3)):
    """A conv, so that the op under test reads a value Osprey holds NCHW."""
    x = m.input(list(shape))
    c = m.tensor(list(shape))
    m.op("CONV_2D", [x, m.const(randn(rng, shape[3], 1, 1, shape[3])), m.const(randn(rng, shape[3]))], [c],
         "Conv2DOptions", padding=SAME, stride_w=1, stride_h=1)
    return c


def i32(*values):
    return np.array(values, np.int32)


LAYOUT_CASES = {
    "pad": lambda m, c: m.op("PAD", [c, m.const(i32([0, 0], [1, 2], [0, 1], [2, 1]))], [m.output(m.tensor([0]))]),
    "mirror_pad": lambda m, c: m.op("MIRROR_PAD", [c, m.const(i32([0, 0], [1, 2], [2, 1], [0, 0]))],
                                    [m.output(m.tensor([0]))], "MirrorPadOptions", mode=0),
    "mirror_pad_symmetric": lambda m, c: m.op("MIRROR_PAD", [c, m.const(i32([0, 0], [3, 1], [0, 2], [1, 1]))],
                                              [m.output(m.tensor([0]))], "MirrorPadOptions", mode=1),
    "strided_slice": lambda m, c: m.op("STRIDED_SLICE", [c, m.const(i32(0, 1, 0, 1)), m.const(i32(2, 6, 9, 3)),
                                                         m.const(i32(1, 2, 3, 1))], [m.output(m.tensor([0]))],
                                       "StridedSliceOptions", end_mask=4),
    "strided_slice_shrink": lambda m, c: m.op("STRIDED_SLICE", [c, m.const(i32(0, 2, 0, 0)), m.const(i32(0, 3, 0, 0)),
                                                                m.const(i32(1, 1, 1, 1))], [m.output(m.tensor([0]))],
                                              "StridedSliceOptions", begin_mask=13, end_mask=13, shrink_axis_mask=2),
    "slice": lambda m, c: m.op("SLICE", [c, m.const(i32(1, 0, 2, 1)), m.const(i32(1, 5, -1, 2))], [m.output(m.tensor([1, 5, 7, 2]))]),
    "gather_width": lambda m, c: m.op("GATHER", [c, m.const(i32(8, 0, 3))], [m.output(m.tensor([0]))], "GatherOptions", axis=2),
    "gather_scalar": lambda m, c: m.op("GATHER", [c, m.const(np.array(2, np.int32))], [m.output(m.tensor([0]))],
                                       "GatherOptions", axis=-1),
    "split_channels": lambda m, c: m.op("SPLIT", [m.const(i32(3)), c], [m.output(m.tensor([0])) for _ in range(3)],
                                        "SplitOptions", num_splits=3),
    "split_v_height": lambda m, c: m.op("SPLIT_V", [c, m.const(i32(2, 5)), m.const(i32(1))],
                                        [m.output(m.tensor([0])) for _ in range(2)], "SplitVOptions", num_splits=2),
    "tile": lambda m, c: m.op("TILE", [c, m.const(i32(1, 2, 1, 3))], [m.output(m.tensor([0]))]),
    "mean_keep": lambda m, c: m.op("MEAN", [c, m.const(i32(1, 2))], [m.output(m.tensor([0]))], "ReducerOptions", keep_dims=True),
    "sum_height": lambda m, c: m.op("SUM", [c, m.const(i32(1))], [m.output(m.tensor([0]))], "ReducerOptions", keep_dims=False),
    "max_channels": lambda m, c: m.op("REDUCE_MAX", [c, m.const(i32(-1))], [m.output(m.tensor([0]))], "ReducerOptions"),
    "softmax": lambda m, c: m.op("SOFTMAX", [c], [m.output(m.tensor([0]))], "SoftmaxOptions", beta=1.5),
    "log_softmax": lambda m, c: m.op("LOG_SOFTMAX", [c], [m.output(m.tensor([0]))]),
    "l2_normalization": lambda m, c: m.op("L2_NORMALIZATION", [c], [m.output(m.tensor([0]))], "L2NormOptions"),
    "transpose": lambda m, c: m.op("TRANSPOSE", [c, m.const(i32(2, 0, 3, 1))], [m.output(m.tensor([0]))]),
    "reshape": lambda m, c: m.op("RESHAPE", [c, m.const(i32(2, -1))], [m.output(m.tensor([0]))]),
    "shape": lambda m, c: m.op("SHAPE", [c], [m.output(m.tensor([4], np.int32))], "ShapeOptions", out_type=2),
    "arg_max_width": lambda m, c: m.op("ARG_MAX", [c, m.const(i32(2))], [m.output(m.tensor([0], np.int64))],
                                       "ArgMaxOptions", output_type=4),
    "add_channel_constant": lambda m, c: m.op("ADD", [c, m.const(np.float32([1, -2, 3]))], [m.output(m.tensor([0]))], "AddOptions"),
    "mul_row_constant": lambda m, c: m.op("MUL", [c, m.const(np.arange(27, dtype=np.float32).reshape(9, 3))],
                                          [m.output(m.tensor([0]))], "MulOptions"),
    "sub_from_input": lambda m, c: m.op("SUB", [m.inputs[0], c], [m.output(m.tensor([0]))], "SubOptions"),
    "concat_width": lambda m, c: m.op("CONCATENATION", [c, m.inputs[0], c], [m.output(m.tensor([0]))],
                                      "ConcatenationOptions", axis=2),
    "resize": lambda m, c: m.op("RESIZE_BILINEAR", [c, m.const(i32(4, 13))], [m.output(m.tensor([0]))],
                                "ResizeBilinearOptions", half_pixel_centers=True),
}


@pytest.mark.parametrize("case", sorted(LAYOUT_CASES))
def test_layout_sensitive_ops_after_conv(rng, tmp_path, case):
    m = ModelBuilder()
    c = after_conv(rng, m)
    LAYOUT_CASES[case](m, c)
    feed = [randn(rng, 2, 7, 9, 3)]
    for t, value in zip(m.outputs, reference(m.build(), feed)):
        fix_shape(m, t, value.shape)
    run_both(m, feed, tmp_path)


def test_int8_weights_dequantize(rng, tmp_path):
    m = ModelBuilder()
    x = m.input([3, 6])
    q = rng.integers(-127, 128, size=(4, 6)).astype(np.int8)
    wq = m.const(q)
    m.tensors[wq]["quantization"] = dict(scale=[0.01, 0.02, 0.03, 0.04], zero_point=[0, 0, 0, 0], quantized_dimension=0)
    w = m.tensor([4, 6])
    m.op("DEQUANTIZE", [wq], [w])
    y = m.output(m.tensor([3, 4]))
    m.op("FULLY_CONNECTED", [x, w, m.const(randn(rng, 4))], [y], "FullyConnectedOptions")
    run_both(m, [randn(rng, 3, 6)], tmp_path)


def quantized_relu(dtype):
    m = ModelBuilder()
    x = m.input([1, 4, 4, 2], dtype)
    m.tensors[x]["quantization"] = dict(scale=[0.1], zero_point=[3])
    y = m.output(m.tensor([1, 4, 4, 2], dtype, quantization=dict(scale=[0.05], zero_point=[-2])))
    m.op("RELU", [x], [y])
    return m


def test_int8_ops_run_between_dequantize_and_quantize(rng, tmp_path):
    x = rng.integers(-128, 128, size=(1, 4, 4, 2)).astype(np.int8)
    run_both(quantized_relu(np.int8), [x], tmp_path, rtol=0, atol=0)


def every_byte_pair(dtype):
    low = np.iinfo(dtype).min
    values = np.arange(256) + low
    return np.repeat(values, 256).reshape(1, 256, 256, 1).astype(dtype), np.tile(values, 256).reshape(1, 256, 256, 1).astype(dtype)


@pytest.mark.parametrize("scales,zeros", [((0.0173, 0.0291, 0.0457), (3, -120, 7)),
                                          ((0.5, 0.25, 1.0), (-128, 127, 0)),
                                          ((0.1019, 0.0509, 0.0317), (0, 0, -5))])
@pytest.mark.parametrize("broadcast", [False, True])
def test_int8_add_exact(tmp_path, scales, zeros, broadcast):
    """LiteRT's integer ADD (fixed-point multipliers, rounding half up) over every pair of int8
    values, byte for byte; with broadcast, B is one value per row (the repeated-operand loop)."""
    m = ModelBuilder()
    b_shape = [1, 256, 1, 1] if broadcast else [1, 256, 256, 1]
    a = m.input([1, 256, 256, 1], np.int8)
    b = m.input(b_shape, np.int8)
    m.tensors[a]["quantization"] = dict(scale=[scales[0]], zero_point=[zeros[0]])
    m.tensors[b]["quantization"] = dict(scale=[scales[1]], zero_point=[zeros[1]])
    y = m.output(m.tensor([1, 256, 256, 1], np.int8, quantization=dict(scale=[scales[2]], zero_point=[zeros[2]])))
    m.op("ADD", [a, b], [y], "AddOptions")
    first, second = every_byte_pair(np.int8)
    if broadcast:
        second = first[:, :, :1, :]
        first = every_byte_pair(np.int8)[1]
    run_both(m, [first, second], tmp_path, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_quantized_hard_swish_exact(tmp_path, dtype):
    """TFLite's fixed-point HARD_SWISH over every code, byte for byte, at scales of real models
    (the input range wider and narrower than the output's)."""
    rng = np.random.default_rng(3)
    low = np.iinfo(dtype).min
    for _ in range(12):
        s_in, s_out = float(rng.uniform(0.004, 0.12)), float(rng.uniform(0.004, 0.06))
        z_in, z_out = int(rng.integers(low + 40, low + 216)), int(rng.integers(low, low + 40))
        m = ModelBuilder()
        x = m.input([256], dtype)
        m.tensors[x]["quantization"] = dict(scale=[s_in], zero_point=[z_in])
        y = m.output(m.tensor([256], dtype, quantization=dict(scale=[s_out], zero_point=[z_out])))
        m.op("HARD_SWISH", [x], [y])
        run_both(m, [(np.arange(256) + low).astype(dtype)], tmp_path, rtol=0, atol=0)


def random_quantization(rng, count, lo=0.002, hi=0.05):
    """`count` float32 scales in [lo, hi) and int8 zero points."""
    return ([float(np.float32(v)) for v in rng.uniform(lo, hi, count)],
            [int(v) for v in rng.integers(-128, 100, count)])


@pytest.mark.parametrize("adjoint", [False, True])
def test_int8_batch_matmul_of_activations_exact(tmp_path, adjoint):
    """BATCH_MATMUL of two int8 activations (attention's products): int32 sums requantized in
    TFLite's fixed point, byte for byte, at random scales and depths."""
    rng = np.random.default_rng(4)
    for _ in range(10):
        (sa, sb, sy), (za, zb, zy) = random_quantization(rng, 3)
        k = int(rng.integers(4, 40))
        m = ModelBuilder()
        a = m.input([2, 3, 16, k], np.int8)
        b = m.input([2, 3, 16, k] if adjoint else [2, 3, k, 16], np.int8)
        m.tensors[a]["quantization"] = dict(scale=[sa], zero_point=[za])
        m.tensors[b]["quantization"] = dict(scale=[sb], zero_point=[zb])
        y = m.output(m.tensor([2, 3, 16, 16], np.int8, quantization=dict(scale=[sy], zero_point=[zy])))
        m.op("BATCH_MATMUL", [a, b], [y], "BatchMatMulOptions", adj_y=adjoint)
        feed = [rng.integers(-128, 128, m.tensors[t]["shape"]).astype(np.int8) for t in (a, b)]
        run_both(m, feed, tmp_path, rtol=0, atol=0)


def test_int8_rsqrt_exact(tmp_path):
    """TFLite's fixed-point RSQRT (a Newton-Raphson inverse square root) on every code at or above
    the zero point (LiteRT refuses negative inputs), byte for byte."""
    rng = np.random.default_rng(5)
    for _ in range(16):
        s_in, s_out = float(np.float32(rng.uniform(0.001, 0.05))), float(np.float32(rng.uniform(0.002, 0.05)))
        z_in, z_out = int(rng.integers(-128, 60)), int(rng.choice([-128, -100, 0]))
        m = ModelBuilder()
        x = m.input([256], np.int8)
        m.tensors[x]["quantization"] = dict(scale=[s_in], zero_point=[z_in])
        y = m.output(m.tensor([256], np.int8, quantization=dict(scale=[s_out], zero_point=[z_out])))
        m.op("RSQRT", [x], [y])
        run_both(m, [np.maximum(np.arange(256) - 128, z_in).astype(np.int8)], tmp_path, rtol=0, atol=0)


@pytest.mark.parametrize("broadcast", [False, True])
def test_int8_squared_difference_exact(tmp_path, broadcast):
    """TFLite's fixed-point SQUARED_DIFFERENCE over every pair of int8 values (with broadcast, B
    one value per row, as LayerNormalization's mean), byte for byte."""
    rng = np.random.default_rng(6)
    for _ in range(6):
        (s1, s2), (z1, z2) = random_quantization(rng, 2)
        s_out = float(np.float32(rng.uniform(0.01, 0.1)))
        m = ModelBuilder()
        a = m.input([1, 256, 256, 1], np.int8)
        b = m.input([1, 256, 1, 1] if broadcast else [1, 256, 256, 1], np.int8)
        m.tensors[a]["quantization"] = dict(scale=[s1], zero_point=[z1])
        m.tensors[b]["quantization"] = dict(scale=[s2], zero_point=[z2])
        y = m.output(m.tensor([1, 256, 256, 1], np.int8, quantization=dict(scale=[s_out], zero_point=[-128])))
        m.op("SQUARED_DIFFERENCE", [a, b], [y])
        first, second = every_byte_pair(np.int8)
        if broadcast:
            first, second = second, first[:, :, :1, :]
        run_both(m, [first, second], tmp_path, rtol=0, atol=0)


def rows_of_every_sum(count, dtype):
    """One row of `count` codes for every possible sum of them, filled from the first code on."""
    low, high = np.iinfo(dtype).min, np.iinfo(dtype).max
    excess = np.arange(count * (high - low) + 1)[:, None] - (high - low) * np.arange(count)[None, :]
    return (low + np.clip(excess, 0, high - low)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("keep_dims", [False, True])
def test_quantized_mean_exact(tmp_path, dtype, keep_dims):
    """Quantized MEAN as LiteRT runs it (XNNPACK's float scale and bias, half to even) on every
    possible sum of the reduced codes, byte for byte, at random scales and zero points."""
    rng = np.random.default_rng(7)
    low = int(np.iinfo(dtype).min)
    for count in (3, 7, 16, 32, 100):
        s_in, s_out = (float(np.float32(v)) for v in rng.uniform(0.001, 0.05, 2))
        z_in, z_out = (int(v) for v in rng.integers(low, low + 230, 2))
        rows = rows_of_every_sum(count, dtype)
        m = ModelBuilder()
        x = m.input(list(rows.shape), dtype)
        m.tensors[x]["quantization"] = dict(scale=[s_in], zero_point=[z_in])
        y = m.output(m.tensor([len(rows), 1] if keep_dims else [len(rows)], dtype,
                              quantization=dict(scale=[s_out], zero_point=[z_out])))
        m.op("MEAN", [x, m.const(np.array([1], np.int32))], [y], "ReducerOptions", keep_dims=keep_dims)
        run_both(m, [rows], tmp_path, rtol=0, atol=0)


def test_int16_activations_are_unsupported(tmp_path):
    path = os.path.join(str(tmp_path), "int16.tflite")
    with open(path, "wb") as f:
        f.write(quantized_relu(np.int16).build())
    with pytest.raises(osprey.UnsupportedError, match=r"RELU \(quantized int16\) x1"):
        osprey.InferenceSession(path)


@pytest.mark.parametrize("code", ["FLOOR", "CEIL", "ROUND", "SIN", "COS", "SIGN"])
def test_more_unary(rng, tmp_path, code):
    m = ModelBuilder()
    x = m.input([4, 9])
    y = m.output(m.tensor([4, 9]))
    m.op(code, [x], [y])
    run_both(m, [randn(rng, 4, 9) * 3], tmp_path)


@pytest.mark.parametrize("code", ["LESS", "GREATER", "EQUAL", "NOT_EQUAL", "LESS_EQUAL", "GREATER_EQUAL"])
def test_comparisons_and_select(rng, tmp_path, code):
    m = ModelBuilder()
    a, b = m.input([3, 1, 5]), m.input([4, 5])
    cond = m.output(m.tensor([3, 4, 5], np.bool_))
    m.op(code, [a, b], [cond])
    picked = m.output(m.tensor([3, 4, 5]))
    m.op("SELECT_V2", [cond, a, b], [picked])
    notted = m.output(m.tensor([3, 4, 5], np.bool_))
    m.op("LOGICAL_NOT", [cond], [notted])
    both = m.output(m.tensor([3, 4, 5], np.bool_))
    m.op("LOGICAL_AND", [cond, notted], [both])
    either = m.output(m.tensor([3, 4, 5], np.bool_))
    m.op("LOGICAL_OR", [cond, notted], [either])
    feed = [np.round(randn(rng, 3, 1, 5)), np.round(randn(rng, 4, 5))]
    run_both(m, feed, tmp_path)


def test_pow_reduce_min_prod(rng, tmp_path):
    m = ModelBuilder()
    a, b = m.input([3, 4, 5]), m.input([5])
    p = m.output(m.tensor([3, 4, 5]))
    m.op("POW", [a, b], [p])
    lo = m.output(m.tensor([3, 5]))
    m.op("REDUCE_MIN", [a, m.const(i32(1))], [lo], "ReducerOptions")
    prod = m.output(m.tensor([3, 1, 1]))
    m.op("REDUCE_PROD", [a, m.const(i32(1, 2))], [prod], "ReducerOptions", keep_dims=True)
    feed = [np.abs(randn(rng, 3, 4, 5)) * 0.5 + 0.5, randn(rng, 5)]
    run_both(m, feed, tmp_path, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_floor_div_floor_mod(rng, tmp_path, dtype):
    """Floor division and a remainder with the divisor's sign, broadcasting, every sign pair."""
    m = ModelBuilder()
    a, b = m.input([3, 4, 7], dtype), m.input([4, 1], dtype)
    q = m.output(m.tensor([3, 4, 7], dtype))
    m.op("FLOOR_DIV", [a, b], [q], "FloorDivOptions")
    r = m.output(m.tensor([3, 4, 7], dtype))
    m.op("FLOOR_MOD", [a, b], [r], "FloorModOptions")
    if dtype == np.int32:
        feed = [rng.integers(-40, 41, size=(3, 4, 7)), np.array([[7], [-3], [1], [-8]])]
    else:
        feed = [randn(rng, 3, 4, 7) * 6, np.array([[2.5], [-0.7], [0.1], [-3.3]])]
        feed[0][0, 2, :] = [1.0, 0.3, -0.3, 0.7, 2.0, -1.0, 0.0]  # quotients next to integers (1 / 0.1f is 9.99999985)
    run_both(m, [v.astype(dtype) for v in feed], tmp_path)


def test_floor_mod_after_conv(rng, tmp_path):
    m = ModelBuilder()
    c = after_conv(rng, m)
    y = m.output(m.tensor([2, 7, 9, 3]))
    m.op("FLOOR_MOD", [c, m.const(np.float32([0.5, -0.75, 1.25]))], [y])
    run_both(m, [randn(rng, 2, 7, 9, 3)], tmp_path)


def test_square(rng, tmp_path):
    m = ModelBuilder()
    c = after_conv(rng, m, (1, 5, 3, 7))
    y = m.output(m.tensor([1, 5, 3, 7]))
    m.op("SQUARE", [c], [y], "SquareOptions")
    run_both(m, [randn(rng, 1, 5, 3, 7)], tmp_path)


@pytest.mark.parametrize("axes", [(1,), (0,), (-1,), (2,)])
@pytest.mark.parametrize("conv_first", [False, True])
def test_reverse_v2(rng, tmp_path, axes, conv_first):
    m = ModelBuilder()
    x = after_conv(rng, m, (2, 5, 7, 3)) if conv_first else m.input([2, 5, 7, 3])
    y = m.output(m.tensor([2, 5, 7, 3]))
    m.op("REVERSE_V2", [x, m.const(i32(*axes))], [y], "ReverseV2Options")
    run_both(m, [randn(rng, 2, 5, 7, 3)], tmp_path)


@pytest.mark.parametrize("shape,block,paddings", [((2, 7, 9, 5), (3, 2), ((1, 1), (0, 1))),
                                                  ((1, 4, 6, 3), (2, 2), ((0, 0), (0, 0))),
                                                  ((3, 5, 5, 2), (1, 5), ((2, 0), (1, 4)))])
@pytest.mark.parametrize("conv_first", [False, True])
def test_space_to_batch_and_back(rng, tmp_path, shape, block, paddings, conv_first):
    """SPACE_TO_BATCH_ND, then BATCH_TO_SPACE_ND cropping the same borders (TensorFlow's
    round trip), read as an input (TFLite's order) or after a conv (held NCHW)."""
    m = ModelBuilder()
    x = after_conv(rng, m, shape) if conv_first else m.input(list(shape))
    batched = m.output(m.tensor([0]))
    m.op("SPACE_TO_BATCH_ND", [x, m.const(i32(*block)), m.const(i32(*paddings))], [batched], "SpaceToBatchNDOptions")
    back = m.output(m.tensor(list(shape)))
    m.op("BATCH_TO_SPACE_ND", [batched, m.const(i32(*block)), m.const(i32(*paddings))], [back], "BatchToSpaceNDOptions")
    feed = [randn(rng, *shape)]
    fix_shape(m, batched, reference_shape(m, feed))
    run_both(m, feed, tmp_path)


def test_batch_to_space_crops(rng, tmp_path):
    m = ModelBuilder()
    x = m.input([6, 4, 3, 2])
    y = m.output(m.tensor([1, 7, 6, 2]))
    m.op("BATCH_TO_SPACE_ND", [x, m.const(i32(2, 3)), m.const(i32([1, 0], [2, 1]))], [y], "BatchToSpaceNDOptions")
    run_both(m, [randn(rng, 6, 4, 3, 2)], tmp_path)


def test_dilated_conv_through_space_to_batch(rng, tmp_path):
    """The form older converters give a dilated convolution: the whole chain stays NCHW, so
    only the model's input and output are transposed."""
    m = ModelBuilder()
    x = m.input([1, 13, 11, 3])
    batched = m.tensor([4, 8, 7, 3])
    m.op("SPACE_TO_BATCH_ND", [x, m.const(i32(2, 2)), m.const(i32([1, 2], [1, 2]))], [batched])
    conv = m.tensor([4, 6, 5, 4])
    m.op("CONV_2D", [batched, m.const(randn(rng, 4, 3, 3, 3)), m.const(randn(rng, 4))], [conv], "Conv2DOptions",
         padding=VALID, stride_w=1, stride_h=1)
    y = m.output(m.tensor([1, 11, 10, 4]))
    m.op("BATCH_TO_SPACE_ND", [conv, m.const(i32(2, 2)), m.const(i32([0, 1], [0, 0]))], [y])
    path = run_both(m, [randn(rng, 1, 13, 11, 3)], tmp_path)
    binary = os.path.join(os.path.dirname(osprey.__file__), "_bin", "osprey")
    if os.path.exists(binary):
        info = subprocess.run([binary, "info", path], capture_output=True, text=True, check=True).stdout
        transposes = [line for line in info.splitlines() if line.strip().startswith("Transpose ")]
        assert transposes and int(transposes[0].split()[1]) <= 2 + 2, info  # in, out, and the two block moves


def test_int8_space_to_batch(rng, tmp_path):
    """Quantized data movement: the padding is the zero point, every other code is copied."""
    m = ModelBuilder()
    q = dict(scale=[0.07], zero_point=[-9])
    x = m.input([1, 5, 6, 3], np.int8)
    m.tensors[x]["quantization"] = q
    y = m.output(m.tensor([4, 3, 3, 3], np.int8, quantization=q))
    m.op("SPACE_TO_BATCH_ND", [x, m.const(i32(2, 2)), m.const(i32([1, 0], [0, 0]))], [y])
    run_both(m, [rng.integers(-128, 128, size=(1, 5, 6, 3)).astype(np.int8)], tmp_path, rtol=0, atol=0)


@pytest.mark.parametrize("dtype,start,limit,delta", [(np.int32, 3, 20, 4), (np.int32, 10, -7, -3), (np.int32, -4, 9, 2),
                                                     (np.float32, 0.5, 4.2, 0.3), (np.float32, 2.0, -1.5, -0.7),
                                                     (np.float32, 0.1, 1000.0, 0.1)])
def test_range(tmp_path, dtype, start, limit, delta):
    m = ModelBuilder()
    ins = [m.input([], dtype) for _ in range(3)]
    y = m.output(m.tensor([0], dtype))
    m.op("RANGE", ins, [y], "RangeOptions")
    feed = [np.array(v, dtype) for v in (start, limit, delta)]
    fix_shape(m, y, reference_shape(m, feed))
    run_both(m, feed, tmp_path)


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_one_hot(rng, tmp_path, axis, dtype):
    """Negative and too large indices give rows of off values, as in TFLite."""
    m = ModelBuilder()
    indices = m.input([3, 5], np.int32)
    y = m.output(m.tensor([0], dtype))
    on, off = m.const(np.array(2.5 if dtype == np.float32 else 7, dtype)), m.const(np.array(-1, dtype))
    m.op("ONE_HOT", [indices, m.const(np.array(6, np.int32)), on, off], [y], "OneHotOptions", axis=axis)
    feed = [rng.integers(-2, 8, size=(3, 5)).astype(np.int32)]
    fix_shape(m, y, reference_shape(m, feed))
    run_both(m, feed, tmp_path)


@pytest.mark.parametrize("radius,bias,alpha,beta", [(2, 1.5, 0.3, 0.6), (0, 1.0, 1.0, 0.5), (4, 2.0, 1e-4, 0.75)])
@pytest.mark.parametrize("conv_first", [False, True])
def test_local_response_normalization(rng, tmp_path, radius, bias, alpha, beta, conv_first):
    m = ModelBuilder()
    shape = (2, 5, 3, 11)
    x = after_conv(rng, m, shape) if conv_first else m.input(list(shape))
    y = m.output(m.tensor(list(shape)))
    m.op("LOCAL_RESPONSE_NORMALIZATION", [x], [y], "LocalResponseNormalizationOptions", radius=radius, bias=bias,
         alpha=alpha, beta=beta)
    run_both(m, [randn(rng, *shape)], tmp_path)


def test_still_unsupported_ops_listed_once(tmp_path):
    """Ops and forms that stay refused are named in the one message, with their reasons; the
    supported ones around them (MIRROR_PAD in SYMMETRIC mode, SQUARE) are not."""
    m = ModelBuilder()
    x = m.input([1, 4, 4, 2])
    a, b, c = m.tensor([1, 6, 6, 2]), m.tensor([2, 2, 1]), m.output(m.tensor([1, 6, 6, 2]))
    m.op("MIRROR_PAD", [x, m.const(i32([0, 0], [1, 1], [1, 1], [0, 0]))], [a], "MirrorPadOptions", mode=1)
    m.op("SPACE_TO_BATCH_ND", [m.const(np.zeros((1, 4, 1), np.float32)), m.const(i32(2)), m.const(i32([0, 0]))], [b])
    m.op("SQUARE", [a], [c])
    path = os.path.join(str(tmp_path), "bad.tflite")
    with open(path, "wb") as f:
        f.write(m.build())
    with pytest.raises(osprey.UnsupportedError) as e:
        osprey.InferenceSession(path)
    message = str(e.value)
    assert message.count("unsupported TFLite ops:") == 1, message
    assert "SPACE_TO_BATCH_ND (rank 3 input" in message, message
    assert "SQUARE" not in message and "MIRROR_PAD" not in message, message
