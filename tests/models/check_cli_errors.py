#!/usr/bin/env python3
"""Bad input gives one clear line on stderr and a non-zero exit, never a crash: a corrupt .osp,
a truncated .onnx, an ONNX model with unsupported ops, a wrong input shape and dtype."""
import os, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
failures = []


def expect_error(args, *needles):
    r = subprocess.run([os.environ["OSPREY_BIN"]] + args, capture_output=True, text=True, timeout=120)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    problems = []
    if r.returncode <= 0:
        problems.append("exit status %d (want a positive failure status; negative means a crash)" % r.returncode)
    if len(lines) != 1 or not lines[0].startswith("error: "):
        problems.append("stderr is not one 'error:' line: %r" % r.stderr)
    for n in needles:
        if n not in r.stderr:
            problems.append("message lacks %r" % n)
    status = "ok" if not problems else "FAIL"
    print("%-4s osprey %s\n     %s" % (status, " ".join(os.path.basename(a) for a in args), r.stderr.strip()))
    if problems:
        failures.append((args, problems))


def main():
    try:
        import numpy as np
        import onnx
        from onnx import TensorProto, helper
        import make_default_model
    except ImportError as e:
        print("SKIPPED: %s (run scripts/setup.sh)" % e)
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="osprey-cli-errors-")
    model = make_default_model.build(np.random.RandomState(0))
    good = os.path.join(tmp, "good.onnx")
    onnx.save(model, good)
    data = open(good, "rb").read()

    truncated = os.path.join(tmp, "truncated.onnx")
    open(truncated, "wb").write(data[: len(data) // 2])
    expect_error(["run", truncated], "truncated")
    expect_error(["convert", truncated, os.path.join(tmp, "x.osp")], "truncated")

    osp = os.path.join(tmp, "good.osp")
    subprocess.run([os.environ["OSPREY_BIN"], "convert", good, osp], check=True, capture_output=True)
    osp_bytes = bytearray(open(osp, "rb").read())
    cut = os.path.join(tmp, "cut.osp")
    open(cut, "wb").write(osp_bytes[: len(osp_bytes) - 100])
    expect_error(["run", cut], "corrupt")
    damaged = bytearray(osp_bytes)
    for i in range(16, min(len(damaged), 200)):
        damaged[i] ^= 0xA5
    bad = os.path.join(tmp, "damaged.osp")
    open(bad, "wb").write(bytes(damaged))
    expect_error(["info", bad], "corrupt")
    not_osp = os.path.join(tmp, "text.osp")
    open(not_osp, "w").write("this is not a model\n" * 10)
    expect_error(["run", not_osp], "not an Osprey model")

    nodes = [helper.make_node("Relu", ["x"], ["a"]),
             helper.make_node("FancyOp", ["a"], ["b"]),
             helper.make_node("RandomUniformLike", ["b"], ["c"]),  # random: not supported
             helper.make_node("FancyOp", ["c"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    unsupported = os.path.join(tmp, "unsupported.onnx")
    onnx.save(m, unsupported)
    expect_error(["convert", unsupported, os.path.join(tmp, "u.osp")], "FancyOp (opset 13)", "RandomUniformLike (opset 13)")
    expect_error(["run", unsupported], "FancyOp (opset 13)", "RandomUniformLike (opset 13)")

    wrong_shape = os.path.join(tmp, "wrong_shape.npy")
    np.save(wrong_shape, np.zeros((1, 3, 32, 32), np.float32))
    expect_error(["run", osp, "--input", "input=" + wrong_shape], "'input'", "[1, 3, 64, 64]")
    wrong_dtype = os.path.join(tmp, "wrong_dtype.npy")
    np.save(wrong_dtype, np.zeros((1, 3, 64, 64), np.float64))
    expect_error(["run", osp, "--input", "input=" + wrong_dtype], "'input'", "float64")
    expect_error(["run", osp, "--input", "nosuch=" + wrong_dtype], "'nosuch'")
    expect_error(["run", os.path.join(tmp, "missing.osp")], "missing.osp")
    expect_error(["bench", osp, "--gap-ms", "-5"], "--gap-ms")

    # Shapes past the memory limit are refused before anything is allocated, naming the tensor.
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "huge",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 100000, 100000])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 100000, 100000])])
    huge = os.path.join(tmp, "huge_input.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), huge)
    expect_error(["run", huge], "input 'x'", "120000000000 bytes", "memory limit")
    expect_error(["bench", osp, "--memory-limit", "64K"], "the plan for input shapes input [1, 3, 64, 64]", "limit of 65536 bytes")
    expect_error(["run", osp, "--memory-limit", "lots"], "--memory-limit")
    tile = helper.make_graph(
        [helper.make_node("Tile", ["x", "reps"], ["y"])], "tile",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 224, 224])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [helper.make_tensor("reps", TensorProto.INT64, [4], [1, 1, 1, 10 ** 9])])
    tiled = os.path.join(tmp, "tile_billion.onnx")
    onnx.save(helper.make_model(tile, opset_imports=[helper.make_opsetid("", 13)]), tiled)
    expect_error(["run", tiled], "(Tile)", "602112000000000 bytes")

    # A Loop asking for INT64_MAX iterations ends at the run's time limit instead of never.
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["v_in", "one"], ["v_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1])],
        [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
    loop = helper.make_graph(
        [helper.make_node("Loop", ["m", "c", "v"], ["y"], body=body)], "endless",
        [helper.make_tensor_value_info("v", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        [helper.make_tensor("m", TensorProto.INT64, [], [2 ** 63 - 1]), helper.make_tensor("c", TensorProto.BOOL, [], [True])])
    endless = os.path.join(tmp, "endless_loop.onnx")
    onnx.save(helper.make_model(loop, opset_imports=[helper.make_opsetid("", 13)]), endless)
    expect_error(["run", endless, "--time-limit-ms", "300"], "limit of 300 ms", "(Loop)")
    paused = subprocess.run([os.environ["OSPREY_BIN"], "bench", osp, "--gap-ms", "1", "--loops", "2", "--per-op"],
                            capture_output=True, text=True, timeout=120)
    print("%-4s osprey bench good.osp --gap-ms 1 --loops 2 --per-op" % ("ok" if paused.returncode == 0 else "FAIL"))
    if paused.returncode != 0 or "per op type" not in paused.stdout:
        failures.append((["bench", "--gap-ms"], [paused.stderr.strip() or "no per-op table"]))

    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("all error checks passed")


if __name__ == "__main__":
    main()
