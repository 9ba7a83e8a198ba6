"""The InferenceSession API: metadata, symbolic dimensions, input handling, errors, threads,
conversion and `python -m osprey`."""
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import osprey
from conftest import assert_close, make_model, ort, randn, single_op


def symbolic_model() -> bytes:
    """y = MatMul(x, w) + 1 with x: [batch, 13] and w: [13, 5]; z = Shape(x) (int64)."""
    w = numpy_helper.from_array(np.random.default_rng(1).standard_normal((13, 5)).astype(np.float32), "w")
    one = numpy_helper.from_array(np.ones(1, np.float32), "one")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Add", ["t", "one"], ["y"]),
             helper.make_node("Shape", ["x"], ["z"])]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 13])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 5]),
                       helper.make_tensor_value_info("z", TensorProto.INT64, [2])], [w, one])


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "symbolic.onnx"
    path.write_bytes(symbolic_model())
    return str(path)


def test_metadata_like_onnxruntime(model_path):
    session = osprey.InferenceSession(model_path)
    ref = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    for mine, theirs in [(session.get_inputs(), ref.get_inputs()), (session.get_outputs(), ref.get_outputs())]:
        assert [a.name for a in mine] == [b.name for b in theirs]
        assert [a.shape for a in mine] == [b.shape for b in theirs]
        assert [a.type for a in mine] == [b.type for b in theirs]
    x = session.get_inputs()[0]
    assert x.shape == ["batch", 13] and x.type == "tensor(float)" and x.dtype == np.float32
    assert session.get_outputs()[1].dtype == np.int64
    assert session.get_providers() == ["CPUExecutionProvider"]


@pytest.mark.parametrize("batch", [1, 7, 3])
def test_symbolic_dimension_runs_at_any_size(model_path, batch):
    session = osprey.InferenceSession(model_path, threads=2)
    ref = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(batch).standard_normal((batch, 13)).astype(np.float32)
    for mine, theirs in zip(session.run(None, {"x": x}), ref.run(None, {"x": x})):
        assert_close(mine, theirs)


def test_same_session_with_changing_shapes(model_path):
    session = osprey.InferenceSession(model_path)
    ref = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(2)
    for batch in [2, 5, 2, 1]:
        x = rng.standard_normal((batch, 13)).astype(np.float32)
        assert_close(session.run(["y"], {"x": x})[0], ref.run(["y"], {"x": x})[0])


def test_output_selection_and_order(model_path):
    session = osprey.InferenceSession(model_path)
    x = np.ones((2, 13), np.float32)
    z, y = session.run(["z", "y"], {"x": x})
    np.testing.assert_array_equal(z, [2, 13])
    assert y.shape == (2, 5)
    assert len(session.run([], {"x": x})) == 2


def test_inputs_that_need_a_copy(model_path):
    session = osprey.InferenceSession(model_path)
    base = np.random.default_rng(3).standard_normal((13, 4)).astype(np.float32)
    expected = session.run(["y"], {"x": np.ascontiguousarray(base.T)})[0]
    views = {
        "transposed view": base.T,
        "fortran order": np.asfortranarray(base.T),
        "strided": np.repeat(base.T, 2, axis=1)[:, ::2],
        "big endian": base.T.astype(">f4"),
        "read only": np.broadcast_to(base.T, (4, 13)),
        "nested list": base.T.tolist(),
    }
    for what, x in views.items():
        if what == "nested list":
            with pytest.raises(osprey.InvalidArgumentError, match="float64"):
                session.run(["y"], {"x": x})
            continue
        np.testing.assert_array_equal(session.run(["y"], {"x": x})[0], expected, err_msg=what)


def test_outputs_are_independent_arrays(model_path):
    session = osprey.InferenceSession(model_path)
    first = session.run(["y"], {"x": np.ones((1, 13), np.float32)})[0]
    kept = first.copy()
    session.run(["y"], {"x": np.zeros((1, 13), np.float32)})
    np.testing.assert_array_equal(first, kept)  # a later run does not overwrite returned arrays
    first += 1  # and they are writable


def test_wrong_name(model_path):
    session = osprey.InferenceSession(model_path)
    with pytest.raises(osprey.InvalidArgumentError, match="'nope' is not an input of the model"):
        session.run(None, {"nope": np.ones((1, 13), np.float32), "x": np.ones((1, 13), np.float32)})
    with pytest.raises(osprey.InvalidArgumentError, match="'nope' is not an input of the model; its inputs are: 'x'"):
        session.run(None, {"nope": np.ones((1, 13), np.float32)})
    with pytest.raises(ValueError, match="'nope' is not an output"):
        session.run(["nope"], {"x": np.ones((1, 13), np.float32)})


def test_missing_input(model_path):
    session = osprey.InferenceSession(model_path)
    session.run(None, {"x": np.ones((1, 13), np.float32)})
    with pytest.raises(osprey.InvalidArgumentError, match="input 'x' was not given"):
        session.run(None, {})


def test_wrong_shape(model_path):
    session = osprey.InferenceSession(model_path)
    with pytest.raises(osprey.InvalidArgumentError, match=r"input 'x' has shape \[2, 12\]"):
        session.run(None, {"x": np.ones((2, 12), np.float32)})
    with pytest.raises(osprey.InvalidArgumentError, match="rank 3"):
        session.run(None, {"x": np.ones((2, 13, 1), np.float32)})


def test_wrong_dtype(model_path):
    session = osprey.InferenceSession(model_path)
    with pytest.raises(osprey.InvalidArgumentError, match="dtype float64; the model expects float32"):
        session.run(None, {"x": np.ones((2, 13), np.float64)})
    with pytest.raises(osprey.InvalidArgumentError, match="complex"):
        session.run(None, {"x": np.ones((2, 13), np.complex64)})


def test_error_hierarchy():
    assert issubclass(osprey.OspreyError, RuntimeError)
    assert issubclass(osprey.InvalidArgumentError, osprey.OspreyError)
    assert issubclass(osprey.InvalidArgumentError, ValueError)
    assert issubclass(osprey.UnsupportedError, osprey.OspreyError)


def test_bad_files(tmp_path):
    with pytest.raises(osprey.OspreyError, match="missing.onnx"):
        osprey.InferenceSession(str(tmp_path / "missing.onnx"))
    garbage = tmp_path / "garbage.osp"
    garbage.write_bytes(b"\x10\x00\x00\x00" * 5)
    with pytest.raises(osprey.OspreyError):
        osprey.InferenceSession(garbage)
    with pytest.raises(osprey.OspreyError):
        osprey.InferenceSession(b"not a model")


def test_bad_arguments(model_path):
    with pytest.raises(ValueError, match="precision"):
        osprey.InferenceSession(model_path, precision="extreme")
    with pytest.raises(ValueError, match="unknown backend 'tpu'"):
        osprey.InferenceSession(model_path, backend="tpu")
    with pytest.raises(ValueError, match="threads"):
        osprey.InferenceSession(model_path, threads=0)
    with pytest.raises(TypeError):
        osprey.InferenceSession(model_path).run("y", {"x": np.ones((1, 13), np.float32)})


def test_memory_limit(model_path):
    session = osprey.InferenceSession(model_path, memory_limit=1 << 20)
    big = np.ones((1 << 15, 13), np.float32)  # 1.6 MiB
    with pytest.raises(osprey.OutOfMemoryError, match="input 'x'.*memory limit of 1048576 bytes"):
        session.run(None, {"x": big})
    y, _ = session.run(None, {"x": big[:4]})  # still usable at a shape that fits
    assert y.shape == (4, 5)
    with pytest.raises(ValueError):
        osprey.InferenceSession(model_path, memory_limit=0)


def test_bfloat16_output_is_unsupported(rng):
    x = randn(rng, 2, 3)
    model = single_op("Cast", {"x": x}, to=TensorProto.BFLOAT16)
    session = osprey.InferenceSession(model)
    out = session.get_outputs()[0]
    assert out.type == "tensor(bfloat16)" and out.dtype is None
    with pytest.raises(osprey.UnsupportedError, match="bfloat16"):
        session.run(None, {"x": x})


def test_string_tensors():
    names = np.array([["a", "bb"], ["ccc", ""]], dtype=object)
    model = single_op("Identity", {"s": names.astype(str)})
    session = osprey.InferenceSession(model)
    assert session.get_inputs()[0].type == "tensor(string)"
    try:
        out = session.run(None, {"s": names})[0]
    except osprey.UnsupportedError as e:  # the engine's limit, not the binding's
        pytest.skip("string inputs: %s" % e)
    assert out.dtype == object and out.tolist() == names.tolist()


def test_string_output():
    value = helper.make_tensor("v", TensorProto.STRING, [2], [b"ab", "\u00e9".encode()])
    nodes = [helper.make_node("Constant", [], ["s"], value=value), helper.make_node("Identity", ["x"], ["y"])]
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])], ["s", "y"])
    session = osprey.InferenceSession(model)
    assert session.get_outputs()[0].type == "tensor(string)"
    s, y = session.run(None, {"x": np.ones(1, np.float32)})
    assert s.dtype == object and s.tolist() == ["ab", "\u00e9"] and y.tolist() == [1.0]


def test_providers_keyword(model_path):
    session = osprey.InferenceSession(model_path, providers=["CUDAExecutionProvider", "CPUExecutionProvider"]
                                      if "cuda" not in osprey.available_backends() else ["CPUExecutionProvider"])
    assert session.backend == "cpu"
    with pytest.raises(ValueError, match="unknown provider"):
        osprey.InferenceSession(model_path, providers=["TensorrtExecutionProvider"])


def test_threads_share_a_session(model_path):
    session = osprey.InferenceSession(model_path, threads=1)
    ref = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(20):
            x = rng.standard_normal((int(rng.integers(1, 9)), 13)).astype(np.float32)
            try:
                assert_close(session.run(["y"], {"x": x})[0], ref.run(["y"], {"x": x})[0])
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_run_releases_the_gil():
    """While one thread runs the model, this thread keeps executing Python: it is never blocked
    for anywhere near the length of a run (which it would be if the run held the GIL)."""
    n = 512
    w = (np.random.default_rng(5).standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x" if i == 0 else "h%d" % i, "w"], ["h%d" % (i + 1) if i < 7 else "y"])
             for i in range(8)]
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])], ["y"],
                       [numpy_helper.from_array(w, "w")])
    session = osprey.InferenceSession(model, threads=1)
    x = np.ones((n, n), np.float32)
    session.run(None, {"x": x})
    finished = threading.Event()
    run_seconds = []

    def work():
        start = time.perf_counter()
        session.run(None, {"x": x})
        run_seconds.append(time.perf_counter() - start)
        finished.set()

    worker = threading.Thread(target=work)
    longest_stall, last = 0.0, time.perf_counter()
    worker.start()
    while not finished.is_set():
        now = time.perf_counter()
        longest_stall, last = max(longest_stall, now - last), now
    worker.join()
    assert longest_stall < run_seconds[0] / 2, (longest_stall, run_seconds[0])


def test_convert_then_load_osp(model_path, tmp_path):
    dst = tmp_path / "symbolic.osp"
    report = osprey.convert(model_path, dst)
    assert report.onnx_nodes == 3 and report.bytes == dst.stat().st_size
    x = np.random.default_rng(4).standard_normal((3, 13)).astype(np.float32)
    from_onnx = osprey.InferenceSession(model_path).run(None, {"x": x})
    from_osp = osprey.InferenceSession(dst).run(None, {"x": x})
    from_bytes = osprey.InferenceSession(dst.read_bytes()).run(None, {"x": x})
    for a, b, c in zip(from_onnx, from_osp, from_bytes):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    assert osprey.InferenceSession(dst).get_inputs()[0].shape == ["batch", 13]
    with pytest.raises(osprey.OspreyError):
        osprey.convert(tmp_path / "missing.onnx", tmp_path / "out.osp")


def test_available_backends():
    backends = osprey.available_backends()
    assert "cpu" in backends and isinstance(backends["cpu"], list)


def cli(*args):
    return subprocess.run([sys.executable, "-m", "osprey", *args], capture_output=True, text=True, timeout=300)


def test_cli_module(model_path, tmp_path):
    dst = str(tmp_path / "cli.osp")
    done = cli("convert", model_path, dst)
    assert done.returncode == 0, done.stderr
    assert "converted" in done.stdout and os.path.exists(dst)
    done = cli("info", dst)
    assert done.returncode == 0 and "input  'x': float32 [batch, 13]" in done.stdout, done.stdout + done.stderr
    np.save(tmp_path / "x.npy", np.ones((2, 13), np.float32))
    done = cli("run", dst, "--input", "x=%s" % (tmp_path / "x.npy"), "--save-outputs", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    y = np.load(tmp_path / "out" / "0_y.npy")
    np.testing.assert_array_equal(y, osprey.InferenceSession(dst).run(["y"], {"x": np.ones((2, 13), np.float32)})[0])
    done = cli("backends")
    assert done.returncode == 0 and done.stdout.startswith("cpu")
    done = cli("info", str(tmp_path / "missing.osp"))
    assert done.returncode == 1 and done.stderr.startswith("error:") and "missing.osp" in done.stderr
    done = cli()
    assert done.returncode == 2 and "usage: osprey" in done.stderr
