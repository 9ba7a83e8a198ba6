"""The runtime's machinery as the Python package shows it: run callbacks, and models whose shapes
depend on data (If, NonZero) run in planned stages, against ONNX Runtime."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import osprey
from conftest import IR_VERSION, OPSET, assert_close, make_model, ort


def staged_model() -> bytes:
    """h = Relu(x @ w + b); idx = NonZero(h > 0.5); y = If(sum(h) > 0, h * 2, -h); z = Cast(idx) + 1."""
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.standard_normal((7, 9)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(9).astype(np.float32), "b")
    half = numpy_helper.from_array(np.array(0.5, np.float32), "half")
    zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
    then_graph = helper.make_graph([helper.make_node("Mul", ["h", "two"], ["then_y"])], "then", [],
                                   [helper.make_tensor_value_info("then_y", TensorProto.FLOAT, None)])
    else_graph = helper.make_graph([helper.make_node("Neg", ["h"], ["else_y"])], "else", [],
                                   [helper.make_tensor_value_info("else_y", TensorProto.FLOAT, None)])
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["xw"]),
        helper.make_node("Add", ["xw", "b"], ["pre"]),
        helper.make_node("Relu", ["pre"], ["h"]),
        helper.make_node("Greater", ["h", "half"], ["mask"]),
        helper.make_node("NonZero", ["mask"], ["idx"]),
        helper.make_node("ReduceSum", ["h"], ["total"], keepdims=0),
        helper.make_node("Greater", ["total", "zero"], ["cond"]),
        helper.make_node("If", ["cond"], ["y"], then_branch=then_graph, else_branch=else_graph),
        helper.make_node("Cast", ["idx"], ["idx_f"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["idx_f", "one"], ["z"]),
    ]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 7])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                       helper.make_tensor_value_info("z", TensorProto.FLOAT, None),
                       helper.make_tensor_value_info("pre", TensorProto.FLOAT, None)],
                      [w, b, half, zero, two, one])


@pytest.fixture(scope="module")
def staged_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("runtime") / "staged.onnx"
    path.write_bytes(staged_model())
    return str(path)


def test_staged_model_matches_onnxruntime(staged_path):
    session = osprey.InferenceSession(staged_path)
    ref = ort.InferenceSession(staged_path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(7)
    for n in [3, 3, 5, 1, 3]:
        x = rng.standard_normal((n, 7)).astype(np.float32) * (1 if n != 1 else -5)
        got = session.run(None, {"x": x})
        want = ref.run(None, {"x": x})
        for g, w, name in zip(got, want, ["y", "z", "pre"]):
            assert g.shape == w.shape, name
            assert_close(g, w, name)
    stats = session.stats()
    assert stats["host_ops"] >= 2, stats  # NonZero and If run on the host between stages
    assert stats["executions"] > 0, stats  # the MatMul, Add and Relu run as executions


def test_callbacks_show_every_op(staged_path):
    session = osprey.InferenceSession(staged_path)
    x = np.random.default_rng(8).standard_normal((4, 7)).astype(np.float32)
    seen, before_names = {}, []

    def before(op, inputs):
        before_names.append(op["name"])
        assert len(inputs) == len(op["names"])

    def after(op, outputs):
        for name, value in zip(op["names"], outputs):
            seen[name] = value

    y, z, pre = session.run_with_callbacks(None, {"x": x}, before=before, after=after)
    ref = ort.InferenceSession(staged_path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert_close(seen["pre"], ref[2], "pre")
    assert_close(seen["y"], ref[0], "y")
    assert_close(seen["z"], ref[1], "z")
    assert np.array_equal(seen["pre"], pre)
    for name in ["h", "mask", "idx", "cond"]:  # xw: MatMul + Add are one fused op
        assert name in seen, (name, sorted(seen))
    assert before_names[0] != "" and len(before_names) >= 8


def test_callback_stops_the_run(staged_path):
    session = osprey.InferenceSession(staged_path)
    x = np.ones((2, 7), np.float32)
    calls = []

    def stop_after_second(op, outputs):
        calls.append(op["name"])
        return len(calls) < 2

    with pytest.raises(osprey.CancelledError, match="stopped by a callback"):
        session.run_with_callbacks(None, {"x": x}, after=stop_after_second)
    assert len(calls) == 2

    def raising(op, inputs):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        session.run_with_callbacks(None, {"x": x}, before=raising)
    # The session is still usable after a stopped run.
    assert session.run(["pre"], {"x": x})[0].shape == (2, 9)


def test_cli_dump_tensors(staged_path, tmp_path):
    import subprocess
    import sys
    x = np.random.default_rng(9).standard_normal((3, 7)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    done = subprocess.run([sys.executable, "-m", "osprey", "run", staged_path, "--input", "x=%s" % (tmp_path / "x.npy"),
                           "--dump-tensors", str(tmp_path / "dump")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    files = sorted(p.name for p in (tmp_path / "dump").iterdir())
    assert "intermediate tensors written" in done.stdout
    by_name = {f.split("_", 1)[1][:-4]: np.load(tmp_path / "dump" / f) for f in files}
    # Every intermediate ONNX Runtime computes for this graph, as extra outputs of the same model.
    import onnx
    model = onnx.load(staged_path)
    for name in ["pre", "h", "mask", "idx", "total", "cond", "y", "z"]:
        if name not in [o.name for o in model.graph.output]:
            model.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = dict(zip([o.name for o in ref.get_outputs()], ref.run(None, {"x": x})))
    for name in ["pre", "h", "mask", "idx", "y", "z"]:
        assert name in by_name, (name, files)
        assert by_name[name].shape == want[name].shape, name
        assert_close(by_name[name].astype(np.float64), want[name].astype(np.float64), name)


def test_sessions_share_a_runtime(staged_path):
    runtime = osprey.Runtime(threads=2)
    assert runtime.thread_count() == 2
    sessions = [osprey.InferenceSession(staged_path, runtime=runtime) for _ in range(4)]
    assert all(s.threads == 2 for s in sessions)
    x = np.random.default_rng(10).standard_normal((5, 7)).astype(np.float32)
    want = osprey.InferenceSession(staged_path, threads=2).run(None, {"x": x})
    for s in sessions:
        for g, w in zip(s.run(None, {"x": x}), want):
            assert np.array_equal(g, w)
    runtime.garbage_collect()


def test_plan_cache_keeps_recent_shapes(staged_path):
    session = osprey.InferenceSession(staged_path, plan_cache_size=2)
    ref = ort.InferenceSession(staged_path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(11)
    xs = {n: rng.standard_normal((n, 7)).astype(np.float32) for n in (2, 3)}
    for _ in range(3):
        for n, x in xs.items():
            for g, w in zip(session.run(None, {"x": x}), ref.run(None, {"x": x})):
                assert_close(g, w)
    made = session.stats()["plans_made"]
    session.run(None, {"x": xs[2]})
    assert session.stats()["plans_made"] == made  # returning to a kept shape plans nothing
    with pytest.raises(osprey.InvalidArgumentError):
        osprey.InferenceSession(staged_path, plan_cache_size=-1)
    want = session.run(None, {"x": xs[3]})
    session.release_memory()
    assert session.stats()["plans_kept"] == 0
    for g, w in zip(session.run(None, {"x": xs[3]}), want):
        assert np.array_equal(g, w)


class FakeCudaArray:
    """An object that says it lives in CUDA memory (what torch and CuPy CUDA tensors say)."""

    def __init__(self, shape, typestr="<f4"):
        self.__cuda_array_interface__ = {"data": (4096, False), "shape": shape, "typestr": typestr, "version": 3}


def test_iobinding_writes_host_outputs_in_place(tmp_path):
    path = str(tmp_path / "mlp.onnx")
    w = numpy_helper.from_array(np.random.default_rng(12).standard_normal((7, 3)).astype(np.float32), "w")
    with open(path, "wb") as f:
        f.write(make_model([helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Relu", ["t"], ["y"])],
                           [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 7])],
                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])], [w]))
    session = osprey.InferenceSession(path)
    x = np.random.default_rng(13).standard_normal((4, 7)).astype(np.float32)
    y = np.full((4, 3), -1, np.float32)
    binding = session.io_binding()
    binding.bind_input("x", x)
    binding.bind_output("y", y)
    session.run_with_iobinding(binding)
    assert np.array_equal(y, session.run(None, {"x": x})[0])
    wrong = session.io_binding()
    wrong.bind_input("x", x)
    wrong.bind_output("y", np.zeros((2, 3), np.float32))
    with pytest.raises(osprey.InvalidArgumentError, match="output 'y'"):
        session.run_with_iobinding(wrong)
    with pytest.raises(osprey.InvalidArgumentError, match="read-only"):
        session.io_binding().bind_output("y", np.frombuffer(bytes(48), np.float32).reshape(4, 3))
    on_device = session.io_binding()
    on_device.bind_input("x", FakeCudaArray((4, 7)))
    with pytest.raises(osprey.InvalidArgumentError, match="this session runs on cpu"):
        session.run_with_iobinding(on_device)
    with pytest.raises(osprey.InvalidArgumentError, match="cannot be bound"):
        session.io_binding().bind_input("x", FakeCudaArray((4, 7), "<c8"))


def test_run_async_calls_back_with_the_outputs_of_run(staged_path):
    import threading
    session = osprey.InferenceSession(staged_path, threads=2)
    x = np.random.default_rng(11).standard_normal((5, 7)).astype(np.float32)
    want = session.run(None, {"x": x})
    done = threading.Event()
    got = {}

    def callback(outputs, user_data, error):
        got.update(outputs=outputs, user_data=user_data, error=error)
        done.set()

    session.run_async(None, {"x": x}, callback, "tag")
    assert done.wait(30)
    assert got["error"] == "" and got["user_data"] == "tag"
    for g, w in zip(got["outputs"], want):
        assert np.array_equal(g, w)
    done.clear()
    session.run_async(None, {"x": x.astype(np.float64)}, callback, None)  # the wrong dtype
    assert done.wait(30)
    assert got["outputs"] is None and "float" in got["error"]


def growing_loop_model() -> bytes:
    """Loop(n): acc = Concat(acc, x * i) along axis 0, and count = Shape(acc)[0] kept per iteration.
    The body declares acc as the first iteration's [0, 3] (as tracing exporters write it); its
    shape grows by a row each iteration."""
    body = helper.make_graph(
        [
            helper.make_node("Cast", ["i"], ["i_f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["x", "i_f"], ["row"]),
            helper.make_node("Concat", ["acc_in", "row"], ["acc_out"], axis=0),
            helper.make_node("Shape", ["acc_in"], ["acc_shape"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [0, 3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [1, 3]),
         helper.make_tensor_value_info("acc_shape", TensorProto.INT64, [2])])
    empty = numpy_helper.from_array(np.zeros((0, 3), np.float32), "empty")
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "", "empty"], ["acc", "shapes"], body=body)], "growing",
        [helper.make_tensor_value_info("n", TensorProto.INT64, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("acc", TensorProto.FLOAT, ["rows", 3]),
         helper.make_tensor_value_info("shapes", TensorProto.INT64, ["n", 2])], [empty])
    # Not through make_model's strict shape inference, which takes the declared [0, 3] at its word.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    return model.SerializeToString()


def test_loop_carried_value_changes_shape(tmp_path):
    path = tmp_path / "growing_loop.onnx"
    path.write_bytes(growing_loop_model())
    session = osprey.InferenceSession(str(path))
    # ONNX Runtime's graph optimisations fold the body's Shape from the declared [0, 3]; unoptimised
    # it reads the value's shape, as Osprey does.
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3  # its warnings about the declared [1, 3] output of the body
    ref = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    x = np.array([[1.0, -2.0, 0.5]], np.float32)
    for n in [4, 1, 0, 3]:
        feed = {"n": np.array(n, np.int64), "x": x}
        got, want = session.run(None, feed), ref.run(None, feed)
        assert got[0].shape == (n, 3) and want[0].shape == (n, 3)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])  # each iteration's [i, 3]
