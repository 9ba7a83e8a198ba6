"""Whole Caffe networks written by caffe_models.py from PyTorch modules with known weights (the
modules' outputs are the reference), and SSD's PriorBox / DetectionOutput against numpy
implementations of Caffe's definitions (caffe_ssd.py). Every output must be within
1e-4 * max(1, max |reference|) of the reference."""
from __future__ import annotations

import numpy as np
import pytest

import caffe_models
import osprey
from caffe_ssd import detection_output, prior_box


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    """The generator's protobuf classes; the networks skip, saying why, where it cannot run (the
    PriorBox / DetectionOutput / syntax tests need only numpy and run anyway)."""
    why = caffe_models.missing_tools()
    if why:
        pytest.skip(why)
    return caffe_models.load_caffe_pb(tmp_path_factory.mktemp("caffe_proto"))


def twin(pb, seed, name, legacy=False):
    return caffe_models.Twin(pb, np.random.default_rng(seed), name, legacy)


def compare(paths, feeds, want):
    """Runs the pair; each output against want[name]; returns the largest error seen."""
    session = osprey.InferenceSession(paths)
    names = [o.name for o in session.get_outputs()]
    assert sorted(names) == sorted(want), names
    worst = 0.0
    for name, got in zip(names, session.run(None, feeds)):
        ref = np.asarray(want[name], dtype=np.float32)
        assert got.shape == ref.shape, (name, got.shape, ref.shape)
        err = float(np.max(np.abs(got - ref))) if ref.size else 0.0
        bound = 1e-4 * max(1.0, float(np.max(np.abs(ref))) if ref.size else 0.0)
        assert err <= bound, "%s: max error %g > %g" % (name, err, bound)
        worst = max(worst, err)
    print("max error %.3g" % worst)
    return worst


def check(t, tmp_path, stem, outputs):
    compare(t.save(tmp_path, stem), t.inputs, {o: t.value(o) for o in outputs})


def test_alexnet_style_with_lrn(pb, tmp_path):
    t = twin(pb, 1, "alexnet")
    t.input("data", (1, 3, 31, 31))
    t.relu(t.conv("data", "conv1", 3, 8, 5, stride=2, pad=1))
    t.pool(t.lrn("conv1", "norm1", 5, 0.3, 0.75, 2.0), "pool1", "MAX", 3, 2)
    t.relu(t.conv("pool1", "conv2", 8, 12, 3, pad=1, group=2))
    t.pool(t.lrn("conv2", "norm2", 3, 0.2, 0.75, 1.0), "pool2", "MAX", 3, 2)
    t.relu(t.conv("pool2", "conv3", 12, 12, 3, pad=1))
    t.pool("conv3", "pool3", "AVE", 2, 2)
    t.dropout(t.relu(t.fc("pool3", "fc6", 12 * 2 * 2, 16)))
    t.softmax(t.fc("fc6", "fc7", 16, 10), "prob")
    check(t, tmp_path, "alexnet", ["prob"])


def test_googlenet_style_inception(pb, tmp_path):
    t = twin(pb, 2, "googlenet")
    t.input("data", (1, 3, 19, 19))
    t.relu(t.conv("data", "conv1", 3, 8, 3, stride=2, pad=1))
    t.pool("conv1", "pool1", "MAX", 3, 2)
    b1 = t.relu(t.conv("pool1", "inc/1x1", 8, 4, 1))
    b2 = t.relu(t.conv(t.relu(t.conv("pool1", "inc/3x3_reduce", 8, 4, 1)), "inc/3x3", 4, 6, 3, pad=1))
    b3 = t.relu(t.conv(t.relu(t.conv("pool1", "inc/5x5_reduce", 8, 2, 1)), "inc/5x5", 2, 3, 5, pad=2))
    b4 = t.relu(t.conv(t.pool("pool1", "inc/pool", "MAX", 3, 1, pad=1), "inc/pool_proj", 8, 3, 1))
    t.concat([b1, b2, b3, b4], "inc/output")
    t.pool("inc/output", "pool2", "AVE", 3, 2, pad=1)
    t.softmax(t.fc(t.global_pool("pool2", "gap"), "loss3/classifier", 16, 7), "prob")
    check(t, tmp_path, "googlenet", ["prob"])


def test_resnet_with_batchnorm_scale_eltwise(pb, tmp_path):
    t = twin(pb, 3, "resnet")
    t.input("data", (1, 3, 17, 17))
    x = t.relu(t.bn_scale(t.conv("data", "conv1", 3, 8, 3, stride=2, pad=1, bias=False), "conv1", 8))
    x = t.pool(x, "pool1", "MAX", 3, 2)
    for i, (cin, cout, stride) in enumerate([(8, 8, 1), (8, 12, 2)]):
        name = "res%d" % i
        a = t.relu(t.bn_scale(t.conv(x, name + "a", cin, cout, 3, stride, 1, bias=False), name + "a", cout))
        b = t.bn_scale(t.conv(a, name + "b", cout, cout, 3, 1, 1, bias=False), name + "b", cout)
        short = x if stride == 1 else t.bn_scale(t.conv(x, name + "_proj", cin, cout, 1, stride, bias=False),
                                                 name + "_proj", cout)
        x = t.relu(t.eltwise_sum([short, b], name))
    t.fc(t.global_pool(x, "pool5"), "fc", 12, 5)
    check(t, tmp_path, "resnet", ["fc"])


def test_mobilenet_with_grouped_and_depthwise_convolutions(pb, tmp_path):
    t = twin(pb, 4, "mobilenet")
    t.input("data", (1, 3, 21, 21))
    x = t.relu(t.bn_scale(t.conv("data", "conv1", 3, 8, 3, stride=2, pad=1, bias=False), "conv1", 8))
    x = t.relu(t.bn_scale(t.conv(x, "conv2/dw", 8, 8, 3, pad=1, group=8, bias=False), "conv2/dw", 8))
    x = t.relu(t.bn_scale(t.conv(x, "conv2/sep", 8, 16, 1, bias=False), "conv2/sep", 16))
    x = t.relu(t.conv(x, "conv3/dw", 16, 16, 3, stride=2, pad=1, group=16, type_="DepthwiseConvolution"))
    x = t.relu(t.conv(x, "conv3/group", 16, 12, 1, group=4))
    t.softmax(t.conv(t.global_pool(x, "pool6"), "fc7", 12, 6, 1), "prob")
    check(t, tmp_path, "mobilenet", ["prob"])


def test_squeezenet(pb, tmp_path):
    t = twin(pb, 5, "squeezenet")
    t.input("data", (1, 3, 23, 23))
    x = t.pool(t.relu(t.conv("data", "conv1", 3, 8, 3, stride=2)), "pool1", "MAX", 3, 2)
    for i, (cin, s, e) in enumerate([(8, 4, 6), (12, 4, 8)]):
        name = "fire%d" % (i + 2)
        sq = t.relu(t.conv(x, name + "/squeeze1x1", cin, s, 1))
        x = t.concat([t.relu(t.conv(sq, name + "/expand1x1", s, e, 1)),
                      t.relu(t.conv(sq, name + "/expand3x3", s, e, 3, pad=1))], name + "/concat")
    x = t.dropout(x)
    x = t.relu(t.conv(x, "conv10", 16, 5, 1))
    t.softmax(t.global_pool(x, "pool10"), "prob")
    check(t, tmp_path, "squeezenet", ["prob"])


def test_segmentation_with_deconvolution_and_crop(pb, tmp_path):
    t = twin(pb, 6, "fcn")
    t.input("data", (1, 3, 20, 20))
    x = t.relu(t.conv("data", "conv1", 3, 8, 3, stride=2, pad=1))
    x = t.relu(t.conv(x, "conv2", 8, 8, 3, pad=1))
    score = t.conv(x, "score", 8, 4, 1)
    t.crop(t.deconv(score, "upscore", 4, 4, 4, 2), "data", "score_crop", 1)
    check(t, tmp_path, "fcn", ["score_crop"])


def test_legacy_v1_model(pb, tmp_path):
    t = twin(pb, 7, "lenet_v1", legacy=True)
    t.input("data", (1, 1, 12, 12))
    x = t.pool(t.relu(t.conv("data", "conv1", 1, 4, 3)), "pool1", "MAX", 2, 2)
    x = t.pool(t.conv(x, "conv2", 4, 6, 3, pad=1), "pool2", "AVE", 2, 2)
    t.softmax(t.fc(t.relu(x), "ip1", 6 * 3 * 3, 5), "prob")
    proto, model = t.save(tmp_path, "lenet_v1")
    assert "layers {" in open(proto).read() and "type: CONVOLUTION" in open(proto).read()
    compare((proto, model), t.inputs, {"prob": t.value("prob")})


def test_weights_that_do_not_fit_the_prototxt_name_the_layer(pb, tmp_path):
    t = twin(pb, 8, "bad")
    t.input("data", (1, 3, 8, 8))
    t.conv("data", "conv1", 3, 4, 3)
    proto, model = t.save(tmp_path, "bad")
    text = open(proto).read()
    # The prototxt asks for a 5 x 5 kernel; the caffemodel holds 3 x 3 filters.
    open(proto, "w").write(text.replace("kernel_size: 3", "kernel_size: 5"))
    with pytest.raises(osprey.OspreyError, match=r"layer 'conv1' \(Convolution\).*\[4, 3, 3, 3\]"):
        osprey.InferenceSession((proto, model))
    # Filters for 2 input channels on a 3-channel input: the import cannot know the channels, the
    # shapes' check names the layer's op.
    t = twin(pb, 8, "bad2")
    t.input("data", (1, 3, 8, 8))
    t.blobs["data"] = t.blobs["data"][:, :2]
    t.conv("data", "conv1", 2, 4, 3)
    with pytest.raises(osprey.OspreyError, match=r"'conv1.*W \[4, 2, 3, 3\] needs X channels"):
        osprey.InferenceSession(t.save(tmp_path, "bad2")).run(None, t.inputs)


def test_syntax_errors_name_the_line(tmp_path):
    path = tmp_path / "broken.prototxt"
    path.write_text('name: "x"\ninput: "data"\ninput_shape { dim: 1 dim: 2 }\nlayer {\n  name: "a" type: "ReLU"\n'
                    '  bottom: "data" top: "b" relu_param { negative_slope: 0.1 \n}\n')
    with pytest.raises(osprey.OspreyError, match=r"broken.prototxt:8"):
        osprey.InferenceSession(str(path))
    path.write_text('input: "data"\ninput_shape { dim: 1 }\nlayer { name: "a" type: "ReLU" bottom: "data" top: "b" ]\n')
    with pytest.raises(osprey.OspreyError, match=r"broken.prototxt:3"):
        osprey.InferenceSession(str(path))


# ---- SSD: PriorBox and DetectionOutput against caffe_ssd.py ----


def prior_box_layer(name, feature, image, **p):
    return 'layer { name: "%s" type: "PriorBox" bottom: "%s" bottom: "%s" top: "%s"\n  prior_box_param { %s } }\n' % (
        name, feature, image, name, " ".join("%s: %s" % (k, str(v).lower() if isinstance(v, bool) else v)
                                             for k, vs in p.items() for v in (vs if isinstance(vs, list) else [vs])))


@pytest.mark.parametrize("case", range(4))
def test_prior_box_variants(tmp_path, case):
    fh, fw, ih, iw = [(3, 5, 30, 40), (4, 4, 32, 32), (2, 3, 20, 31), (5, 2, 25, 9)][case]
    params = [dict(min_size=[8.0], max_size=[16.0], aspect_ratio=[2.0], variance=[0.1, 0.1, 0.2, 0.2]),
              dict(min_size=[6.0, 12.0], max_size=[10.0, 20.0], aspect_ratio=[2.0, 3.0, 2.0], flip=False, clip=True),
              dict(min_size=[7.0], aspect_ratio=[0.5], step=10.0, offset=0.25, img_size=30, variance=[0.2]),
              dict(min_size=[5.0], max_size=[9.0], step_h=5.0, step_w=4.0, img_h=25, img_w=9, clip=True)][case]
    text = 'input: "f"\ninput_shape { dim: 1 dim: 2 dim: %d dim: %d }\n' % (fh, fw)
    text += 'input: "img"\ninput_shape { dim: 1 dim: 3 dim: %d dim: %d }\n' % (ih, iw)
    (tmp_path / "p.prototxt").write_text(text + prior_box_layer("priors", "f", "img", **params))
    kw = dict(min_sizes=params["min_size"], max_sizes=params.get("max_size", ()), ratios=params.get("aspect_ratio", ()),
              flip=params.get("flip", True), clip=params.get("clip", False), variance=params.get("variance", [0.1]),
              offset=params.get("offset", 0.5))
    if "img_size" in params:
        kw["img"] = (params["img_size"],) * 2
    if "img_h" in params:
        kw["img"] = (params["img_h"], params["img_w"])
    if "step" in params:
        kw["step"] = (params["step"],) * 2
    if "step_h" in params:
        kw["step"] = (params["step_h"], params["step_w"])
    feeds = {"f": np.zeros((1, 2, fh, fw), np.float32), "img": np.zeros((1, 3, ih, iw), np.float32)}
    compare(str(tmp_path / "p.prototxt"), feeds, {"priors": prior_box(fh, fw, ih, iw, **kw)})


DETECTION_CASES = [
    dict(share_location=True, nms_threshold=0.45, top_k=30, keep_top_k=20, confidence=0.2),
    dict(share_location=False, background=-1, nms_threshold=0.3, eta=0.9, confidence=0.25),
    dict(share_location=True, background=2, nms_threshold=0.5, code="CORNER", in_target=True, top_k=5),
    dict(share_location=False, nms_threshold=0.4, code="CORNER_SIZE", keep_top_k=7, confidence=0.1),
    dict(share_location=True, nms_threshold=0.45, confidence=1.0),  # nothing found: one row of -1s per image
]


@pytest.mark.parametrize("case", range(len(DETECTION_CASES)))
def test_detection_output_variants(tmp_path, case):
    p = DETECTION_CASES[case]
    rng = np.random.default_rng(20 + case)
    n, priors, classes = 2, 37, 3
    lc = 1 if p["share_location"] else classes
    prior = prior_box(1, 37, 37, 37, [9.0], variance=[0.1, 0.1, 0.2, 0.2])
    prior[0, 0] += rng.uniform(-0.05, 0.05, prior.shape[2]).astype(np.float32)
    loc = (rng.standard_normal((n, priors * lc * 4)) * 0.5).astype(np.float32)
    logits = rng.standard_normal((n, priors, classes)) * 2
    conf = (np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)).reshape(n, -1).astype(np.float32)
    param = "num_classes: %d share_location: %s background_label_id: %d code_type: %s" % (
        classes, str(p["share_location"]).lower(), p.get("background", 0), p.get("code", "CENTER_SIZE"))
    param += " variance_encoded_in_target: %s" % str(p.get("in_target", False)).lower()
    param += " nms_param { nms_threshold: %g%s%s }" % (p["nms_threshold"], " top_k: %d" % p["top_k"] if "top_k" in p else "",
                                                      " eta: %g" % p["eta"] if "eta" in p else "")
    if "keep_top_k" in p:
        param += " keep_top_k: %d" % p["keep_top_k"]
    if "confidence" in p:
        param += " confidence_threshold: %g" % p["confidence"]
    text = "".join('input: "%s"\ninput_shape { %s }\n' % (k, " ".join("dim: %d" % d for d in s))
                   for k, s in [("loc", loc.shape), ("conf", conf.shape), ("prior", prior.shape)])
    text += ('layer { name: "det" type: "DetectionOutput" bottom: "loc" bottom: "conf" bottom: "prior" top: "det"\n'
             '  detection_output_param { %s } }\n' % param)
    (tmp_path / "d.prototxt").write_text(text)
    args = {k: v for k, v in p.items() if k != "top_k"}
    want = detection_output(loc, conf, prior, classes, top_k=p.get("top_k", -1), **args)
    if case == len(DETECTION_CASES) - 1:
        assert want.shape == (1, 1, n, 7) and (want[0, 0, :, 1:] == -1).all()
    else:
        assert want.shape[2] > 4
    compare(str(tmp_path / "d.prototxt"), {"loc": loc, "conf": conf, "prior": prior}, {"det": want})


def test_ssd_style_detector(pb, tmp_path):
    import torch
    t = twin(pb, 9, "ssd")
    t.input("data", (1, 3, 24, 24))
    f1 = t.relu(t.conv(t.relu(t.conv("data", "conv1", 3, 8, 3, stride=2, pad=1)), "conv2", 8, 8, 3, stride=2, pad=1))
    f2 = t.relu(t.conv(f1, "conv3", 8, 8, 3, stride=2, pad=1))
    classes = 3
    heads = [(f1, dict(min_size=[6.0], max_size=[12.0], aspect_ratio=[2.0], variance=[0.1, 0.1, 0.2, 0.2])),
             (f2, dict(min_size=[12.0], max_size=[20.0], aspect_ratio=[2.0, 3.0], clip=True, step=8.0,
                       variance=[0.1, 0.1, 0.2, 0.2]))]
    locs, confs, priors, ref_priors = [], [], [], []
    for f, params in heads:
        k = 2 + 2 * len(params["aspect_ratio"])
        for kind, width, out in (("loc", 4, locs), ("conf", classes, confs)):
            name = "%s_mbox_%s" % (f, kind)
            t.conv(f, name, 8, k * width, 3, pad=1)
            t.blobs[name + "_perm"] = t.blobs[name].permute(0, 2, 3, 1)
            t.layer("Permute", name + "_perm", [name], [name + "_perm"], {"permute_param": {"order": [0, 2, 3, 1]}})
            t.blobs[name + "_flat"] = torch.flatten(t.blobs[name + "_perm"], 1)
            t.layer("Flatten", name + "_flat", [name + "_perm"], [name + "_flat"], {"flatten_param": {"axis": 1}})
            out.append(name + "_flat")
        t.layer("PriorBox", f + "_mbox_priorbox", [f, "data"], [f + "_mbox_priorbox"], {"prior_box_param": params})
        priors.append(f + "_mbox_priorbox")
        fh, fw = t.blobs[f].shape[2:]
        ref_priors.append(prior_box(fh, fw, 24, 24, params["min_size"], params["max_size"], params["aspect_ratio"],
                                    clip=params.get("clip", False), variance=params["variance"],
                                    step=(params["step"],) * 2 if "step" in params else None))
    t.concat(locs, "mbox_loc")
    t.concat(confs, "mbox_conf")
    t.blobs["mbox_conf_reshape"] = t.blobs["mbox_conf"].reshape(1, -1, classes)
    t.layer("Reshape", "mbox_conf_reshape", ["mbox_conf"], ["mbox_conf_reshape"],
            {"reshape_param": {"shape": {"dim": [0, -1, classes]}}})
    t.softmax("mbox_conf_reshape", "mbox_conf_softmax", axis=2)
    t.blobs["mbox_conf_flatten"] = torch.flatten(t.blobs["mbox_conf_softmax"], 1)
    t.layer("Flatten", "mbox_conf_flatten", ["mbox_conf_softmax"], ["mbox_conf_flatten"], {"flatten_param": {"axis": 1}})
    t.layer("Concat", "mbox_priorbox", priors, ["mbox_priorbox"], {"concat_param": {"axis": 2}})
    t.layer("DetectionOutput", "detection_out", ["mbox_loc", "mbox_conf_flatten", "mbox_priorbox"], ["detection_out"],
            {"detection_output_param": {"num_classes": classes, "share_location": True, "background_label_id": 0,
                                        "nms_param": {"nms_threshold": 0.45, "top_k": 40}, "code_type": "CENTER_SIZE",
                                        "keep_top_k": 25, "confidence_threshold": 0.3}})
    prior = np.concatenate(ref_priors, axis=2)
    want = detection_output(t.value("mbox_loc"), t.value("mbox_conf_flatten"), prior, classes, nms_threshold=0.45,
                            top_k=40, keep_top_k=25, confidence=0.3)
    assert want.shape[2] > 5  # enough detections that NMS and keep_top_k both act
    compare(t.save(tmp_path, "ssd"), t.inputs, {"detection_out": want})
