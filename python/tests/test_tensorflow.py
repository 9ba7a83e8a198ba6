"""TensorFlow frozen GraphDefs (made by tf_graph_models.py with TensorFlow itself) run by Osprey
and compared with TensorFlow's own outputs, output by output, within 1e-4 * max(1, max|ref|)."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

pytest.importorskip("tensorflow", reason="tensorflow is not installed (pip install tensorflow-cpu)")

import osprey  # noqa: E402
import tf_graph_models  # noqa: E402
from conftest import assert_close  # noqa: E402

# Known gaps: name -> reason (pytest.mark.xfail, strict).
XFAIL = {}
MODELS = ["mobilenet_v2", "resnet50", "efficientnet_b0", "bert_encoder", "indexing", "image_ops", "while_rnn"]
# Transposes left in the converted CNNs: the input's, moved to NCHW once (docs/tensorflow.md).
MAX_TRANSPOSES = {"mobilenet_v2": 1, "resnet50": 1, "efficientnet_b0": 1}


@pytest.fixture(scope="session")
def tf_models(tmp_path_factory):
    """Each model frozen once per session: name -> (path, inputs, TensorFlow's outputs)."""
    out_dir = str(tmp_path_factory.mktemp("tf_models"))
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = tf_graph_models.make(name, out_dir)
        return cache[name]

    return get


def osprey_bin():
    path = os.path.join(os.path.dirname(osprey.__file__), "_bin", "osprey")
    return path if os.path.exists(path) else None


def run_osprey(source, inputs):
    session = osprey.InferenceSession(source, threads=2)
    names = [i.name for i in session.get_inputs()]
    assert len(names) == len(inputs)
    return session.run(None, dict(zip(names, inputs)))


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=XFAIL[n], strict=True))
                                  if n in XFAIL else n for n in MODELS])
def test_matches_tensorflow(tf_models, name):
    path, inputs, refs = tf_models(name)
    outs = run_osprey(path, inputs)
    assert len(outs) == len(refs)
    for i, (o, r) in enumerate(zip(outs, refs)):
        assert_close(o, r, "%s output %d" % (name, i))


@pytest.mark.parametrize("name", sorted(MAX_TRANSPOSES))
def test_cnn_transposes(tf_models, name):
    if osprey_bin() is None:
        pytest.skip("the osprey CLI is not in the package")
    path = tf_models(name)[0]
    info = subprocess.run([osprey_bin(), "info", path], capture_output=True, text=True, check=True).stdout
    transposes = [line for line in info.splitlines() if line.strip().startswith("Transpose ")]
    count = int(transposes[0].split()[1]) if transposes else 0
    assert count <= MAX_TRANSPOSES[name], info


def test_convert_then_run(tf_models, tmp_path):
    path, inputs, refs = tf_models("indexing")
    osp = str(tmp_path / "indexing.osp")
    report = osprey.convert(path, osp)
    assert report.tensorflow_nodes > 0 and report.osprey_ops > 0
    for o, r in zip(run_osprey(osp, inputs), refs):
        assert_close(o, r, "indexing via .osp")


def one_line_error(source):
    with pytest.raises(osprey.OspreyError) as e:
        osprey.InferenceSession(source)
    message = str(e.value)
    assert "\n" not in message, message
    return message


def test_truncated_graph(tf_models, tmp_path):
    path = tf_models("indexing")[0]
    cut = tmp_path / "cut.pb"
    cut.write_bytes(open(path, "rb").read()[:-7])
    assert "truncated TensorFlow GraphDef" in one_line_error(str(cut))


def test_unknown_ops_are_listed(tmp_path):
    import tensorflow as tf
    g = tf.compat.v1.GraphDef()
    x = g.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = tf.float32.as_datatype_enum
    g.node.add(name="a", op="NoSuchOp", input=["x"])
    g.node.add(name="b", op="AlsoMissing", input=["a"])
    path = tmp_path / "unknown.pb"
    path.write_bytes(g.SerializeToString())
    assert "unsupported TensorFlow ops: AlsoMissing x1, NoSuchOp x1" in one_line_error(str(path))


def test_saved_model_directory_is_refused_clearly(tmp_path):
    (tmp_path / "saved_model.pb").write_bytes(b"")
    assert "SavedModel directories are not imported yet" in one_line_error(str(tmp_path))
