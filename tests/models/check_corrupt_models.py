#!/usr/bin/env python3
"""No file crashes or hangs `osprey run`: seeded truncations and byte corruptions of the bundled
default model (.onnx and its .osp) and, where ../shared is present, of a few ONNX node tests
(a convolution, a Loop with its subgraph, a Gather), plus the kept fuzz reproducers. Each run
must exit 0, or non-zero with an `error:` line; a signal, a hang or a silent failure fails.
Usage: OSPREY_BIN=build/osprey check_corrupt_models.py [MUTATIONS_PER_FILE] (default 300)."""
import concurrent.futures, glob, os, random, shutil, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
SHARED = os.environ.get("OSPREY_SHARED_DIR", os.path.join(os.path.dirname(ROOT), "shared"))
NODE_TESTS = ["test_conv_with_strides_padding", "test_loop11", "test_gather_2d_indices"]
TIMEOUT_S = 60
EDGE_BYTES = 2048  # headers, graph structure and small tables live near the ends of both formats


def mutate(data, rng):
    """A truncation, or a few bytes overwritten; half of the overwrites land near either end."""
    if rng.random() < 0.3:
        return data[: rng.randrange(len(data))]
    out = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 4, 8])):
        if rng.random() < 0.5:
            pos = rng.randrange(len(out))
        else:
            edge = rng.randrange(min(EDGE_BYTES, len(out)))
            pos = edge if rng.random() < 0.5 else len(out) - 1 - edge
        kind = rng.randrange(4)
        if kind == 0:
            out[pos] ^= 1 << rng.randrange(8)
        elif kind == 1:
            out[pos] = rng.choice([0x00, 0xFF, 0x7F, 0x80])
        elif kind == 2:
            out[pos] = rng.randrange(256)
        else:  # an extreme little-endian int32 where one was
            value = rng.choice([0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, 0x00010000])
            out[pos : pos + 4] = value.to_bytes(4, "little")[: len(out) - pos]
    return bytes(out)


def run(path):
    """'ok', 'error' or a description of the failure."""
    try:
        # A damaged dimension may declare an input of gigabytes, which the CLI would fill with random
        # values before running: the memory limit refuses it at once, as it would a user's.
        r = subprocess.run([os.environ["OSPREY_BIN"], "run", path, "--threads", "1", "--memory-limit", "1G"],
                           capture_output=True, text=True, errors="replace", timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "hang: no exit within %d s" % TIMEOUT_S
    if r.returncode < 0:
        return "killed by signal %d: %s" % (-r.returncode, r.stderr.strip()[-300:])
    if r.returncode == 0:
        return "ok"
    if any(l.startswith("error: ") for l in r.stderr.splitlines()):
        return "error"
    return "exit %d without an 'error:' line: %r" % (r.returncode, r.stderr[-300:])


def sources(tmp):
    import numpy as np
    import onnx
    import make_default_model

    onnx_path = os.path.join(tmp, "tiny_classifier.onnx")
    onnx.save(make_default_model.build(np.random.RandomState(0)), onnx_path)
    paths = [onnx_path]
    if os.path.isdir(os.path.join(SHARED, "onnx-node-tests")):
        for case in NODE_TESTS:
            src = os.path.join(SHARED, "onnx-node-tests", case, "model.onnx")
            if os.path.isfile(src):
                paths.append(os.path.join(tmp, case + ".onnx"))
                shutil.copy(src, paths[-1])
    else:
        print("note: %s/onnx-node-tests is absent; only the default model is corrupted" % SHARED)
    for p in list(paths):
        osp = p[: -len(".onnx")] + ".osp"
        subprocess.run([os.environ["OSPREY_BIN"], "convert", p, osp], check=True, capture_output=True)
        paths.append(osp)
    return paths


def main():
    if "OSPREY_BIN" not in os.environ:
        sys.exit("set OSPREY_BIN to the osprey CLI")
    try:
        import numpy, onnx  # noqa: F401  (make_default_model needs both)
    except ImportError as e:
        print("SKIPPED: %s (run scripts/setup.sh)" % e)
        sys.exit(77)
    per_file = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    tmp = tempfile.mkdtemp(prefix="osprey-corrupt-")
    cases = []  # (label, path)
    for src in sources(tmp):
        data = open(src, "rb").read()
        rng = random.Random(os.path.basename(src))  # seeded per file: each case reproduces alone
        for i in range(per_file):
            ext = os.path.splitext(src)[1]
            path = os.path.join(tmp, "%s.%03d%s" % (os.path.basename(src)[: -len(ext)], i, ext))
            open(path, "wb").write(mutate(data, rng))
            cases.append(path)
    for reg in ("osprey_fuzz_onnx", "osprey_fuzz_osp"):
        ext = ".onnx" if reg.endswith("onnx") else ".osp"
        for f in sorted(glob.glob(os.path.join(ROOT, "fuzz", "regressions", reg, "*"))):
            cases.append(os.path.join(tmp, "regression-" + os.path.basename(f).split(".")[0] + ext))
            shutil.copy(f, cases[-1])

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(run, cases))
    failures = [(c, r) for c, r in zip(cases, results) if r not in ("ok", "error")]
    print("%d runs: %d ran, %d stopped with an error line, %d failed" %
          (len(cases), results.count("ok"), results.count("error"), len(failures)))
    for case, why in failures:
        print("FAIL %s: %s" % (case, why))
    if failures:
        print("failing files are kept in %s" % tmp)
        sys.exit(1)
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
