"""Keras models with random weights converted by tf.lite.TFLiteConverter into the four kinds of
TFLite model that TensorFlow writes: float32, float16 weights ("float16"), int8 weights with
float activations ("dynamic", dynamic-range quantization) and full-integer int8 with int8 inputs
and outputs ("int8", calibrated on random inputs). Nothing is downloaded (weights=None).

Small input sizes keep the conversions quick: the tests check the ops and their numerics, not
the accuracy of the models.
"""
from __future__ import annotations

import os

import numpy as np

VARIANTS = ("float32", "float16", "dynamic", "int8")


def _keras():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    return tf, tf.keras


def _calibrate_batch_norms(model, keras):
    """Sets each BatchNormalization's moving statistics to those of one random batch.

    With fresh statistics (mean 0, variance 1) activations shrink layer by layer (to 1e-10 at
    the end of MobileNetV2), which would make every comparison pass; with these they stay
    near unit scale, as in a trained network."""
    norms = [layer for layer in model.layers if isinstance(layer, keras.layers.BatchNormalization)]
    for layer in norms:
        layer.momentum = 0.0
    batch = np.random.default_rng(3).standard_normal((4,) + tuple(model.inputs[0].shape[1:])).astype(np.float32)
    model(batch, training=True)
    for layer in norms:
        layer.momentum = 0.99


def _image_model(name):
    # Random weights give near-uniform class probabilities, which would hide most differences:
    # the models output their last feature map and the logits (no softmax).
    def build():
        tf, keras = _keras()
        apps = keras.applications
        if name == "mobilenet_v2":
            model = apps.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, weights=None, classes=10,
                                     classifier_activation=None)
        elif name == "mobilenet_v3_small":
            model = apps.MobileNetV3Small(input_shape=(96, 96, 3), alpha=0.75, weights=None, classes=10,
                                          classifier_activation=None)
        elif name == "efficientnet_b0":
            model = apps.EfficientNetB0(input_shape=(64, 64, 3), weights=None, classes=10, classifier_activation=None)
        elif name == "resnet50":
            model = apps.ResNet50(input_shape=(64, 64, 3), weights=None, classes=10, classifier_activation=None)
        else:
            raise KeyError(name)
        _calibrate_batch_norms(model, keras)
        pool = [layer for layer in model.layers if isinstance(layer, keras.layers.GlobalAveragePooling2D)][-1]
        return keras.Model(model.inputs, [pool.input, model.outputs[0]])
    return build


def _transformer():
    tf, keras = _keras()
    layers = keras.layers
    x = keras.Input((16, 32), batch_size=1)
    a = layers.MultiHeadAttention(num_heads=2, key_dim=16)(x, x)
    h = layers.LayerNormalization(epsilon=1e-5)(x + a)
    f = layers.Dense(32)(layers.Dense(64, activation="relu")(h))
    h = layers.LayerNormalization(epsilon=1e-5)(h + f)
    y = layers.Dense(4)(layers.GlobalAveragePooling1D()(h))
    return keras.Model(x, [h, y])


def _lstm_text():
    # Unrolled: Keras 3's rolled LSTM reaches the converter as a tf.while_loop, which becomes a
    # TFLite WHILE (from_keras_model) or fails to convert without TensorFlow ops
    # (from_saved_model), not the fused UNIDIRECTIONAL_SEQUENCE_LSTM of tf.keras 2 models.
    # Unrolled, its steps are plain FULLY_CONNECTED, SPLIT, LOGISTIC, TANH, MUL and ADD ops.
    tf, keras = _keras()
    layers = keras.layers
    x = keras.Input((12,), batch_size=1, dtype="int32")
    h = layers.LSTM(16, unroll=True, return_sequences=True)(layers.Embedding(100, 16)(x))
    return keras.Model(x, [h, layers.Dense(4)(h[:, -1])])


def _segmentation():
    tf, keras = _keras()
    layers = keras.layers
    x = keras.Input((64, 64, 3), batch_size=1)
    h = layers.Conv2D(16, 3, strides=2, padding="same", activation="relu")(x)
    h = layers.Conv2D(32, 3, strides=2, padding="same", activation="relu")(h)
    h = layers.Conv2D(5, 1)(h)
    return keras.Model(x, layers.UpSampling2D(4, interpolation="bilinear")(h))


BUILDERS = {
    "mobilenet_v2": _image_model("mobilenet_v2"),
    "mobilenet_v3_small": _image_model("mobilenet_v3_small"),
    "efficientnet_b0": _image_model("efficientnet_b0"),
    "resnet50": _image_model("resnet50"),
    "transformer": _transformer,
    "lstm_text": _lstm_text,
    "segmentation": _segmentation,
}


def random_inputs(model, rng):
    """One batch-1 input per model input: token ids below 100 for integer inputs, else N(0, 1)."""
    feeds = []
    for spec in model.inputs:
        shape = [1 if d is None else d for d in spec.shape]
        if "int" in str(spec.dtype):
            feeds.append(rng.integers(0, 100, shape).astype(np.int32))
        else:
            feeds.append(rng.standard_normal(shape).astype(np.float32))
    return feeds


def convert(model, saved_model_dir, variant, seed=0):
    """The .tflite bytes of `model` (exported to `saved_model_dir`) in one of VARIANTS."""
    tf, keras = _keras()
    converter = tf.lite.TFLiteConverter.from_saved_model(saved_model_dir)
    if variant == "float16":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.target_spec.supported_types = [tf.float16]
    elif variant == "dynamic":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    elif variant == "int8":
        rng = np.random.default_rng(seed + 1)
        samples = [random_inputs(model, rng) for _ in range(4)]
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = lambda: iter(samples)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        if all("float" in str(spec.dtype) for spec in model.inputs):
            converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    elif variant != "float32":
        raise ValueError(variant)
    return converter.convert()


class ModelCache:
    """Builds each Keras model once and converts each variant on first use, into `directory`."""

    def __init__(self, directory, seed=0):
        self.directory = directory
        self.seed = seed
        self.models = {}

    def keras_model(self, name):
        """The Keras model and its SavedModel directory (traced once for all the variants)."""
        if name not in self.models:
            tf, keras = _keras()
            keras.utils.set_random_seed(self.seed)
            model = BUILDERS[name]()
            saved = os.path.join(self.directory, name + ".saved_model")
            model.export(saved, verbose=False)
            self.models[name] = (model, saved)
        return self.models[name]

    def path(self, name, variant):
        path = os.path.join(self.directory, "%s.%s.tflite" % (name, variant))
        if not os.path.exists(path):
            model, saved = self.keras_model(name)
            data = convert(model, saved, variant, self.seed)
            with open(path, "wb") as f:
                f.write(data)
        return path
