"""scikit-learn models converted by skl2onnx (tree ensembles as TreeEnsembleRegressor /
TreeEnsembleClassifier, probabilities as tensors: zipmap off) against ONNX Runtime; skipped where
scikit-learn or skl2onnx is absent."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import assert_close, ort

import osprey

sklearn = pytest.importorskip("sklearn")
skl2onnx = pytest.importorskip("skl2onnx")
from sklearn import ensemble, tree  # noqa: E402
from skl2onnx.common.data_types import FloatTensorType  # noqa: E402


def convert(model, features):
    onx = skl2onnx.convert_sklearn(model, initial_types=[("x", FloatTensorType([None, features]))],
                                   options={id(model): {"zipmap": False}} if hasattr(model, "classes_") else None,
                                   target_opset={"": 17, "ai.onnx.ml": 3})
    return onx.SerializeToString()


def data(seed, classes=None):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((200, 6)).astype(np.float32)
    y = x[:, 0] * 2 + np.sin(x[:, 1]) * 3 - x[:, 2] * x[:, 3]
    if classes:
        y = np.digitize(y, np.quantile(y, np.linspace(0, 1, classes + 1)[1:-1]))
    return x, y


@pytest.mark.parametrize("make", [lambda: tree.DecisionTreeRegressor(max_depth=6, random_state=0),
                                  lambda: ensemble.RandomForestRegressor(n_estimators=12, max_depth=5, random_state=0),
                                  lambda: ensemble.GradientBoostingRegressor(n_estimators=15, max_depth=3, random_state=0)])
def test_regressors(make):
    x, y = data(1)
    model = make().fit(x, y)
    onx = convert(model, 6)
    ref = ort.InferenceSession(onx, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    out = osprey.InferenceSession(onx).run(None, {"x": x})
    assert_close(out[0], ref[0], "prediction")
    np.testing.assert_allclose(out[0].ravel(), model.predict(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("classes", [2, 4])
@pytest.mark.parametrize("make", [lambda: tree.DecisionTreeClassifier(max_depth=6, random_state=0),
                                  lambda: ensemble.RandomForestClassifier(n_estimators=10, max_depth=5, random_state=0),
                                  lambda: ensemble.GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0)])
def test_classifiers(make, classes):
    x, y = data(2, classes)
    model = make().fit(x, y)
    onx = convert(model, 6)
    ref = ort.InferenceSession(onx, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    out = osprey.InferenceSession(onx).run(None, {"x": x})
    np.testing.assert_array_equal(out[0], ref[0])
    assert_close(out[1], ref[1], "probabilities")
    np.testing.assert_array_equal(out[0], model.predict(x))


@pytest.mark.parametrize("classes", [2, 3])
def test_linear_models_and_transforms(classes):
    from sklearn import linear_model, pipeline, preprocessing
    x, y = data(3, classes)
    x[:, 4] *= 10
    x[:, 5] += 3
    models = [linear_model.LinearRegression().fit(x, x[:, 0] * 2 - x[:, 1]),
              linear_model.Ridge(alpha=0.5).fit(x, np.stack([x[:, 0], x[:, 1] * 3], axis=1)),
              linear_model.LogisticRegression(max_iter=500).fit(x, y),
              pipeline.make_pipeline(preprocessing.StandardScaler(), linear_model.LogisticRegression(max_iter=500)).fit(x, y),
              pipeline.make_pipeline(preprocessing.Normalizer(norm="l1"), preprocessing.MinMaxScaler(),
                                     linear_model.LogisticRegression(max_iter=500)).fit(x, y),
              pipeline.make_pipeline(preprocessing.Normalizer(norm="max"), preprocessing.MaxAbsScaler(),
                                     linear_model.LinearRegression()).fit(x, x[:, 2])]
    for model in models:
        onx = skl2onnx.convert_sklearn(model, initial_types=[("x", FloatTensorType([None, 6]))],
                                       options={"zipmap": False} if hasattr(model, "classes_") else None,
                                       target_opset={"": 17, "ai.onnx.ml": 3}).SerializeToString()
        ref = ort.InferenceSession(onx, providers=["CPUExecutionProvider"]).run(None, {"x": x})
        out = osprey.InferenceSession(onx).run(None, {"x": x})
        for o, r in zip(out, ref):
            if r.dtype == np.int64:
                np.testing.assert_array_equal(o, r)
            else:
                assert_close(o, r, type(model).__name__)


def test_zipmap_probabilities_as_onnxruntime_gives_them():
    """skl2onnx's default classifier output: a list of {label: probability} per row."""
    from sklearn import linear_model
    x, y = data(4, 3)
    for labels in (y, np.array(["ant", "bee", "cat"])[y]):
        for model in (linear_model.LogisticRegression(max_iter=500).fit(x, labels),
                      ensemble.RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0).fit(x, labels)):
            onx = skl2onnx.convert_sklearn(model, initial_types=[("x", FloatTensorType([None, 6]))],
                                           target_opset={"": 17, "ai.onnx.ml": 3}).SerializeToString()
            ref = ort.InferenceSession(onx, providers=["CPUExecutionProvider"]).run(None, {"x": x[:7]})
            session = osprey.InferenceSession(onx)
            assert session.get_outputs()[1].type.startswith("seq(")
            out = session.run(None, {"x": x[:7]})
            np.testing.assert_array_equal(out[0], ref[0])
            assert isinstance(out[1], list) and len(out[1]) == 7
            for got, want in zip(out[1], ref[1]):
                assert set(got) == set(want)
                for k in want:
                    assert abs(got[k] - want[k]) <= 1e-5, (k, got[k], want[k])
