#!/usr/bin/env python3
"""Attention fusion on PyTorch 2.x's nn.TransformerEncoder export (through
scaled_dot_product_attention, opset 17), rebuilt small with onnx.helper: the packed in-projection
split by Reshape/Unsqueeze/Transpose/Squeeze/Gather, [B, H, S, D] head views, the scale computed
from Shape(q) as sqrt(1 / sqrt(D)) on q and on K^T, and the head merge Transpose [2, 0, 1, 3].
The converted model must hold exactly one Attention op, and `osprey run` must match numpy."""
import os, re, subprocess, sys, tempfile

B, S, E, H = 2, 5, 16, 2
D = E // H


def osprey(*args):
    return subprocess.run([os.environ["OSPREY_BIN"]] + list(args), capture_output=True, text=True, timeout=300)


def build(np, helper, numpy_helper, TensorProto, w_in, b_in, w_out, b_out):
    nodes, inits = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    i64 = lambda v: np.array(v, dtype=np.int64)
    xt = node("Transpose", ["x"], "xt", perm=[1, 0, 2])
    proj = node("Add", [const("b_in", b_in), node("MatMul", [xt, const("w_in", w_in)], "proj_mm")], "proj")
    shape = node("Shape", [proj], "proj_shape")
    lead = node("Slice", [shape, const("zero", i64([0])), const("two", i64([2]))], "lead")
    packed = node("Reshape", [proj, node("Concat", [lead, const("three_e", i64([3, E]))], "packed_shape", axis=0)],
                  "packed")
    unsq = node("Unsqueeze", [packed, const("axis0", i64([0]))], "unsq")
    moved = node("Transpose", [unsq], "moved", perm=[3, 1, 2, 0, 4])
    qkv = node("Squeeze", [moved, const("axis3", i64([3]))], "qkv")
    heads = []
    for j, name in enumerate("qkv"):
        part = node("Gather", [qkv, const("idx_" + name, i64(j))], name, axis=0)
        nsd = node("Reshape", [part, const(name + "_nsd", i64([S, B * H, D]))], name + "_3d")
        nsd = node("Transpose", [nsd], name + "_heads", perm=[1, 0, 2])
        heads.append(node("Reshape", [nsd, const(name + "_bhsd", i64([B, H, S, D]))], name + "4"))
    q4, k4, v4 = heads
    kt = node("Transpose", [k4], "kt", perm=[0, 1, 3, 2])
    dim = node("Slice", [node("Shape", [q4], "q_shape"), const("minus1", i64([-1])),
                         const("big", i64([2**62]))], "q_dim")
    dim = node("Sqrt", [node("Cast", [dim], "q_dim_f", to=TensorProto.FLOAT)], "sqrt_dim")
    scale = node("Cast", [node("Div", [const("one", np.array(1.0, np.float32)), dim], "inv")], "scale",
                 to=TensorProto.FLOAT)
    qs = node("Mul", [q4, node("Sqrt", [scale], "root_q")], "q_scaled")
    ks = node("Mul", [kt, node("Sqrt", [scale], "root_k")], "k_scaled")
    probs = node("Softmax", [node("MatMul", [qs, ks], "scores")], "probs", axis=-1)
    ctx = node("Transpose", [node("MatMul", [probs, v4], "ctx")], "ctx_sbhd", perm=[2, 0, 1, 3])
    flat = node("Reshape", [ctx, const("flat_shape", i64([S * B, E]))], "ctx_flat")
    out = node("Gemm", [flat, const("w_out", w_out), const("b_out", b_out)], "out_proj", transB=1)
    out = node("Transpose", [node("Reshape", [out, const("sbe", i64([S, B, E]))], "out_sbe")], "out_bse",
               perm=[1, 0, 2])
    node("Add", ["x", out], "y")
    graph = helper.make_graph(nodes, "sdpa", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, E])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, S, E])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def reference(np, x, w_in, b_in, w_out, b_out):
    proj = x @ w_in + b_in                                      # [B, S, 3E]
    q, k, v = (proj[..., j * E:(j + 1) * E].reshape(B, S, H, D).transpose(0, 2, 1, 3) for j in range(3))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    ctx = (p @ v).transpose(0, 2, 1, 3).reshape(B, S, E)
    return x + ctx @ w_out.T + b_out


def main():
    try:
        import numpy as np
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as e:
        print("SKIPPED: %s (run scripts/setup.sh)" % e)
        sys.exit(77)
    rng = np.random.RandomState(5)
    w_in = (rng.randn(E, 3 * E) * 0.3).astype(np.float32)
    b_in = (rng.randn(3 * E) * 0.1).astype(np.float32)
    w_out = (rng.randn(E, E) * 0.3).astype(np.float32)
    b_out = (rng.randn(E) * 0.1).astype(np.float32)
    x = rng.randn(B, S, E).astype(np.float32)
    tmp = tempfile.mkdtemp(prefix="osprey-sdpa-")
    path = os.path.join(tmp, "sdpa.onnx")
    model = build(np, helper, numpy_helper, TensorProto, w_in, b_in, w_out, b_out)
    onnx.checker.check_model(model)
    onnx.save(model, path)
    failures = []
    r = osprey("info", path)
    if r.returncode != 0:
        print("FAILED: osprey info: " + r.stderr.strip())
        sys.exit(1)
    ops = dict((m.group(1), int(m.group(2))) for m in re.finditer(r"^\s+([A-Za-z]\w*)\s+(\d+)\s*$", r.stdout, re.M))
    print("ops: " + ", ".join("%s %d" % kv for kv in sorted(ops.items())))
    if ops.get("Attention", 0) != 1:
        failures.append("expected 1 Attention op, found %d" % ops.get("Attention", 0))
    for op in ("Softmax", "Shape"):
        if ops.get(op, 0):
            failures.append("%s left in the converted model" % op)
    xin = os.path.join(tmp, "x.npy")
    np.save(xin, x)
    outdir = os.path.join(tmp, "out")
    r = osprey("run", path, "--input", "x=" + xin, "--save-outputs", outdir, "--quiet")
    if r.returncode != 0:
        failures.append("osprey run failed: " + r.stderr.strip())
    else:
        want = reference(np, x, w_in, b_in, w_out, b_out)
        err = float(np.abs(np.load(os.path.join(outdir, "0_y.npy")) - want).max())
        print("max|diff| %.3g" % err)
        if err > 1e-4 * max(1.0, float(np.abs(want).max())):
            failures.append("output differs by %g" % err)
    for f in failures:
        print("FAILED: " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
