"""TFLite WHILE and IF (subgraphs as the bodies of Osprey's Loop and If), from models that
TensorFlow's TFLiteConverter writes: tf.while_loop with a data-dependent end, tf.cond, nested
control flow, and a Keras LSTM left rolled (a WHILE over the time steps). Each against LiteRT
on several inputs, within 1e-4 * max(1, max|ref|)."""
from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow", reason="tensorflow is not installed (pip install tensorflow-cpu)")
litert = pytest.importorskip("ai_edge_litert.interpreter", reason="ai-edge-litert is not installed (pip install ai-edge-litert)")

import osprey  # noqa: E402


def convert(function):
    converter = tf.lite.TFLiteConverter.from_concrete_functions([function.get_concrete_function()], function)
    return converter.convert()


def while_loop():
    @tf.function(input_signature=[tf.TensorSpec([2, 5], tf.float32)])
    def f(x):
        def cond(i, v):
            return tf.logical_and(i < 6, tf.reduce_sum(tf.abs(v)) < 40.0)

        def body(i, v):
            return i + 1, v * 1.5 + tf.sin(v)
        i, v = tf.while_loop(cond, body, [tf.constant(0), x])
        return v, i
    return convert(f)


def cond_branches():
    @tf.function(input_signature=[tf.TensorSpec([3, 4], tf.float32), tf.TensorSpec([4], tf.float32)])
    def f(x, b):
        return tf.cond(tf.reduce_sum(x) > 0, lambda: tf.matmul(x, x, transpose_b=True) + 1.0,
                       lambda: tf.exp(x[:, :3]) - tf.reduce_sum(b))
    return convert(f)


def nested():
    @tf.function(input_signature=[tf.TensorSpec([4], tf.float32)])
    def f(x):
        def body(i, v):
            v = tf.cond(tf.reduce_max(v) > 2.0, lambda: v * 0.5, lambda: v + tf.cast(i, tf.float32))
            return i + 1, v
        return tf.while_loop(lambda i, v: i < 5, body, [tf.constant(0), x])[1]
    return convert(f)


def rolled_lstm():
    import keras
    x = keras.Input((12, 8), batch_size=1)
    model = keras.Model(x, keras.layers.LSTM(16, return_sequences=True)(x))
    return tf.lite.TFLiteConverter.from_keras_model(model).convert()


MODELS = {"while_loop": while_loop, "cond_branches": cond_branches, "nested": nested, "rolled_lstm": rolled_lstm}


def litert_run(model, feed):
    interp = litert.Interpreter(model_content=model)
    interp.allocate_tensors()
    for detail, value in zip(interp.get_input_details(), feed):
        interp.set_tensor(detail["index"], value)
    interp.invoke()
    ops = {d["op_name"] for d in interp._get_ops_details()}
    return [interp.get_tensor(d["index"]) for d in interp.get_output_details()], ops


@pytest.mark.parametrize("name", sorted(MODELS))
def test_control_flow(name):
    model = MODELS[name]()
    session = osprey.InferenceSession(model, threads=2)
    interp = litert.Interpreter(model_content=model)
    saw = set()
    for seed in range(4):
        rng = np.random.default_rng(seed)
        # Both signs, so that each branch and both loop exits are taken.
        feed = [(rng.standard_normal(d["shape"]) * (1 if seed % 2 else -1)).astype(d["dtype"])
                for d in interp.get_input_details()]
        ref, ops = litert_run(model, feed)
        saw |= ops
        out = session.run(None, dict(zip([i.name for i in session.get_inputs()], feed)))
        assert len(out) == len(ref)
        for o, r in zip(out, ref):
            assert o.shape == r.shape and o.dtype == r.dtype
            bound = 1e-4 * max(1.0, float(np.max(np.abs(r))) if r.size else 0.0)
            assert float(np.max(np.abs(o.astype(np.float64) - r))) <= bound
    assert saw & {"WHILE", "IF"}, "the converter wrote no control flow: %s" % sorted(saw)
