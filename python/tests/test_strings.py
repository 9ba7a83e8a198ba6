"""String tensors of a run (host values): numpy str / object arrays in and out of the string ops,
against ONNX Runtime."""
from __future__ import annotations

import numpy as np

from conftest import make_model, ort
from onnx import TensorProto, helper

import osprey

S = TensorProto.STRING


def test_string_ops_against_onnxruntime():
    nodes = [helper.make_node("StringSplit", ["x"], ["parts", "counts"], maxsplit=2),
             helper.make_node("StringConcat", ["x", "suffix"], ["joined"]),
             helper.make_node("StringNormalizer", ["words"], ["normal"], case_change_action="LOWER",
                              stopwords=["the", "A"], is_case_sensitive=0, locale="C"),
             helper.make_node("Equal", ["x", "probe"], ["same"]),
             helper.make_node("RegexFullMatch", ["joined"], ["email"], pattern=r"[\w.]+@\w+\.com!")]
    inputs = [helper.make_tensor_value_info("x", S, [2, 2]), helper.make_tensor_value_info("suffix", S, [1]),
              helper.make_tensor_value_info("words", S, [5]), helper.make_tensor_value_info("probe", S, [2])]
    model = make_model(nodes, inputs, ["parts", "counts", "joined", "normal", "same", "email"], opset=20)
    feed = {"x": np.array([["a b  c d", "x@y.com"], ["", " one "]], dtype=object),
            "suffix": np.array(["!"], dtype=object),
            "words": np.array(["The", "Quick", "a", "FOX", "the"], dtype=object),
            "probe": np.array(["", " one "], dtype=object)}
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feed)
    session = osprey.InferenceSession(model, threads=2)
    for _ in range(2):
        out = session.run(None, feed)
        assert len(out) == len(ref)
        for o, r in zip(out, ref):
            assert o.shape == r.shape
            np.testing.assert_array_equal(o, r)


def test_tfidf_vectorizer_against_onnxruntime():
    rng = np.random.default_rng(7)
    words = np.array(["a", "b", "c", "d", "e"], dtype=object)
    for mode in ("TF", "IDF", "TFIDF"):
        for strings in (False, True):
            tokens = rng.integers(0, 5, (3, 11)).astype(np.int64)
            pool = [1, 2, 4, 0, 1, 2, 3, 3, 4, 1, 0]  # 3 unigrams, 3 bigrams, ... and one trigram below
            counts, indexes = [0, 3, 9], [5, 0, 3, 1, 2, 4, 6]
            attrs = dict(min_gram_length=1, max_gram_length=3, max_skip_count=2, mode=mode, ngram_counts=counts,
                         ngram_indexes=indexes, weights=[0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 0.75])
            if strings:
                attrs["pool_strings"] = [str(words[v]) for v in pool[:9]] + ["b", "a"] + ["c"]
                feed = {"x": words[tokens]}
                x_type = S
            else:
                attrs["pool_int64s"] = pool + [2]
                feed = {"x": tokens}
                x_type = TensorProto.INT64
            node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], **attrs)
            model = make_model([node], [helper.make_tensor_value_info("x", x_type, [3, 11])], ["y"])
            ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feed)[0]
            out = osprey.InferenceSession(model).run(None, feed)[0]
            np.testing.assert_allclose(out, ref, rtol=1e-6, err_msg="%s %s" % (mode, strings))
