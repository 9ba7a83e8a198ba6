"""TensorFlow test models for Osprey's TensorFlow frontend, frozen to GraphDefs or saved as
SavedModel directories.

Each builder of MODELS returns (tf.function, example inputs). `freeze` turns a function into a
frozen GraphDef (weights as Const nodes) with TensorFlow's own convert_variables_to_constants_v2,
and `make` writes <dir>/<name>.pb with the inputs and TensorFlow's outputs for them. Each builder
of SAVED_MODELS writes a SavedModel directory (tf.saved_model.save, or Keras' model.export) and
returns its example inputs by signature input key; `make_saved` adds the outputs of the
signature, run by TensorFlow from the reloaded directory, in output-key order. No weights are
downloaded: every Keras application is built with weights=None and seeded initialisers.

    python tf_graph_models.py OUT_DIR [NAME ...]
"""
from __future__ import annotations

import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2  # noqa: E402


def _keras_function(model, shape, dtype=tf.float32):
    fn = tf.function(lambda x: model(x, training=False))
    concrete = fn.get_concrete_function(tf.TensorSpec(shape, dtype, name="input"))
    concrete._keep_alive = (model, fn)  # the concrete function holds its variables weakly
    return concrete


def _randomize_batch_norms(model, rng):
    """Batch norms with statistics and scales away from their initial identity, so that the
    activations keep their size through the depth and the folds are exercised."""
    for layer in model.layers:
        if isinstance(layer, tf.keras.layers.BatchNormalization):
            n = layer.gamma.shape[0]
            layer.set_weights([rng.uniform(0.5, 1.5, n).astype(np.float32), rng.normal(0, 0.2, n).astype(np.float32),
                               rng.normal(0, 0.2, n).astype(np.float32), rng.uniform(0.5, 1.5, n).astype(np.float32)])
    return model


def _image(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


def mobilenet_v2(rng):
    tf.keras.utils.set_random_seed(1)
    m = tf.keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, weights=None, classes=10,
                                          classifier_activation=None)
    _randomize_batch_norms(m, rng)
    return _keras_function(m, [1, 96, 96, 3]), [_image(rng, (1, 96, 96, 3))]


def resnet50(rng):
    tf.keras.utils.set_random_seed(2)
    m = tf.keras.applications.ResNet50(input_shape=(64, 64, 3), weights=None, classes=10, classifier_activation=None)
    _randomize_batch_norms(m, rng)
    return _keras_function(m, [1, 64, 64, 3]), [_image(rng, (1, 64, 64, 3))]


def efficientnet_b0(rng):
    tf.keras.utils.set_random_seed(3)
    m = tf.keras.applications.EfficientNetB0(input_shape=(64, 64, 3), weights=None, classes=10,
                                             classifier_activation=None)
    _randomize_batch_norms(m, rng)
    return _keras_function(m, [1, 64, 64, 3]), [(rng.random((1, 64, 64, 3)) * 255).astype(np.float32)]


def bert_encoder(rng, layers=2, hidden=64, heads=4, seq=16, vocab=100):
    tf.keras.utils.set_random_seed(4)
    k = tf.keras.layers
    ids = tf.keras.Input((seq,), dtype="int32")
    x = k.Embedding(vocab, hidden)(ids)
    positions = k.Embedding(seq, hidden)(tf.range(seq)[None, :])
    x = k.LayerNormalization(epsilon=1e-12)(x + positions)
    for _ in range(layers):
        a = k.MultiHeadAttention(heads, hidden // heads)(x, x)
        x = k.LayerNormalization(epsilon=1e-12)(x + a)
        f = k.Dense(hidden * 4, activation="gelu")(x)
        x = k.LayerNormalization(epsilon=1e-12)(x + k.Dense(hidden)(f))
    m = tf.keras.Model(ids, k.Dense(8, activation="tanh")(x[:, 0]))
    return _keras_function(m, [1, seq], tf.int32), [rng.integers(0, vocab, (1, seq)).astype(np.int32)]


def indexing(rng):
    """StridedSlice (masks), Gather, GatherNd, Einsum, TopKV2, Pack/Unpack, Tile, Pad."""
    w = tf.constant(rng.standard_normal((8, 6)).astype(np.float32))
    table = tf.constant(rng.standard_normal((10, 8)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([2, 5, 8], tf.float32, name="x")])
    def fn(x):
        y = tf.einsum("bsd,de->bse", x, w)
        s = y[:, 1:4, ::2]            # begin/end masks, strides
        e = y[..., -1]                # ellipsis + shrink
        n = y[:, tf.newaxis, 0, :]    # new axis + shrink
        g = tf.gather(table, [3, 1, 7], axis=0)
        gn = tf.gather_nd(x, [[0, 1], [1, 4]])
        vals, idx = tf.math.top_k(tf.reshape(y, [2, -1]), k=4)
        t = tf.tile(tf.pad(s, [[0, 0], [1, 0], [0, 1]]), [1, 2, 1])
        u = tf.unstack(e, axis=0)
        p = tf.stack([u[1], u[0]], axis=1)
        return (s, e, n, tf.einsum("ij,kj->ik", g, gn), vals, tf.cast(idx, tf.float32), t, p)

    return fn.get_concrete_function(), [rng.standard_normal((2, 5, 8)).astype(np.float32)]


def image_ops(rng):
    """NHWC image ops around values held NCHW: transposed conv, resizes, pools, space/depth
    moves, split, fused batch norm, reductions, softmax, argmax, a transpose; and a Conv3D."""
    f = lambda *s: tf.constant(rng.standard_normal(s).astype(np.float32) * 0.5)  # noqa: E731
    w1, wt, w3 = f(3, 3, 4, 6), f(3, 3, 4, 6), f(2, 3, 3, 4, 5)
    scale, offset, mean = f(6), f(6), f(6)
    var = tf.constant(rng.random(6).astype(np.float32) + 0.5)

    @tf.function(input_signature=[tf.TensorSpec([1, 8, 8, 4], tf.float32, name="image")])
    def fn(x):
        y = tf.nn.leaky_relu(tf.nn.conv2d(x, w1, 1, "SAME"), 0.1)
        a = tf.nn.avg_pool2d(y, 3, 2, "SAME")
        up = tf.image.resize(a, [8, 8], "bilinear")
        near = tf.image.resize(a, [8, 8], "nearest")
        t = tf.nn.conv2d_transpose(a, wt, [1, 8, 8, 4], 2, "SAME")
        d2s = tf.nn.depth_to_space(tf.nn.space_to_depth(y, 2), 2)
        p, q = tf.split(y, [2, 4], axis=3)
        bn = tf.compat.v1.nn.fused_batch_norm(y, scale, offset, mean, var, is_training=False)[0]
        m = tf.reduce_max(y, axis=[1, 2], keepdims=True)
        z = tf.concat([up, near, d2s * m, tf.nn.elu(bn), tf.maximum(p, 0.1) - tf.minimum(q[..., :2], 0.2), t], axis=-1)
        z = tf.nn.max_pool2d(tf.pad(z, [[0, 0], [1, 1], [0, 2], [0, 0]], mode="REFLECT"), 2, 2, "VALID")
        v = tf.nn.conv3d(tf.reshape(x, [1, 2, 4, 8, 4]), w3, [1, 1, 2, 1, 1], "SAME")
        return (z, tf.cast(tf.argmax(y, axis=-1), tf.float32), tf.nn.softmax(y), tf.transpose(y, [0, 3, 1, 2]),
                tf.reduce_sum(y, axis=[1]), tf.nn.sigmoid(tf.reduce_mean(z, axis=[1, 2])), v)

    return fn.get_concrete_function(), [rng.standard_normal((1, 8, 8, 4)).astype(np.float32)]


def while_rnn(rng, steps=5, units=8):
    """A tf.while_loop RNN (TF2: a While op with function bodies)."""
    wx = tf.constant(rng.standard_normal((4, units)).astype(np.float32) * 0.5)
    wh = tf.constant(rng.standard_normal((units, units)).astype(np.float32) * 0.5)

    @tf.function(input_signature=[tf.TensorSpec([steps, 1, 4], tf.float32, name="x")])
    def fn(x):
        def body(i, h):
            return i + 1, tf.tanh(tf.matmul(x[i], wx) + tf.matmul(h, wh))
        _, h = tf.while_loop(lambda i, h: i < steps, body, [tf.constant(0), tf.zeros([1, units])])
        return h

    return fn.get_concrete_function(), [rng.standard_normal((steps, 1, 4)).astype(np.float32)]


def cond_branches(rng):
    """tf.cond on a computed predicate, each branch reading the input and a constant."""
    w = tf.constant(rng.standard_normal((6, 6)).astype(np.float32) * 0.5)

    @tf.function(input_signature=[tf.TensorSpec([2, 6], tf.float32, name="x")])
    def fn(x):
        y = tf.matmul(x, w)
        return tf.cond(tf.reduce_max(y) > 0.5, lambda: tf.nn.relu(y) * 2.0, lambda: tf.tanh(y) - w[0])

    return fn.get_concrete_function(), [rng.standard_normal((2, 6)).astype(np.float32)]


MODELS = {
    "mobilenet_v2": mobilenet_v2,
    "resnet50": resnet50,
    "efficientnet_b0": efficientnet_b0,
    "bert_encoder": bert_encoder,
    "indexing": indexing,
    "image_ops": image_ops,
    "while_rnn": while_rnn,
    "while_rnn_v2": while_rnn,
    "cond_v2": cond_branches,
}
# Frozen without lowering their control flow: While and If stay, with function bodies.
UNLOWERED = {"while_rnn_v2", "cond_v2"}


class _Module(tf.Module):
    """Variables and tf.functions, saved by tf.saved_model.save."""


def _variable(rng, *shape, scale=0.5):
    return tf.Variable(rng.standard_normal(shape).astype(np.float32) * scale)


def saved_cnn(rng, path):
    """A small Keras CNN (conv, batch norm, depthwise conv, pool, dense) by model.export."""
    tf.keras.utils.set_random_seed(5)
    k = tf.keras.layers
    inp = tf.keras.Input((32, 32, 3), name="image")
    x = k.ReLU(6.0)(k.BatchNormalization()(k.Conv2D(8, 3, strides=2, padding="same")(inp)))
    x = k.ReLU(6.0)(k.BatchNormalization()(k.DepthwiseConv2D(3, padding="same")(x)))
    x = k.Conv2D(16, 1)(x)
    x = k.GlobalAveragePooling2D()(k.MaxPooling2D()(x))
    m = _randomize_batch_norms(tf.keras.Model(inp, k.Dense(10)(x)), rng)
    m.export(path, verbose=False)
    return {"image": _image(rng, (1, 32, 32, 3))}


def saved_mobilenet_v2(rng, path):
    """Keras MobileNetV2 (alpha 0.35, 96x96) by model.export."""
    tf.keras.utils.set_random_seed(1)
    m = tf.keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, weights=None, classes=10,
                                          classifier_activation=None)
    _randomize_batch_norms(m, rng)
    m.export(path, verbose=False)
    return {m.inputs[0].name: _image(rng, (1, 96, 96, 3))}


def saved_resnet50(rng, path):
    """Keras ResNet-50 (64x64) by model.export."""
    tf.keras.utils.set_random_seed(2)
    m = tf.keras.applications.ResNet50(input_shape=(64, 64, 3), weights=None, classes=10, classifier_activation=None)
    _randomize_batch_norms(m, rng)
    m.export(path, verbose=False)
    return {m.inputs[0].name: _image(rng, (1, 64, 64, 3))}


def saved_efficientnet_b0(rng, path):
    """Keras EfficientNet-B0 (64x64, its own rescaling of 0..255 pixels) by model.export."""
    tf.keras.utils.set_random_seed(3)
    m = tf.keras.applications.EfficientNetB0(input_shape=(64, 64, 3), weights=None, classes=10,
                                             classifier_activation=None)
    _randomize_batch_norms(m, rng)
    m.export(path, verbose=False)
    return {m.inputs[0].name: (rng.random((1, 64, 64, 3)) * 255).astype(np.float32)}


def saved_bert_encoder(rng, path, layers=2, hidden=64, heads=4, seq=16, vocab=100):
    """The BERT-style encoder of bert_encoder, by model.export."""
    concrete, inputs = bert_encoder(rng, layers, hidden, heads, seq, vocab)
    model = concrete._keep_alive[0]
    model.export(path, verbose=False)
    return {model.inputs[0].name: inputs[0]}


def saved_while(rng, path, steps=5, units=8):
    """A tf.while_loop RNN with variable weights: a v2 While op with function bodies."""
    module = _Module()
    module.wx, module.wh = _variable(rng, 4, units), _variable(rng, units, units)

    @tf.function(input_signature=[tf.TensorSpec([steps, 1, 4], tf.float32, name="x")])
    def run(x):
        def body(i, h):
            return i + 1, tf.tanh(tf.matmul(x[i], module.wx) + tf.matmul(h, module.wh))
        _, h = tf.while_loop(lambda i, h: i < steps, body, [tf.constant(0), tf.zeros([1, units])])
        return {"h": h}

    module.run = run
    tf.saved_model.save(module, path, signatures={"serving_default": run})
    return {"x": rng.standard_normal((steps, 1, 4)).astype(np.float32)}


def saved_cond(rng, path):
    """tf.cond on a computed predicate: a v2 If (StatelessIf) with function branches."""
    module = _Module()
    module.w = _variable(rng, 6, 6)

    @tf.function(input_signature=[tf.TensorSpec([2, 6], tf.float32, name="x")])
    def run(x):
        y = tf.matmul(x, module.w)
        z = tf.cond(tf.reduce_sum(y) > 0, lambda: tf.nn.relu(y) * 2.0, lambda: tf.tanh(y) - module.w[0])
        return {"z": z}

    module.run = run
    tf.saved_model.save(module, path, signatures={"serving_default": run})
    return {"x": rng.standard_normal((2, 6)).astype(np.float32)}


def saved_two_signatures(rng, path):
    """Two signatures sharing a variable: serving_default (an affine map) and 'scores' (softmax)."""
    module = _Module()
    module.w, module.b = _variable(rng, 5, 3), _variable(rng, 3)

    @tf.function(input_signature=[tf.TensorSpec([None, 5], tf.float32, name="features")])
    def affine(features):
        return {"logits": tf.matmul(features, module.w) + module.b}

    @tf.function(input_signature=[tf.TensorSpec([None, 5], tf.float32, name="features")])
    def scores(features):
        logits = tf.matmul(features, module.w) + module.b
        return {"probabilities": tf.nn.softmax(logits), "best": tf.reduce_max(logits, axis=1)}

    module.affine, module.scores = affine, scores
    tf.saved_model.save(module, path, signatures={"serving_default": affine, "scores": scores})
    return {"features": rng.standard_normal((4, 5)).astype(np.float32)}


def saved_tf1(rng, path):
    """A TF1 graph (a reference variable and a resource variable) by simple_save: the restore is
    Assigns from save/RestoreV2 in the graph itself, and the input Placeholder has the key's name."""
    with tf.Graph().as_default() as g:
        x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
        w = tf.compat.v1.get_variable("w", initializer=rng.standard_normal((4, 3)).astype(np.float32),
                                      use_resource=False)
        b = tf.compat.v1.get_variable("b", initializer=rng.standard_normal(3).astype(np.float32), use_resource=True)
        y = tf.nn.relu(tf.matmul(x, w) + b, name="y")
        with tf.compat.v1.Session(graph=g) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.saved_model.simple_save(session, path, {"x": x}, {"y": y})
    return {"x": rng.standard_normal((2, 4)).astype(np.float32)}


SAVED_MODELS = {
    "saved_cnn": saved_cnn,
    "saved_mobilenet_v2": saved_mobilenet_v2,
    "saved_resnet50": saved_resnet50,
    "saved_efficientnet_b0": saved_efficientnet_b0,
    "saved_bert_encoder": saved_bert_encoder,
    "saved_while": saved_while,
    "saved_cond": saved_cond,
    "saved_two_signatures": saved_two_signatures,
    "saved_tf1": saved_tf1,
}


def saved_outputs(path, inputs, signature="serving_default"):
    """The signature's outputs, run by TensorFlow from the directory, in output-key order."""
    fn = tf.saved_model.load(path).signatures[signature]
    outputs = fn(**{k: tf.constant(v) for k, v in inputs.items()})
    return [np.asarray(outputs[k]) for k in sorted(outputs)]


def make_saved(name, out_dir, seed=0):
    """Writes the SavedModel <out_dir>/<name>/; returns (path, inputs by key, TensorFlow's outputs)."""
    path = os.path.join(out_dir, name)
    inputs = SAVED_MODELS[name](np.random.default_rng(seed), path)
    return path, inputs, saved_outputs(path, inputs)


def freeze(concrete, lower_control_flow=True):
    frozen = convert_variables_to_constants_v2(concrete, lower_control_flow=lower_control_flow)
    return frozen, frozen.graph.as_graph_def()


def make(name, out_dir, seed=0):
    """Writes <out_dir>/<name>.pb; returns (path, inputs, TensorFlow's outputs)."""
    concrete, inputs = MODELS[name](np.random.default_rng(seed))
    frozen, graph_def = freeze(concrete, lower_control_flow=name not in UNLOWERED)
    outputs = frozen(*[tf.constant(v) for v in inputs])
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    path = os.path.join(out_dir, name + ".pb")
    with open(path, "wb") as f:
        f.write(graph_def.SerializeToString())
    return path, inputs, [np.asarray(o) for o in outputs]


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for n in sys.argv[2:] or list(MODELS) + list(SAVED_MODELS):
        if n in SAVED_MODELS:
            p, ins, outs = make_saved(n, out)
            print(n, sorted(ins), [o.shape for o in outs], flush=True)
            continue
        p, ins, outs = make(n, out)
        gd = tf.compat.v1.GraphDef()
        gd.ParseFromString(open(p, "rb").read())
        ops = sorted({node.op for node in gd.node} | {node.op for f in gd.library.function for node in f.node_def})
        print(n, os.path.getsize(p), [o.shape for o in outs], " ".join(ops), flush=True)
