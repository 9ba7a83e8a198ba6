"""The make_models.py benchmark models (random weights) through osprey.InferenceSession against
ONNX Runtime: max|diff| <= 1e-4 * max(1, max|ref|).

Needs pre-generated models: OSPREY_MODELS_DIR names a directory holding NAME.onnx and
NAME.input.npy for each model (`python3 ../shared/models/make_models.py DIR --bert-layers 2`;
scripts/test_python.sh finds or makes them). Skipped without them. OSPREY_BERT_LAYERS (default 2)
picks the BERT variant.
"""
import os
import time

import numpy as np
import pytest

import osprey
from conftest import assert_close, list_model_names, models_dir, ort

MODELS = models_dir()
_BERT = "bert_base_l%s_seq128" % os.environ.get("OSPREY_BERT_LAYERS", "2")
_ALL = ["mobilenet_v2", "resnet18", "resnet50", "squeezenet1_1", "shufflenet_v2_x1_0", "efficientnet_b0", _BERT,
        "vit_tiny_p16_224"]
NAMES = [n for n in _ALL if n in list_model_names(MODELS)] if MODELS else []


@pytest.mark.skipif(not NAMES, reason="no models: set OSPREY_MODELS_DIR to make_models.py's output directory")
@pytest.mark.parametrize("name", NAMES)
def test_model_matches_onnxruntime(name):
    path = os.path.join(MODELS, name + ".onnx")
    x = np.load(os.path.join(MODELS, name + ".input.npy"))
    start = time.perf_counter()
    session = osprey.InferenceSession(path, threads=int(os.environ.get("OSPREY_THREADS", "2")))
    loaded = time.perf_counter()
    assert [i.name for i in session.get_inputs()] == ["input"]
    out = session.run(None, {"input": x})
    ran = time.perf_counter()
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"input": x})
    print("%s: load %.2f s, run %.2f s" % (name, loaded - start, ran - loaded))
    assert len(out) == len(ref)
    for o, r in zip(out, ref):
        assert_close(o, r, name)
