#!/usr/bin/env python3
"""The runtime's machinery, measured: a model with a trailing If against the same model without
it, switching input shapes, sessions sharing one runtime, Memory::Low. Prints one table.

    bench/runtime_bench.py MODELS_DIR [--threads N] [--rounds R] [--runs K]

MODELS_DIR holds make_models.py's mobilenet_v2.onnx and bert_base_l2_seq128.onnx (scripts/test.sh
leaves them in build/model-check/models). Needs the osprey package and onnx. Timings are medians
of R alternating rounds of K runs each, in milliseconds, on this machine.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import osprey


def with_trailing_if(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model's first output y becomes If(max(y) > 0, Softmax(y), -y)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    out = g.output[0].name
    then_g = helper.make_graph([helper.make_node("Softmax", [out], ["if_then"], axis=-1)], "then", [],
                               [helper.make_tensor_value_info("if_then", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Neg", [out], ["if_else"])], "else", [],
                               [helper.make_tensor_value_info("if_else", TensorProto.FLOAT, None)])
    g.initializer.append(helper.make_tensor("if_zero", TensorProto.FLOAT, [], [0.0]))
    g.node.extend([helper.make_node("ReduceMax", [out], ["if_score"], keepdims=0),
                   helper.make_node("Greater", ["if_score", "if_zero"], ["if_cond"]),
                   helper.make_node("If", ["if_cond"], ["if_out"], then_branch=then_g, else_branch=else_g)])
    del g.output[:]
    g.output.append(helper.make_tensor_value_info("if_out", TensorProto.FLOAT, None))
    return m


def with_symbolic_dim(model: onnx.ModelProto, axis: int, name: str) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    dim = m.graph.input[0].type.tensor_type.shape.dim[axis]
    dim.Clear()
    dim.dim_param = name
    for out in m.graph.output:
        out.type.tensor_type.ClearField("shape")
    return m


def with_free_sequence(model: onnx.ModelProto, length: int) -> onnx.ModelProto:
    """The encoder with a symbolic sequence length: the export folds it into its Reshape targets
    ([128, 12, 64], [128, 768], [128, 1, 768]), whose first entry becomes -1."""
    m = with_symbolic_dim(model, 1, "sequence")
    targets = {n.input[1] for n in m.graph.node if n.op_type == "Reshape"}
    for node in m.graph.node:
        if node.op_type == "Constant" and node.output[0] in targets:
            shape = numpy_helper.to_array(node.attribute[0].t).copy()
            if shape.size and shape[0] == length:
                shape[0] = -1
                node.attribute[0].t.CopyFrom(numpy_helper.from_array(shape))
    return m


def save(model: onnx.ModelProto, directory: str, name: str) -> str:
    path = os.path.join(directory, name)
    onnx.save(model, path)
    return path


def median_ms(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def input_of(session: osprey.InferenceSession, shape, seed=0) -> dict:
    arg = session.get_inputs()[0]
    return {arg.name: np.random.default_rng(seed).standard_normal(shape).astype(np.float32)}


def trailing_if(models: str, work: str, threads: int, rounds: int, runs: int, rows: list) -> None:
    base = onnx.load(os.path.join(models, "mobilenet_v2.onnx"))
    plain = osprey.InferenceSession(save(base, work, "plain.onnx"), threads=threads)
    branched = osprey.InferenceSession(save(with_trailing_if(base), work, "if.onnx"), threads=threads)
    feed = input_of(plain, (1, 3, 224, 224))
    for s in (plain, branched):
        for _ in range(3):
            s.run(None, feed)
    t_plain, t_if = [], []
    for _ in range(rounds):
        t_plain.append(median_ms(lambda: plain.run(None, feed), runs))
        t_if.append(median_ms(lambda: branched.run(None, feed), runs))
    p, b = statistics.median(t_plain), statistics.median(t_if)
    stats = branched.stats()
    rows.append(("MobileNetV2", "plain model, ms", "%.2f" % p, ""))
    rows.append(("MobileNetV2 + trailing If", "ms (ratio to plain; bar 1.1x)", "%.2f" % b, "%.2fx" % (b / p)))
    rows.append(("MobileNetV2 + trailing If", "executions / host ops / stages",
                 "%d / %d / %d" % (stats["executions"], stats["host_ops"], stats["stages"]), ""))


def shape_switch(label: str, path: str, shapes, new_shape, threads: int, runs: int, rows: list) -> None:
    """Alternates between shapes[0] and shapes[1], then runs once at new_shape."""
    session = osprey.InferenceSession(path, threads=threads)
    feeds = [input_of(session, s, i) for i, s in enumerate(shapes)]
    try:
        for f in feeds:
            session.run(None, f)
    except osprey.OspreyError as e:
        rows.append((label, "shape switch", "not run: %s" % str(e).splitlines()[0][:60], ""))
        return
    steady = median_ms(lambda: session.run(None, feeds[0]), runs)
    back = []
    for _ in range(runs):
        session.run(None, feeds[1])
        start = time.perf_counter()
        session.run(None, feeds[0])
        back.append((time.perf_counter() - start) * 1e3)
    first_back = statistics.median(back)
    made = session.stats()["plans_made"]
    start = time.perf_counter()
    session.run(None, input_of(session, new_shape, 9))
    new_ms = (time.perf_counter() - start) * 1e3
    stats = session.stats()
    rows.append((label, "first run at new shape %s, ms (planned: weights packed / shared)" % (list(new_shape),),
                 "%.2f" % new_ms, "%d / %d" % (stats["weights_packed"], stats["weights_shared"])))
    rows.append((label, "plans made for %d shapes over %d switches back" % (len(shapes) + 1, runs),
                 str(stats["plans_made"]), "kept: %d" % stats["plans_kept"]))
    assert stats["plans_made"] == made + 1, (made, stats)
    rows.append((label, "steady run at %s, ms" % (list(shapes[0]),), "%.2f" % steady, ""))
    rows.append((label, "first run back from %s, ms (planning: bar 0.05)" % (list(shapes[1]),), "%.2f" % first_back,
                 "+%.2f" % (first_back - steady)))


def shared_runtime(models: str, threads: int, rows: list) -> None:
    path = os.path.join(models, "mobilenet_v2.onnx")
    feed = None

    def thread_count() -> int:
        return len(os.listdir("/proc/self/task"))

    before = thread_count()
    runtime = osprey.Runtime(threads=threads)
    shared = [osprey.InferenceSession(path, runtime=runtime) for _ in range(4)]
    feed = input_of(shared[0], (1, 3, 224, 224))
    for s in shared:
        s.run(None, feed)
    with_shared = thread_count() - before
    before = thread_count()
    own = [osprey.InferenceSession(path, threads=threads) for _ in range(4)]
    for s in own:
        s.run(None, feed)
    with_own = thread_count() - before
    rows.append(("4 MobileNetV2 sessions", "threads added: own runtimes / one shared runtime",
                 "%d / %d" % (with_own, with_shared), "pool of %d" % runtime.thread_count()))


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def release_memory(models: str, threads: int, rows: list) -> None:
    path = os.path.join(models, "bert_base_l2_seq128.onnx")
    session = osprey.InferenceSession(path, threads=threads)
    feed = input_of(session, (1, 128, 768))
    session.run(None, feed)
    before = rss_mib()
    session.release_memory()
    after = rss_mib()
    start = time.perf_counter()
    session.run(None, feed)
    again = (time.perf_counter() - start) * 1e3
    rows.append(("2-layer encoder", "RSS MiB after a run / after release_memory()", "%.1f / %.1f" % (before, after),
                 "next run %.1f ms (plans again)" % again))


RSS_AFTER_RUNS = """
import os, sys, numpy as np, osprey
s = osprey.InferenceSession(sys.argv[1], threads=int(sys.argv[2]), memory=sys.argv[3])
feed = {s.get_inputs()[0].name: np.random.default_rng(0).standard_normal((1, 128, 768), dtype=np.float32)}
for _ in range(5):
    s.run(None, feed)
with open("/proc/self/statm") as f:
    print(int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20)
"""


def memory_low(models: str, work: str, threads: int, rows: list) -> None:
    """Steady RSS of a fresh process after 5 runs of the encoder's .osp at each memory mode."""
    import subprocess
    osp = os.path.join(work, "encoder.osp")
    osprey.convert(os.path.join(models, "bert_base_l2_seq128.onnx"), osp)
    rss = {}
    for mode in ("normal", "low"):
        out = subprocess.run([sys.executable, "-c", RSS_AFTER_RUNS, osp, str(threads), mode], check=True,
                             capture_output=True, text=True).stdout
        rss[mode] = float(out.split()[-1])
    rows.append(("2-layer encoder .osp", "RSS MiB after 5 runs: Memory::Normal / Low",
                 "%.1f / %.1f" % (rss["normal"], rss["low"]),
                 "Low returns %.1f MiB (weights' pages once packed, arena between runs)" % (rss["normal"] - rss["low"])))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        trailing_if(args.models, work, args.threads, args.rounds, args.runs, rows)
        mobilenet = save(with_symbolic_dim(onnx.load(os.path.join(args.models, "mobilenet_v2.onnx")), 0, "batch"),
                         work, "mobilenet_batch.onnx")
        shape_switch("MobileNetV2 batch 1 <-> 2", mobilenet, [(1, 3, 224, 224), (2, 3, 224, 224)], (3, 3, 224, 224), args.threads,
                     args.runs, rows)
        encoder = save(with_free_sequence(onnx.load(os.path.join(args.models, "bert_base_l2_seq128.onnx")), 128),
                       work, "encoder_sequence.onnx")
        shape_switch("2-layer encoder sequence 128 <-> 64", encoder, [(1, 128, 768), (1, 64, 768)], (1, 96, 768), args.threads,
                     args.runs, rows)
        shared_runtime(args.models, args.threads, rows)
        release_memory(args.models, args.threads, rows)
        memory_low(args.models, work, args.threads, rows)
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    print("osprey runtime bench: %d threads, %s" % (args.threads, osprey.__version__ if hasattr(osprey, "__version__") else ""))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
