"""Shared helpers: single-op ONNX models built with the onnx helper API, run by Osprey and by
ONNX Runtime on the same seeded random inputs."""
from __future__ import annotations

import os
from typing import Dict, List, Optional, Sequence

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import helper, numpy_helper  # noqa: E402

import osprey  # noqa: E402

OPSET = 17
IR_VERSION = 8  # what onnxruntime releases of the last years all read


def tolerance(ref: np.ndarray) -> float:
    """The suite's accuracy bound: 1e-4 * max(1, max|ref|)."""
    peak = float(np.max(np.abs(ref.astype(np.float64)))) if ref.size else 0.0
    return 1e-4 * max(1.0, peak)


def assert_close(out: np.ndarray, ref: np.ndarray, what: str = "") -> None:
    assert out.dtype == ref.dtype, "%s: dtype %s != %s" % (what, out.dtype, ref.dtype)
    assert out.shape == ref.shape, "%s: shape %s != %s" % (what, out.shape, ref.shape)
    if out.dtype.kind in "biu" or out.dtype == object:
        np.testing.assert_array_equal(out, ref, err_msg=what)
        return
    diff = float(np.max(np.abs(out.astype(np.float64) - ref.astype(np.float64)))) if ref.size else 0.0
    assert diff <= tolerance(ref), "%s: max|diff| %.3g > %.3g" % (what, diff, tolerance(ref))


def make_model(nodes, inputs, outputs, initializers=(), opset: int = OPSET) -> bytes:
    """A checked model; outputs given as bare names get their types from shape inference."""
    outputs = [onnx.ValueInfoProto(name=o) if isinstance(o, str) else o for o in outputs]
    graph = helper.make_graph(list(nodes), "test", list(inputs), outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = IR_VERSION
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model)
    return model.SerializeToString()


def single_op(op: str, inputs: Dict[str, np.ndarray], outputs: Sequence[str] = ("y",),
              initializers: Optional[Dict[str, np.ndarray]] = None, opset: int = OPSET, **attrs) -> bytes:
    """A model with one node; `inputs` become graph inputs (their arrays give dtype and shape),
    `initializers` become constants."""
    initializers = initializers or {}
    names = list(inputs) + list(initializers)
    node = helper.make_node(op, names, list(outputs), **attrs)
    graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                    for n, a in inputs.items()]
    inits = [numpy_helper.from_array(a, n) for n, a in initializers.items()]
    return make_model([node], graph_inputs, list(outputs), inits, opset)


def run_both(model: bytes, feed: Dict[str, np.ndarray], tmp_path=None, **session_args) -> None:
    """Runs `model` in Osprey (from bytes, and from a file when tmp_path is given) and in ONNX
    Runtime, and compares every output."""
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feed)
    sources = [model]
    if tmp_path is not None:
        path = os.path.join(str(tmp_path), "model.onnx")
        with open(path, "wb") as f:
            f.write(model)
        sources.append(path)
    for source in sources:
        session = osprey.InferenceSession(source, threads=2, **session_args)
        out = session.run(None, feed)
        assert len(out) == len(ref)
        for i, (o, r) in enumerate(zip(out, ref)):
            assert_close(o, r, "output %d (%s)" % (i, "bytes" if isinstance(source, bytes) else "file"))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def randn(rng: np.random.Generator, *shape: int, dtype=np.float32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def models_dir() -> Optional[str]:
    """Where make_models.py's models are: $OSPREY_MODELS_DIR, else None."""
    d = os.environ.get("OSPREY_MODELS_DIR")
    return d if d and os.path.isdir(d) else None


def list_model_names(directory: str) -> List[str]:
    return sorted(f[:-len(".onnx")] for f in os.listdir(directory)
                  if f.endswith(".onnx") and os.path.exists(os.path.join(directory, f[:-5] + ".input.npy")))
