"""ONNX Runtime's com.microsoft quantized ops (QOperator format) in Osprey against ONNX Runtime:
single-op models with random data, scales and zero points at the ends of the type, whose
uint8/int8 outputs must be identical (float outputs within 1e-5), and one float model quantized
by onnxruntime.quantization.quantize_static."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

from conftest import IR_VERSION

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import osprey  # noqa: E402

MS = "com.microsoft"
TYPES = [np.uint8, np.int8]


def limits(dtype):
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def zero_points(dtype):
    lo, hi = limits(dtype)
    return [lo, hi, (lo + hi) // 2 + 3]


def rand_bytes(rng, dtype, shape):
    lo, hi = limits(dtype)
    return rng.integers(lo, hi + 1, size=shape).astype(dtype)


def rand_scale(rng, lo=1e-3, hi=0.2):
    return np.float32(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def tie_scale(rng):
    """A power of two: exact products and quotients, so rounding ties (x.5) happen."""
    return np.float32(2.0 ** -int(rng.integers(2, 9)))


def ms_model(nodes, inputs, outputs, initializers=(), opset=17):
    """A model importing com.microsoft; inputs and outputs are (name, array or dtype) pairs."""
    def info(name, v):
        if isinstance(v, np.ndarray):
            return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(v)), None)
    graph = helper.make_graph(list(nodes), "contrib", [info(n, v) for n, v in inputs],
                              [info(n, v) for n, v in outputs],
                              [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    model.ir_version = IR_VERSION
    return model.SerializeToString()


def run_both(model, feed):
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feed)
    out = osprey.InferenceSession(model, threads=2).run(None, feed)
    assert len(out) == len(ref)
    return out, ref


def assert_same(model, feed):
    out, ref = run_both(model, feed)
    for o, r in zip(out, ref):
        assert o.dtype == r.dtype and o.shape == r.shape, (o.dtype, o.shape, r.dtype, r.shape)
        if r.dtype.kind in "iu":
            bad = np.flatnonzero(o.astype(np.int64) != r.astype(np.int64))
            assert bad.size == 0, "%d of %d differ, first at %d: osprey %s, ORT %s" % (
                bad.size, r.size, bad[0], o.flat[bad[0]], r.flat[bad[0]])
        else:
            np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-5)


def scalar(v, dtype):
    return np.array(v, dtype=dtype)


# ---- QLinearAdd / QLinearMul ----

BROADCAST = [((13, 7), (13, 7)), ((3, 13, 7), (7,)), ((3, 1, 7), (5, 1)), ((127,), (1,)), ((1,), (2, 9)),
             ((4, 1), (4, 5)), ((2, 3, 37), (2, 3, 37)), ((1,), (1,))]


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("shapes", BROADCAST, ids=str)
def test_binary(op, dtype, shapes):
    # crc32, not hash(): str hashes change with every process, and a failure must repeat.
    rng = np.random.default_rng(zlib.crc32(repr((op, np.dtype(dtype).name, shapes)).encode()))
    for trial in range(16):
        a, b = rand_bytes(rng, dtype, shapes[0]), rand_bytes(rng, dtype, shapes[1])
        zps = zero_points(dtype)
        za, zb, zc = zps[trial % 3], zps[(trial + 1) % 3], zps[(trial + 2) % 3]
        if trial % 4 == 3:
            sa, sb, sc = tie_scale(rng), tie_scale(rng), tie_scale(rng)
            if op == "QLinearMul":
                sc = np.float32(sa * sb * 2.0 ** int(rng.integers(5, 12)))
        else:
            sa, sb = rand_scale(rng), rand_scale(rng)
            sc = rand_scale(rng, 1e-3, 0.5) if op == "QLinearAdd" else np.float32(sa * sb * rng.uniform(20, 3000))
        inits = [("as", scalar(sa, np.float32)), ("az", scalar(za, dtype)), ("bs", scalar(sb, np.float32)),
                 ("bz", scalar(zb, dtype)), ("cs", scalar(sc, np.float32)), ("cz", scalar(zc, dtype))]
        node = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["y"], domain=MS)
        assert_same(ms_model([node], [("a", a), ("b", b)], [("y", dtype)], inits), {"a": a, "b": b})


# ---- QLinearGlobalAveragePool / QLinearAveragePool ----

@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("channels_last", [0, 1])
def test_global_average_pool(dtype, channels_last):
    rng = np.random.default_rng(1 + channels_last)
    for trial in range(12):
        shape = (2, 13, 7, 5) if not channels_last else (2, 7, 5, 13)
        x = rand_bytes(rng, dtype, shape)
        zps = zero_points(dtype)
        sx, sy = (tie_scale(rng), tie_scale(rng)) if trial % 4 == 3 else (rand_scale(rng), rand_scale(rng))
        inits = [("xs", scalar(sx, np.float32)), ("xz", scalar(zps[trial % 3], dtype)),
                 ("ys", scalar(sy, np.float32)), ("yz", scalar(zps[(trial + 1) % 3], dtype))]
        node = helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS,
                                channels_last=channels_last)
        assert_same(ms_model([node], [("x", x)], [("y", dtype)], inits), {"x": x})


POOLS = [dict(kernel_shape=[3, 3]), dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
         dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1),
         dict(kernel_shape=[2, 3], strides=[2, 1], pads=[0, 1, 1, 0], ceil_mode=1),
         dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"),
         dict(kernel_shape=[3], strides=[2], pads=[1, 1])]


@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("channels_last", [0, 1])
@pytest.mark.parametrize("attrs", POOLS, ids=str)
def test_average_pool(dtype, channels_last, attrs):
    rng = np.random.default_rng(7)
    spatial = (13, 7) if len(attrs["kernel_shape"]) == 2 else (13,)
    shape = (2,) + spatial + (3,) if channels_last else (2, 3) + spatial
    for trial in range(4):
        x = rand_bytes(rng, dtype, shape)
        zps = zero_points(dtype)
        inits = [("xs", scalar(rand_scale(rng), np.float32)), ("xz", scalar(zps[trial % 3], dtype)),
                 ("ys", scalar(rand_scale(rng), np.float32)), ("yz", scalar(zps[(trial + 1) % 3], dtype))]
        node = helper.make_node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS,
                                channels_last=channels_last, **attrs)
        assert_same(ms_model([node], [("x", x)], [("y", dtype)], inits), {"x": x})


# ---- QLinearSigmoid / QLinearLeakyRelu ----

@pytest.mark.parametrize("op", ["QLinearSigmoid", "QLinearLeakyRelu"])
@pytest.mark.parametrize("dtype", TYPES)
def test_lookup_ops(op, dtype):
    rng = np.random.default_rng(11)
    lo, hi = limits(dtype)
    x = np.arange(lo, hi + 1).astype(dtype).reshape(2, 128)  # every value of the type
    for trial in range(12):
        zps = zero_points(dtype)
        sy = np.float32(1 / 256) if op == "QLinearSigmoid" and trial % 2 else rand_scale(rng, 1e-3, 0.1)
        inits = [("xs", scalar(rand_scale(rng, 1e-3, 0.3), np.float32)), ("xz", scalar(zps[trial % 3], dtype)),
                 ("ys", scalar(sy, np.float32)), ("yz", scalar(zps[(trial // 3) % 3], dtype))]
        attrs = {"alpha": float(rng.uniform(0.01, 0.5))} if op == "QLinearLeakyRelu" else {}
        node = helper.make_node(op, ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS, **attrs)
        assert_same(ms_model([node], [("x", x)], [("y", dtype)], inits), {"x": x})


# ---- QLinearConcat ----

@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(dtype, axis):
    rng = np.random.default_rng(13)
    shapes = {0: [(2, 5, 3), (3, 5, 3), (1, 5, 3)], 1: [(2, 1, 3), (2, 7, 3), (2, 2, 3)],
              -1: [(2, 5, 3), (2, 5, 1), (2, 5, 4)]}[axis]
    for trial in range(4):
        zps = zero_points(dtype)
        ys, yz = rand_scale(rng), zps[trial % 3]
        inits = [("ys", scalar(ys, np.float32)), ("yz", scalar(yz, dtype))]
        names, inputs, feed = ["ys", "yz"], [], {}
        for i, s in enumerate(shapes):
            x = rand_bytes(rng, dtype, s)
            same = i == 0  # already in Y's scale and zero point: copied
            inits += [("s%d" % i, scalar(ys if same else rand_scale(rng), np.float32)),
                      ("z%d" % i, scalar(yz if same else zps[(trial + i) % 3], dtype))]
            names += ["x%d" % i, "s%d" % i, "z%d" % i]
            inputs.append(("x%d" % i, x))
            feed["x%d" % i] = x
        node = helper.make_node("QLinearConcat", names, ["y"], domain=MS, axis=axis)
        assert_same(ms_model([node], inputs, [("y", dtype)], inits), feed)


# ---- QGemm ----

@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("trans", [(0, 0), (1, 0), (0, 1), (1, 1)], ids=str)
@pytest.mark.parametrize("out", ["quantized", "float"])
@pytest.mark.parametrize("per_column", [False, True])
def test_qgemm(dtype, trans, out, per_column):
    rng = np.random.default_rng(17)
    m, k, n = 5, 13, 7
    for trial, bias_shape in enumerate([None, (n,), (1, n), (m, n), (m, 1), ()]):
        a = rand_bytes(rng, dtype, (k, m) if trans[0] else (m, k))
        b = rand_bytes(rng, dtype, (n, k) if trans[1] else (k, n))
        zps = zero_points(dtype)
        bs = (rng.uniform(1e-3, 0.05, n) if per_column else rng.uniform(1e-3, 0.05, 1)).astype(np.float32)
        bz = np.array([zps[j % 3] for j in range(bs.size)], dtype=dtype)
        inits = [("as", scalar(rand_scale(rng), np.float32)), ("az", scalar(zps[trial % 3], dtype)),
                 ("bs", bs if per_column else bs.reshape(())), ("bz", bz if per_column else bz.reshape(()))]
        names = ["a", "as", "az", "b", "bs", "bz"]
        if bias_shape is not None:
            inits.append(("c", rng.integers(-3000, 3000, size=bias_shape).astype(np.int32)))
            names.append("c")
        else:
            names.append("")
        if out == "quantized":
            inits += [("ys", scalar(rand_scale(rng, 0.05, 2.0), np.float32)), ("yz", scalar(zps[(trial + 1) % 3], dtype))]
            names += ["ys", "yz"]
        node = helper.make_node("QGemm", names, ["y"], domain=MS, transA=trans[0], transB=trans[1],
                                alpha=float(rng.uniform(0.5, 2.0)))
        y_type = dtype if out == "quantized" else np.float32
        assert_same(ms_model([node], [("a", a), ("b", b)], [("y", y_type)], inits), {"a": a, "b": b})


def test_qgemm_uint8_a_int8_b():
    rng = np.random.default_rng(37)
    m, k, n = 3, 17, 4
    a, b = rand_bytes(rng, np.uint8, (m, k)), rand_bytes(rng, np.int8, (k, n))
    inits = [("as", scalar(0.02, np.float32)), ("az", scalar(255, np.uint8)), ("bs", scalar(0.01, np.float32)),
             ("bz", scalar(-128, np.int8)), ("c", rng.integers(-500, 500, n).astype(np.int32)),
             ("ys", scalar(0.3, np.float32)), ("yz", scalar(7, np.uint8))]
    node = helper.make_node("QGemm", ["a", "as", "az", "b", "bs", "bz", "c", "ys", "yz"], ["y"], domain=MS)
    assert_same(ms_model([node], [("a", a), ("b", b)], [("y", np.uint8)], inits), {"a": a, "b": b})


def test_parameters_as_graph_inputs():
    """Scales and zero points fed at run time (ORT builds its tables per run)."""
    rng = np.random.default_rng(41)
    x = rand_bytes(rng, np.uint8, (3, 127))
    params = {"xs": scalar(0.043, np.float32), "xz": scalar(200, np.uint8), "ys": scalar(0.031, np.float32),
              "yz": scalar(3, np.uint8)}
    nodes = [helper.make_node("QLinearLeakyRelu", ["x", "xs", "xz", "ys", "yz"], ["r"], domain=MS, alpha=0.2),
             helper.make_node("QLinearAdd", ["r", "ys", "yz", "x", "xs", "xz", "xs", "yz"], ["y"], domain=MS)]
    inputs = [("x", x)] + list(params.items())
    assert_same(ms_model(nodes, inputs, [("y", np.uint8)]), dict(x=x, **params))


# ---- MatMulIntegerToFloat / DynamicQuantizeMatMul ----

@pytest.mark.parametrize("a_type", TYPES)
@pytest.mark.parametrize("b_type", TYPES)
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_matmul_integer_to_float(a_type, b_type, per_column, bias):
    if a_type == np.int8 and b_type == np.uint8:
        pytest.skip("ONNX Runtime has no MatMulIntegerToFloat kernel for int8 A with uint8 B")
    rng = np.random.default_rng(19)
    k, n = 13, 5
    a = rand_bytes(rng, a_type, (2, 3, k))
    b = rand_bytes(rng, b_type, (k, n))
    bs = rng.uniform(1e-3, 0.05, n if per_column else 1).astype(np.float32)
    bz = np.array([zero_points(b_type)[j % 3] for j in range(bs.size)], dtype=b_type)
    if not per_column:
        bs, bz = bs.reshape(()), bz.reshape(())
    inits = [("b", b), ("as", scalar(0.07, np.float32)), ("bs", bs), ("az", scalar(limits(a_type)[1], a_type)),
             ("bz", bz)]
    names = ["a", "b", "as", "bs", "az", "bz"]
    if bias:
        inits.append(("bias", rng.standard_normal(n).astype(np.float32)))
        names.append("bias")
    node = helper.make_node("MatMulIntegerToFloat", names, ["y"], domain=MS)
    assert_same(ms_model([node], [("a", a)], [("y", np.float32)], inits), {"a": a})


@pytest.mark.parametrize("b_type", TYPES)
@pytest.mark.parametrize("bias", [False, True])
def test_dynamic_quantize_matmul(b_type, bias):
    rng = np.random.default_rng(23)
    k, n = 13, 5
    for shape in [(7, k), (2, 3, k)]:
        a = (rng.standard_normal(shape) * 2 + 0.5).astype(np.float32)
        b = rand_bytes(rng, b_type, (k, n))
        inits = [("b", b), ("bs", scalar(0.03, np.float32)), ("bz", scalar(zero_points(b_type)[1], b_type))]
        names = ["a", "b", "bs", "bz"]
        if bias:
            inits.append(("bias", rng.standard_normal(n).astype(np.float32)))
            names.append("bias")
        node = helper.make_node("DynamicQuantizeMatMul", names, ["y"], domain=MS)
        assert_same(ms_model([node], [("a", a)], [("y", np.float32)], inits), {"a": a})


# ---- QLinearSoftmax ----

@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("opset", [12, 13])
@pytest.mark.parametrize("axis", [1, -1])
def test_softmax(dtype, opset, axis):
    rng = np.random.default_rng(29)
    lo, _ = limits(dtype)
    for trial in range(4):
        x = rand_bytes(rng, dtype, (3, 5, 7))
        inits = [("xs", scalar(rand_scale(rng, 0.01, 0.3), np.float32)),
                 ("xz", scalar(zero_points(dtype)[trial % 3], dtype)),
                 ("ys", scalar(1 / 256, np.float32)), ("yz", scalar(lo, dtype))]
        node = helper.make_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS,
                                axis=axis, opset=opset)
        assert_same(ms_model([node], [("x", x)], [("y", dtype)], inits), {"x": x})


# ---- Errors ----

def test_unsupported_microsoft_op_is_named():
    x = np.zeros((2, 3), np.float32)
    node = helper.make_node("FusedGemm", ["x", "x"], ["y"], domain=MS)
    with pytest.raises(Exception, match="com.microsoft.FusedGemm"):
        osprey.InferenceSession(ms_model([node], [("x", x)], [("y", np.float32)]))


def test_bad_zero_point_dtype_names_the_tensor():
    a = np.zeros((2, 3), np.uint8)
    inits = [("as", scalar(0.1, np.float32)), ("az", scalar(0, np.int8)), ("bs", scalar(0.1, np.float32)),
             ("bz", scalar(0, np.uint8)), ("cs", scalar(0.1, np.float32)), ("cz", scalar(0, np.uint8))]
    node = helper.make_node("QLinearAdd", ["a", "as", "az", "a", "bs", "bz", "cs", "cz"], ["y"], domain=MS)
    model = ms_model([node], [("a", a)], [("y", np.uint8)], inits)
    with pytest.raises(Exception, match="A_zero_point"):
        osprey.InferenceSession(model).run(None, {"a": a})


# ---- End to end: quantize_static in the QOperator format ----

def float_model(rng):
    c_in, c_mid, classes = 3, 8, 5
    w = (rng.standard_normal((c_mid, c_in, 3, 3)) * 0.3).astype(np.float32)
    wb = (rng.standard_normal(c_mid) * 0.1).astype(np.float32)
    gw = (rng.standard_normal((classes, c_mid)) * 0.3).astype(np.float32)
    gb = (rng.standard_normal(classes) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "wb"], ["conv"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["conv"], ["relu"]),
             helper.make_node("Add", ["relu", "conv"], ["sum"]),
             helper.make_node("GlobalAveragePool", ["sum"], ["pool"]),
             helper.make_node("Flatten", ["pool"], ["flat"]),
             helper.make_node("Gemm", ["flat", "gw", "gb"], ["y"], transB=1)]
    graph = helper.make_graph(
        nodes, "e2e", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c_in, 15, 13])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, classes])],
        [numpy_helper.from_array(a, n) for n, a in [("w", w), ("wb", wb), ("gw", gw), ("gb", gb)]])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = IR_VERSION
    return model


def test_quantize_static_qoperator_end_to_end(tmp_path):
    quantization = pytest.importorskip("onnxruntime.quantization")
    rng = np.random.default_rng(31)
    src, dst = str(tmp_path / "float.onnx"), str(tmp_path / "quant.onnx")
    onnx.save(float_model(rng), src)

    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            self.data = iter([{"x": rng.standard_normal((1, 3, 15, 13)).astype(np.float32)} for _ in range(8)])

        def get_next(self):
            return next(self.data, None)

    quantization.quantize_static(src, dst, Reader(), quant_format=quantization.QuantFormat.QOperator,
                                 activation_type=quantization.QuantType.QUInt8,
                                 weight_type=quantization.QuantType.QUInt8)
    quantized = onnx.load(dst)
    ops = {(n.domain, n.op_type) for n in quantized.graph.node}
    assert (MS, "QLinearAdd") in ops and (MS, "QLinearGlobalAveragePool") in ops, ops
    model = quantized.SerializeToString()
    osp = str(tmp_path / "quant.osp")
    osprey.convert(dst, osp)  # the .osp file names the new ops
    from_file = osprey.InferenceSession(osp, threads=1)
    for seed in range(4):
        x = np.random.default_rng(100 + seed).standard_normal((1, 3, 15, 13)).astype(np.float32)
        out, ref = run_both(model, {"x": x})
        np.testing.assert_array_equal(out[0], ref[0])
        np.testing.assert_array_equal(from_file.run(None, {"x": x})[0], ref[0])
