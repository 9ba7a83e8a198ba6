"""The Caffe frontend from Python and the CLI: deploy prototxt + caffemodel pairs written by
caffe_writer.py, each layer against a numpy implementation of Caffe's definition (Caffe itself
is not on PyPI), the pair through InferenceSession, osprey.convert and `osprey convert|run|info`."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

from caffe_writer import save

import osprey  # noqa: E402


def net(tmp_path, inputs, layers, weights=None, stem="net"):
    """A prototxt declaring `inputs` {name: shape}, then `layers` (text)."""
    text = "".join('input: "%s"\ninput_shape { %s }\n' % (n, " ".join("dim: %d" % d for d in s))
                   for n, s in inputs.items())
    return save(tmp_path, text + layers, weights or {}, stem)


def run(paths, feeds):
    return osprey.InferenceSession(paths).run(None, feeds)


def conv2d(x, w, b, stride=1, pad=0, dilation=1, group=1):
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - dilation * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * pad - dilation * (kw - 1) - 1) // stride + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for o in range(m):
        g = o // mg
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg, i * dilation:i * dilation + stride * oh:stride,
                           j * dilation:j * dilation + stride * ow:stride]
                y[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, i, j])
        y[:, o] += b[o]
    return y


def test_grouped_dilated_convolution_and_deconvolution(tmp_path):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    dw = rng.standard_normal((6, 2, 4, 4)).astype(np.float32)  # [in, out / group, kh, kw], group 1
    layers = """
layer { name: "conv" type: "Convolution" bottom: "x" top: "c"
  convolution_param { num_output: 6 kernel_size: 3 pad: 2 dilation: 2 group: 2 stride: 1 } }
layer { name: "up" type: "Deconvolution" bottom: "c" top: "d"
  convolution_param { num_output: 2 kernel_size: 4 stride: 2 pad: 1 bias_term: false } }
"""
    paths = net(tmp_path, {"x": (1, 4, 5, 6)}, layers, {"conv": [w, b], "up": [dw]})
    x = rng.standard_normal((1, 4, 5, 6)).astype(np.float32)
    (d,) = run(paths, {"x": x})
    c = conv2d(x.astype(np.float64), w, b, pad=2, dilation=2, group=2)
    # Deconvolution: each input position scatters its kernel into a stride-2 output, then the pad is cut.
    full = np.zeros((1, 2, (5 - 1) * 2 + 4, (6 - 1) * 2 + 4))
    for ci in range(6):
        for i in range(5):
            for j in range(6):
                full[0, :, 2 * i:2 * i + 4, 2 * j:2 * j + 4] += c[0, ci, i, j] * dw[ci]
    np.testing.assert_allclose(d, full[:, :, 1:-1, 1:-1], rtol=1e-4, atol=1e-4)


def test_activations_and_elementwise_layers(tmp_path):
    rng = np.random.default_rng(2)
    slopes = rng.uniform(0.1, 0.5, 3).astype(np.float32)
    layers = """
layer { name: "prelu" type: "PReLU" bottom: "x" top: "p" }
layer { name: "elu" type: "ELU" bottom: "x" top: "e" elu_param { alpha: 0.7 } }
layer { name: "leaky" type: "ReLU" bottom: "x" top: "l" relu_param { negative_slope: 0.1 } }
layer { name: "exp" type: "Exp" bottom: "x" top: "ex" exp_param { base: 2 scale: 0.5 shift: 0.25 } }
layer { name: "abs" type: "AbsVal" bottom: "x" top: "a" }
layer { name: "log" type: "Log" bottom: "a" top: "lg" log_param { base: 10 shift: 1 } }
layer { name: "bnll" type: "BNLL" bottom: "x" top: "bn" }
layer { name: "thr" type: "Threshold" bottom: "x" top: "t" threshold_param { threshold: 0.3 } }
layer { name: "clip" type: "Clip" bottom: "x" top: "cl" clip_param { min: -0.5 max: 0.4 } }
layer { name: "prod" type: "Eltwise" bottom: "p" bottom: "e" bottom: "l" top: "pr" eltwise_param { operation: PROD } }
layer { name: "max" type: "Eltwise" bottom: "p" bottom: "e" top: "mx" eltwise_param { operation: MAX } }
layer { name: "sig" type: "Sigmoid" bottom: "x" top: "s" }
layer { name: "drop" type: "Dropout" bottom: "s" top: "s" dropout_param { dropout_ratio: 0.5 } }
"""
    paths = net(tmp_path, {"x": (2, 3, 4, 5)}, layers, {"prelu": [slopes]})
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    out = dict(zip(["ex", "lg", "bn", "t", "cl", "pr", "mx", "s"], run(paths, {"x": x})))
    xd = x.astype(np.float64)
    p = np.where(xd > 0, xd, xd * slopes[None, :, None, None])
    e = np.where(xd > 0, xd, 0.7 * (np.exp(xd) - 1))
    leaky = np.where(xd > 0, xd, 0.1 * xd)
    expect = {"ex": 2.0 ** (0.25 + 0.5 * xd), "lg": np.log10(1 + np.abs(xd)), "bn": np.log1p(np.exp(xd)),
              "t": (xd > 0.3).astype(np.float64), "cl": np.clip(xd, -0.5, 0.4), "pr": p * e * leaky,
              "mx": np.maximum(p, e), "s": 1 / (1 + np.exp(-xd))}
    assert set(out) == set(expect)
    for k in expect:
        np.testing.assert_allclose(out[k], expect[k], rtol=1e-5, atol=1e-5, err_msg=k)


def test_lrn_across_and_within_channels_softmax_normalize(tmp_path):
    rng = np.random.default_rng(3)
    scale = rng.uniform(0.5, 2, 6).astype(np.float32)
    layers = """
layer { name: "across" type: "LRN" bottom: "x" top: "a" lrn_param { local_size: 3 alpha: 0.3 beta: 0.6 k: 2 } }
layer { name: "within" type: "LRN" bottom: "x" top: "w"
  lrn_param { local_size: 3 alpha: 0.2 beta: 0.75 norm_region: WITHIN_CHANNEL } }
layer { name: "soft" type: "Softmax" bottom: "x" top: "s" softmax_param { axis: 1 } }
layer { name: "norm" type: "Normalize" bottom: "x" top: "n" norm_param { across_spatial: false channel_shared: false } }
"""
    paths = net(tmp_path, {"x": (1, 6, 4, 5)}, layers, {"norm": [scale]})
    x = rng.standard_normal((1, 6, 4, 5)).astype(np.float32)
    a, w, s, n = run(paths, {"x": x})
    xd = x.astype(np.float64)
    sq = np.pad(xd ** 2, ((0, 0), (1, 1), (0, 0), (0, 0)))
    across = xd / (2 + 0.3 / 3 * (sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:])) ** 0.6
    sp = np.pad(xd ** 2, ((0, 0), (0, 0), (1, 1), (1, 1)))
    window = sum(sp[:, :, i:i + 4, j:j + 5] for i in range(3) for j in range(3))
    within = xd / (1 + 0.2 / 9 * window) ** 0.75
    soft = np.exp(xd) / np.exp(xd).sum(axis=1, keepdims=True)
    norm = xd / np.sqrt((xd ** 2).sum(axis=1, keepdims=True) + 1e-10) * scale[None, :, None, None]
    for got, want, name in [(a, across, "across"), (w, within, "within"), (s, soft, "softmax"), (n, norm, "normalize")]:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=name)


def test_shape_layers(tmp_path):
    rng = np.random.default_rng(4)
    ip = rng.standard_normal((5, 4)).astype(np.float32)
    ipb = rng.standard_normal(5).astype(np.float32)
    layers = """
layer { name: "perm" type: "Permute" bottom: "x" top: "p" permute_param { order: 0 order: 2 order: 3 order: 1 } }
layer { name: "flat" type: "Flatten" bottom: "x" top: "f" flatten_param { axis: 1 end_axis: 2 } }
layer { name: "resh" type: "Reshape" bottom: "x" top: "r" reshape_param { shape { dim: 0 dim: -1 dim: 4 } } }
layer { name: "crop" type: "Crop" bottom: "x" bottom: "ref" top: "c" crop_param { axis: 2 offset: 1 offset: 2 } }
layer { name: "slice" type: "Slice" bottom: "x" top: "s0" top: "s1" top: "s2" slice_param { axis: 1 } }
layer { name: "split" type: "Split" bottom: "s1" top: "t0" top: "t1" }
layer { name: "tile" type: "Tile" bottom: "t0" top: "tl" tile_param { axis: 3 tiles: 2 } }
layer { name: "arg" type: "ArgMax" bottom: "x" top: "am" argmax_param { axis: 1 } }
layer { name: "red" type: "Reduction" bottom: "x" top: "rd" reduction_param { operation: SUMSQ axis: 2 coeff: 0.5 } }
layer { name: "shuffle" type: "ShuffleChannel" bottom: "x" top: "sh" shuffle_channel_param { group: 3 } }
layer { name: "ip" type: "InnerProduct" bottom: "r" top: "ip" inner_product_param { num_output: 5 axis: 2 } }
layer { name: "silence" type: "Silence" bottom: "t1" }
"""
    paths = net(tmp_path, {"x": (2, 6, 4, 5), "ref": (1, 1, 2, 3)}, layers, {"ip": [ip, ipb]})
    x = rng.standard_normal((2, 6, 4, 5)).astype(np.float32)
    ref = np.zeros((1, 1, 2, 3), np.float32)
    out = run(paths, {"x": x, "ref": ref})
    names = ["p", "f", "c", "s0", "s2", "tl", "am", "rd", "sh", "ip"]
    assert len(out) == len(names)
    got = dict(zip(names, out))
    r = x.reshape(2, -1, 4)
    want = {"p": x.transpose(0, 2, 3, 1), "f": x.reshape(2, 24, 5), "c": x[:, :, 1:3, 2:5],
            "s0": x[:, 0:2], "s2": x[:, 4:6], "tl": np.tile(x[:, 2:4], (1, 1, 1, 2)),
            "am": np.argmax(x, axis=1)[:, None].astype(np.float32), "rd": 0.5 * (x.reshape(2, 6, -1) ** 2).sum(-1),
            "sh": x.reshape(2, 3, 2, 4, 5).transpose(0, 2, 1, 3, 4).reshape(2, 6, 4, 5),
            "ip": r @ ip.T + ipb}  # InnerProduct on axis 2: each length-4 row of r
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-5, err_msg=k)


def test_interp_upsample_scale_bias_batchnorm(tmp_path):
    rng = np.random.default_rng(5)
    mean, var = rng.standard_normal(3).astype(np.float32), rng.uniform(0.5, 2, 3).astype(np.float32)
    layers = """
layer { name: "interp" type: "Interp" bottom: "x" top: "i" interp_param { zoom_factor: 2 } }
layer { name: "interp2" type: "Interp" bottom: "x" top: "i2" interp_param { height: 5 width: 3 } }
layer { name: "up" type: "Upsample" bottom: "x" top: "u" upsample_param { scale: 2 } }
layer { name: "scale2" type: "Scale" bottom: "x" bottom: "g" top: "sc" scale_param { axis: 1 } }
layer { name: "bias2" type: "Bias" bottom: "x" bottom: "g" top: "bi" }
layer { name: "bn" type: "BatchNorm" bottom: "x" top: "bn" }
"""
    paths = net(tmp_path, {"x": (1, 3, 4, 6), "g": (3,)}, layers,
                {"bn": [mean * 4, var * 4, np.array([4.0], np.float32)]})
    x = rng.standard_normal((1, 3, 4, 6)).astype(np.float32)
    g = rng.standard_normal(3).astype(np.float32)
    i, i2, u, sc, bi, bn = run(paths, {"x": x, "g": g})

    def align_corners(a, oh, ow):
        h, w = a.shape[-2:]
        ys = np.linspace(0, h - 1, oh) if oh > 1 else np.zeros(1)
        xs = np.linspace(0, w - 1, ow) if ow > 1 else np.zeros(1)
        y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
        y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
        fy, fx = (ys - y0)[:, None], (xs - x0)[None, :]
        top = a[..., y0, :][..., x0] * (1 - fx) + a[..., y0, :][..., x1] * fx
        bottom = a[..., y1, :][..., x0] * (1 - fx) + a[..., y1, :][..., x1] * fx
        return top * (1 - fy) + bottom * fy

    xd = x.astype(np.float64)
    np.testing.assert_allclose(i, align_corners(xd, 7, 11), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(i2, align_corners(xd, 5, 3), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(u, xd.repeat(2, axis=2).repeat(2, axis=3), rtol=1e-6)
    np.testing.assert_allclose(sc, xd * g[None, :, None, None], rtol=1e-6)
    np.testing.assert_allclose(bi, xd + g[None, :, None, None], rtol=1e-6)
    np.testing.assert_allclose(bn, (xd - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5),
                               rtol=1e-4, atol=1e-5)


def test_pair_loads_everywhere_and_the_cli_takes_it(tmp_path):
    rng = np.random.default_rng(6)
    w = rng.standard_normal((4, 3, 1, 1)).astype(np.float32)
    layers = """layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
  convolution_param { num_output: 4 kernel_size: 1 bias_term: false } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
"""
    proto, model = net(tmp_path, {"data": (1, 3, 2, 2)}, layers, {"conv": [w]}, stem="deploy")
    x = rng.standard_normal((1, 3, 2, 2)).astype(np.float32)
    want = np.maximum(np.einsum("ochw,nchw->nohw", w, x), 0)
    session = osprey.InferenceSession((proto, model))
    assert [i.name for i in session.get_inputs()] == ["data"]
    assert [o.name for o in session.get_outputs()] == ["conv"]
    np.testing.assert_allclose(session.run(None, {"data": x})[0], want, rtol=1e-5, atol=1e-6)
    # The prototxt alone finds deploy.caffemodel beside it.
    np.testing.assert_allclose(osprey.InferenceSession(proto).run(None, {"data": x})[0], want, rtol=1e-5, atol=1e-6)
    report = osprey.convert(proto, tmp_path / "m.osp", weights=model)
    assert report.caffe_layers == 2
    np.testing.assert_allclose(osprey.InferenceSession(str(tmp_path / "m.osp")).run(None, {"data": x})[0], want,
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError):
        osprey.InferenceSession((proto,))
    cli = os.path.join(os.path.dirname(osprey.__file__), "_bin", "osprey")
    if not os.path.exists(cli):
        pytest.skip("the osprey CLI is not bundled in this package")
    done = subprocess.run([cli, "convert", proto, model, str(tmp_path / "c.osp")], capture_output=True, text=True)
    assert done.returncode == 0 and "2 Caffe layers" in done.stdout, done.stdout + done.stderr
    for command in (["run"], ["info"]):
        done = subprocess.run([cli, *command, proto, model], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    done = subprocess.run([cli, "run", proto, model, "extra"], capture_output=True, text=True)
    assert done.returncode != 0 and "deploy.prototxt and its .caffemodel" in done.stderr


def test_unsupported_layers_are_listed_and_bad_files_named(tmp_path):
    proto, model = net(tmp_path, {"x": (1, 2, 3, 3)}, """
layer { name: "p" type: "SPP" bottom: "x" top: "p" }
layer { name: "d" type: "MVN" bottom: "p" top: "d" }
""")
    with pytest.raises(osprey.OspreyError, match=r"MVN \(1\), SPP \(1\)"):
        osprey.InferenceSession((proto, model))
    (tmp_path / "bad.caffemodel").write_bytes(b"\x0a\xff\xff")
    with pytest.raises(osprey.OspreyError, match="bad.caffemodel"):
        osprey.InferenceSession((proto, str(tmp_path / "bad.caffemodel")))
    (tmp_path / "bad.prototxt").write_text('input: "x"\nlayer { name: "a" type: "ReLU" bottom: "x" top: "y" \n')
    with pytest.raises(osprey.OspreyError, match=r"bad.prototxt:3"):
        osprey.InferenceSession(str(tmp_path / "bad.prototxt"))
