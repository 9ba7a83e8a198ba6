#!/usr/bin/env python3
"""Seed corpora for the fuzz targets (fuzz/), generated rather than committed.

Usage: fuzz_corpus.py OSPREY_BIN OUTDIR [SHARED_DIR]
  OUTDIR/osprey_fuzz_onnx          the bundled default model and every ONNX node test's model.onnx
  OUTDIR/osprey_fuzz_osp           the same models converted by `OSPREY_BIN convert`
  OUTDIR/osprey_fuzz_tensor_proto  the node tests' input_*.pb and the default model's input
  OUTDIR/osprey_fuzz_npy           small .npy files of every dtype, rank and format version numpy writes
SHARED_DIR defaults to ../shared next to the repository; without it only the default model is used."""
import concurrent.futures, hashlib, io, os, subprocess, sys, tempfile
import numpy as np
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def put(directory, data):
    """Stores data under its hash, as libFuzzer names corpus files, so reruns do not duplicate."""
    with open(os.path.join(directory, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def convert(osprey, onnx_path, osp_dir):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "m.osp")
        done = subprocess.run([osprey, "convert", onnx_path, out], capture_output=True, timeout=60)
        if done.returncode == 0:
            with open(out, "rb") as f:
                put(osp_dir, f.read())
            return True
    return False


def npy_seeds(npy_dir):
    rng = np.random.default_rng(0)
    arrays = [np.float32(1.5), np.zeros((0, 3), np.float32), rng.standard_normal((2, 3)).astype(np.float16),
              np.asfortranarray(rng.standard_normal((3, 4))), np.array([True, False, True]),
              (rng.random((2, 2, 2)) * 100).astype(np.int64).astype(">i8")]
    for dtype in (np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64):
        arrays.append((rng.random((1, 3, 2, 2)) * 50).astype(dtype))
    for i, a in enumerate(arrays):
        for version in ((1, 0), (2, 0), (3, 0)):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, a, version=version, allow_pickle=False)
            put(npy_dir, buf.getvalue())


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    osprey, outdir = sys.argv[1], sys.argv[2]
    shared = sys.argv[3] if len(sys.argv) > 3 else os.path.join(os.path.dirname(ROOT), "shared")
    dirs = {name: os.path.join(outdir, "osprey_fuzz_" + name) for name in ("onnx", "osp", "tensor_proto", "npy")}
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)

    default_dir = os.path.join(outdir, "default-model")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_default_model.py"), default_dir],
                   check=True, stdout=subprocess.DEVNULL)
    models = [os.path.join(default_dir, "tiny_classifier.onnx")]
    x = np.load(os.path.join(default_dir, "tiny_classifier.input.npy"))
    put(dirs["tensor_proto"], numpy_helper.from_array(x, "input").SerializeToString())
    # A sequence and an optional (of a sequence), as ONNX's test data of such values is written.
    import onnx
    from onnx import helper
    items = [numpy_helper.from_array(x[:, :1], "a"), numpy_helper.from_array(x[:, 1:], "b")]
    sequence = helper.make_sequence("s", onnx.SequenceProto.TENSOR, items)
    put(dirs["tensor_proto"], sequence.SerializeToString())
    put(dirs["tensor_proto"], helper.make_optional("o", onnx.OptionalProto.SEQUENCE, sequence).SerializeToString())
    put(dirs["npy"], open(os.path.join(default_dir, "tiny_classifier.input.npy"), "rb").read())
    npy_seeds(dirs["npy"])

    node_tests = os.path.join(shared, "onnx-node-tests")
    if os.path.isdir(node_tests):
        for case in sorted(os.listdir(node_tests)):
            case_dir = os.path.join(node_tests, case)
            if os.path.isfile(os.path.join(case_dir, "model.onnx")):
                models.append(os.path.join(case_dir, "model.onnx"))
            for data_set in sorted(os.listdir(case_dir)) if os.path.isdir(case_dir) else []:
                set_dir = os.path.join(case_dir, data_set)
                if os.path.isdir(set_dir):
                    for name in sorted(os.listdir(set_dir)):
                        if name.startswith("input_") and name.endswith(".pb"):
                            put(dirs["tensor_proto"], open(os.path.join(set_dir, name), "rb").read())
    else:
        print(f"fuzz_corpus: {node_tests} is absent; seeds come from the default model only")

    for m in models:
        put(dirs["onnx"], open(m, "rb").read())
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        converted = sum(pool.map(lambda m: convert(osprey, m, dirs["osp"]), models))
    for name, d in dirs.items():
        print(f"fuzz_corpus: {len(os.listdir(d))} seeds for osprey_fuzz_{name}")
    print(f"fuzz_corpus: {converted} of {len(models)} models converted to .osp")


if __name__ == "__main__":
    main()
