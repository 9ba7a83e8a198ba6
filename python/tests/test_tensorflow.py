"""TensorFlow frozen GraphDefs and SavedModel directories (made by tf_graph_models.py with
TensorFlow itself) run by Osprey and compared with TensorFlow's own outputs, output by output,
within 1e-4 * max(1, max|ref|)."""
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
MODELS = ["mobilenet_v2", "resnet50", "efficientnet_b0", "bert_encoder", "indexing", "image_ops", "while_rnn",
          "while_rnn_v2", "cond_v2"]
SAVED_MODELS = ["saved_cnn", "saved_mobilenet_v2", "saved_resnet50", "saved_efficientnet_b0", "saved_bert_encoder", "saved_while", "saved_cond",
                "saved_two_signatures", "saved_tf1"]
# Known gaps of SavedModels: name -> reason (pytest.mark.xfail, strict).
SAVED_XFAIL = {}
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


@pytest.fixture(scope="session")
def saved_models(tmp_path_factory):
    """Each SavedModel written once per session: name -> (directory, inputs by key, TensorFlow's
    outputs in key order)."""
    out_dir = str(tmp_path_factory.mktemp("tf_saved_models"))
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = tf_graph_models.make_saved(name, out_dir)
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


@pytest.mark.parametrize("name,tf_op", [("while_rnn_v2", "While"), ("cond_v2", "If")])
def test_unlowered_control_flow_is_functional(tf_models, name, tf_op):
    """The v2 models are frozen with While / If and their function bodies, not v1 frames."""
    import tensorflow as tf
    graph = tf.compat.v1.GraphDef()
    graph.ParseFromString(open(tf_models(name)[0], "rb").read())
    ops = {n.op for n in graph.node}
    assert ops & {tf_op, "Stateless" + tf_op} and not ops & {"Enter", "Switch"}, ops


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


def run_saved(source, inputs):
    """Runs by the signature's input keys; the outputs come in key order, named by their keys."""
    session = osprey.InferenceSession(source, threads=2)
    assert sorted(i.name for i in session.get_inputs()) == sorted(inputs)
    names = [o.name for o in session.get_outputs()]
    assert names == sorted(names)
    return session.run(None, inputs)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=SAVED_XFAIL[n], strict=True))
                                  if n in SAVED_XFAIL else n for n in SAVED_MODELS])
def test_saved_model_matches_tensorflow(saved_models, name):
    path, inputs, refs = saved_models(name)
    outs = run_saved(path, inputs)
    assert len(outs) == len(refs)
    for i, (o, r) in enumerate(zip(outs, refs)):
        assert_close(o, r, "%s output %d" % (name, i))


def test_saved_mobilenet_transposes(saved_models):
    """Inlined from its SavedModel, MobileNetV2 keeps the layout of the frozen one: one Transpose."""
    if osprey_bin() is None:
        pytest.skip("the osprey CLI is not in the package")
    info = subprocess.run([osprey_bin(), "info", saved_models("saved_mobilenet_v2")[0]], capture_output=True,
                          text=True, check=True).stdout
    transposes = [line for line in info.splitlines() if line.strip().startswith("Transpose ")]
    assert (int(transposes[0].split()[1]) if transposes else 0) <= MAX_TRANSPOSES["mobilenet_v2"], info


def test_saved_model_cond_takes_both_branches(saved_models):
    """The predicate is the sign of a linear map's sum: negating the input takes the other branch."""
    path, inputs, _ = saved_models("saved_cond")
    session = osprey.InferenceSession(path, threads=2)
    for sign in (1.0, -1.0):
        feed = {k: (v * sign).astype(np.float32) for k, v in inputs.items()}
        refs = tf_graph_models.saved_outputs(path, feed)
        for o, r in zip(session.run(None, feed), refs):
            assert_close(o, r, "saved_cond, input times %g" % sign)


@pytest.mark.parametrize("name,op", [("saved_while", "Loop"), ("saved_cond", "If")])
def test_saved_model_v2_control_flow_becomes_subgraph_ops(saved_models, name, op):
    if osprey_bin() is None:
        pytest.skip("the osprey CLI is not in the package")
    info = subprocess.run([osprey_bin(), "info", saved_models(name)[0]], capture_output=True, text=True,
                          check=True).stdout
    assert any(line.split()[:1] == [op] for line in info.splitlines()), info


def test_saved_model_signature_is_chosen(saved_models, tmp_path):
    path, inputs, _ = saved_models("saved_two_signatures")
    refs = tf_graph_models.saved_outputs(path, inputs, "scores")
    osp = str(tmp_path / "scores.osp")
    report = osprey.convert(path, osp, signature="scores")
    assert report.tensorflow_nodes > 0
    session = osprey.InferenceSession(osp, threads=2)
    assert [o.name for o in session.get_outputs()] == ["best", "probabilities"]
    for o, r in zip(session.run(None, inputs), refs):
        assert_close(o, r, "signature 'scores'")
    direct = osprey.InferenceSession(path, threads=2, signature="scores")
    assert [o.name for o in direct.get_outputs()] == ["best", "probabilities"]
    for o, r in zip(direct.run(None, inputs), refs):
        assert_close(o, r, "signature 'scores', run from the directory")
    if osprey_bin() is not None:
        cli = str(tmp_path / "cli.osp")
        subprocess.run([osprey_bin(), "convert", path, cli, "--signature", "scores"], check=True, capture_output=True)
        assert [o.name for o in osprey.InferenceSession(cli).get_outputs()] == ["best", "probabilities"]
        done = subprocess.run([osprey_bin(), "run", path], capture_output=True, text=True)
        assert done.returncode == 0 and "logits" in done.stdout, done.stdout + done.stderr
        done = subprocess.run([osprey_bin(), "run", path, "--signature", "scores"], capture_output=True, text=True)
        assert done.returncode == 0 and "probabilities" in done.stdout, done.stdout + done.stderr


def test_saved_model_unknown_signature(saved_models, tmp_path):
    path = saved_models("saved_two_signatures")[0]
    with pytest.raises(osprey.OspreyError) as e:
        osprey.convert(path, str(tmp_path / "x.osp"), signature="nope")
    message = str(e.value)
    assert "\n" not in message
    assert "no signature 'nope' (it has: scores, serving_default" in message, message
    with pytest.raises(osprey.OspreyError, match="no signature 'nope'"):
        osprey.InferenceSession(path, signature="nope")


def copy_saved(path, tmp_path):
    import shutil
    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    return copy


def test_saved_model_missing_shard(saved_models, tmp_path):
    copy = copy_saved(saved_models("saved_cnn")[0], tmp_path)
    shard = copy / "variables" / "variables.data-00000-of-00001"
    shard.unlink()
    message = one_line_error(str(copy))
    assert "variables.data-00000-of-00001" in message and "cannot read" in message, message


def test_saved_model_truncated_shard(saved_models, tmp_path):
    copy = copy_saved(saved_models("saved_cnn")[0], tmp_path)
    shard = copy / "variables" / "variables.data-00000-of-00001"
    shard.write_bytes(shard.read_bytes()[:100])
    message = one_line_error(str(copy))
    assert "truncated TensorFlow variables shard" in message and "variables.data-00000-of-00001" in message, message


def test_saved_model_truncated_index(saved_models, tmp_path):
    copy = copy_saved(saved_models("saved_cnn")[0], tmp_path)
    index = copy / "variables" / "variables.index"
    data = index.read_bytes()
    for cut in (len(data) - 1, len(data) // 2, 10):
        index.write_bytes(data[:cut])
        message = one_line_error(str(copy))
        assert "variables.index" in message, message


def test_saved_model_damaged_pb(tmp_path):
    (tmp_path / "saved_model.pb").write_bytes(b"\x12\x40")
    assert "saved_model.pb: truncated TensorFlow SavedModel" in one_line_error(str(tmp_path))
