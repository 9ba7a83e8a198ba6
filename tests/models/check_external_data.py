#!/usr/bin/env python3
"""ONNX external data: a model whose weights live in a side file converts and runs with the same
outputs as the same model stored inline; a side file outside the model's folder, or one that is
too short, is a clear error."""
import os, subprocess, sys, tempfile

failures = []


def osprey(*args):
    return subprocess.run([os.environ["OSPREY_BIN"]] + list(args), capture_output=True, text=True, timeout=300)


def main():
    try:
        import numpy as np
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as e:
        print("SKIPPED: %s (run scripts/setup.sh)" % e)
        sys.exit(77)
    rng = np.random.RandomState(3)
    w1 = rng.randn(37, 129).astype(np.float32)
    w2 = rng.randn(129, 13).astype(np.float32)
    bias = rng.randn(13).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("MatMul", ["r", "w2"], ["m"]), helper.make_node("Add", ["m", "bias"], ["y"])],
        "external", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 37])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5, 13])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(bias, "bias")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    tmp = tempfile.mkdtemp(prefix="osprey-external-")
    os.makedirs(os.path.join(tmp, "sub"))
    inline = os.path.join(tmp, "inline.onnx")
    onnx.save(model, inline)
    external = os.path.join(tmp, "sub", "external.onnx")
    onnx.save(model, external, save_as_external_data=True, all_tensors_to_one_file=True, location="weights.bin",
              size_threshold=0)
    x = rng.randn(5, 37).astype(np.float32)
    xin = os.path.join(tmp, "x.npy")
    np.save(xin, x)
    want = np.maximum(x @ w1, 0) @ w2 + bias
    for name, path in (("inline", inline), ("external", external)):
        out = os.path.join(tmp, "out-" + name)
        r = osprey("run", path, "--input", "x=" + xin, "--save-outputs", out, "--quiet")
        if r.returncode != 0:
            failures.append("%s model failed: %s" % (name, r.stderr.strip()))
            continue
        got = np.load(os.path.join(out, "0_y.npy"))
        err = float(np.abs(got - want).max())
        print("%-8s max|diff| %.3g" % (name, err))
        if err > 1e-4 * max(1.0, float(np.abs(want).max())):
            failures.append("%s model differs by %g" % (name, err))

    # A location that climbs out of the model's folder is refused, not read.
    escaping = onnx.load(external, load_external_data=False)
    for t in escaping.graph.initializer:
        for kv in t.external_data:
            if kv.key == "location":
                kv.value = "../sub/weights.bin"
    bad = os.path.join(tmp, "sub", "escaping.onnx")
    onnx.save(escaping, bad)
    r = osprey("run", bad)
    if r.returncode <= 0 or "leaves the model's folder" not in r.stderr:
        failures.append("escaping location not refused clearly: rc %d, %r" % (r.returncode, r.stderr))
    else:
        print("ok       escaping location: %s" % r.stderr.strip())

    # A side file cut short is an error naming the tensor.
    with open(os.path.join(tmp, "sub", "weights.bin"), "r+b") as f:
        f.truncate(1000)
    r = osprey("run", external)
    if r.returncode <= 0 or "too few" not in r.stderr:
        failures.append("short side file not reported: rc %d, %r" % (r.returncode, r.stderr))
    else:
        print("ok       short side file: %s" % r.stderr.strip())

    for f in failures:
        print("FAIL", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
