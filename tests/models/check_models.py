#!/usr/bin/env python3
"""End to end: every model of ../shared/models/make_models.py converted and run through the
`osprey` CLI, each output compared with PyTorch's: max|diff| <= 1e-4 * max(1, max|ref|).

Environment: OSPREY_BIN (the CLI), OSPREY_MODELS_DIR (models made by make_models.py; generated
into OSPREY_WORK_DIR/models when absent), OSPREY_SHARED_DIR (default: ../shared beside the
repository), OSPREY_BERT_LAYERS (default 2; 12 for the full model), OSPREY_THREADS (default 2),
OSPREY_BACKEND (cpu, cuda, ...; or --backend B), OSPREY_PRECISION (normal or low; or
--precision P) and OSPREY_RUN_ARGS (more `osprey run` options, e.g. "--fp32-stem 0.05"). Device backends are held to 1e-3 (fp32) and 2e-2 (precision low) of max(1, max|ref|),
as fp32 device libraries reassociate sums and fp16 rounds every activation. Known misses are
listed with their reasons in expected_mismatches.txt (reported as "expected"; a listed model that
passes fails the check, so the list stays true).
Exits 77 (skipped) when neither models nor make_models.py with torch are available."""
import os, re, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP = 77


def skip(msg):
    print("SKIPPED: " + msg)
    sys.exit(SKIP)


def option(flag, default):
    """The value after `flag` on the command line, else `default`."""
    if flag in sys.argv[1:-1]:
        return sys.argv[sys.argv.index(flag) + 1]
    return default


def expected_mismatches(backend, precision):
    """{model: reason} from expected_mismatches.txt for this backend and precision."""
    known = {}
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "expected_mismatches.txt")) as f:
        for line in f:
            parts = line.split(None, 3)
            if len(parts) == 4 and not line.startswith("#") and parts[:2] == [backend, precision]:
                known[parts[2]] = parts[3].strip()
    return known


def main():
    try:
        import numpy as np
    except ImportError:
        skip("numpy is not installed for %s (run scripts/setup.sh)" % sys.executable)
    osprey = os.environ.get("OSPREY_BIN") or skip("OSPREY_BIN is not set")
    backend = option("--backend", os.environ.get("OSPREY_BACKEND", "cpu"))
    precision = option("--precision", os.environ.get("OSPREY_PRECISION", "normal"))
    tolerance = 1e-4 if backend == "cpu" else (2e-2 if precision == "low" else 1e-3)
    known = expected_mismatches(backend, precision)
    work = os.environ.get("OSPREY_WORK_DIR", "/tmp/osprey-model-check")
    layers = int(os.environ.get("OSPREY_BERT_LAYERS", "2"))
    threads = os.environ.get("OSPREY_THREADS", "2")
    models = os.environ.get("OSPREY_MODELS_DIR") or os.path.join(work, "models")
    shared = os.environ.get("OSPREY_SHARED_DIR", os.path.join(os.path.dirname(ROOT), "shared"))
    maker = os.path.join(shared, "models", "make_models.py")
    bert = "bert_base_l%d_seq128" % layers
    names = ["mobilenet_v2", "resnet18", "resnet50", "squeezenet1_1", "shufflenet_v2_x1_0",
             "efficientnet_b0", bert, "vit_tiny_p16_224"]
    # --models a,b (or OSPREY_CHECK_MODELS; "cnn" = the six CNNs) runs a subset; --no-fallback
    # (or OSPREY_NO_FALLBACK=1) fails a model whose run left any op on the CPU backup.
    only = option("--models", os.environ.get("OSPREY_CHECK_MODELS", ""))
    if only == "cnn":
        only = ",".join(names[:6])
    if only:
        names = [n for n in names if n in only.split(",")]
    no_fallback = "--no-fallback" in sys.argv[1:] or os.environ.get("OSPREY_NO_FALLBACK") == "1"
    if backend != "cpu":  # a device backend without a device (e.g. no OpenCL platform) is a skip
        listed = subprocess.run([osprey, "backends"], capture_output=True, text=True).stdout.splitlines()
        at = listed.index(backend) if backend in listed else -1
        if (at < 0 or at + 1 >= len(listed) or not listed[at + 1].startswith("  ")
                or listed[at + 1].startswith("  no device")):
            skip("backend %s is not built or has no device (`osprey backends`)" % backend)
    missing = [n for n in names if not os.path.exists(os.path.join(models, n + ".ref.npy"))]
    if missing:
        if not os.path.exists(maker):
            skip("no models in %s and no %s (../shared is absent)" % (models, maker))
        try:
            import torch, torchvision  # noqa: F401
        except ImportError:
            skip("torch/torchvision are not installed for %s (run scripts/setup.sh)" % sys.executable)
        os.makedirs(models, exist_ok=True)
        print("generating %s into %s" % (", ".join(missing), models), flush=True)
        subprocess.run([sys.executable, maker, models, "--only", ",".join(missing), "--bert-layers", str(layers)],
                       check=True)
    os.makedirs(os.path.join(work, "out"), exist_ok=True)
    rows, failed = [], 0
    for name in names:
        onnx_path = os.path.join(models, name + ".onnx")
        osp = os.path.join(work, name + ".osp")
        t0 = time.time()
        conv = subprocess.run([osprey, "convert", onnx_path, osp], capture_output=True, text=True)
        convert_s = time.time() - t0
        if conv.returncode != 0:
            rows.append((name, "convert failed: " + conv.stderr.strip(), "", "", "", ""))
            failed += 1
            continue
        outdir = os.path.join(work, "out", name)
        t0 = time.time()
        run = subprocess.run([osprey, "run", osp, "--input", "input=" + os.path.join(models, name + ".input.npy"),
                              "--save-outputs", outdir, "--threads", threads, "--backend", backend,
                              "--precision", precision] +
                             # The OpenCL test's shared program cache (a test may read the environment).
                             (["--opencl-cache", os.environ["OSPREY_OPENCL_CACHE"]]
                              if backend == "opencl" and os.environ.get("OSPREY_OPENCL_CACHE") else []) +
                             # On a device the third run replays the captured graph: check that one.
                             ([] if backend == "cpu" else ["--loops", "3"]) +
                             os.environ.get("OSPREY_RUN_ARGS", "").split(), capture_output=True, text=True)
        run_s = time.time() - t0
        if run.returncode != 0:
            rows.append((name, "run failed: " + run.stderr.strip(), "", "", "", ""))
            failed += 1
            continue
        ref = np.load(os.path.join(models, name + ".ref.npy"))
        out = np.load(os.path.join(outdir, "0_output.npy"))
        if out.shape != ref.shape:
            rows.append((name, "shape %s != %s" % (out.shape, ref.shape), "", "", "", ""))
            failed += 1
            continue
        diff = float(np.max(np.abs(out.astype(np.float64) - ref.astype(np.float64))))
        bound = tolerance * max(1.0, float(np.max(np.abs(ref))))
        within = diff <= bound
        reason = known.get(name)
        if reason and not within:
            print("%s: expected mismatch: %s" % (name, reason))
        elif reason:
            print("%s: passes but is listed in expected_mismatches.txt: remove it there" % name)
        # A listed model that misses its bound is known; one that meets it makes the list stale.
        ok = within != bool(reason)
        failed += 0 if ok else 1
        m = re.search(r"arena peak ([\d.]+) MB \(activations add up to ([\d.]+) MB\)", run.stdout)
        arena = "%s / %s MB" % (m.group(1), m.group(2)) if m else "?"
        fallback = re.search(r"on the cpu backup: (.*)", run.stdout)
        if fallback:
            print("%s on the cpu backup: %s" % (name, fallback.group(1)), flush=True)
            if no_fallback and fallback.group(1).strip() != "none" and ok:
                ok = False
                failed += 1
        elif no_fallback and backend != "cpu" and ok:
            ok = False  # the CLI did not report the fallback: cannot check it
            failed += 1
        if reason and within:
            result = "UNEXPECTED PASS"
        elif reason and ok:
            result = "expected"
        else:
            result = "ok" if ok else "MISMATCH"
        rows.append((name, result, "%.3g (bound %.3g)" % (diff, bound), "%.2f s" % convert_s,
                     arena, "%.2f s" % run_s))
    print("backend %s, precision %s" % (backend, precision))
    print("%-22s %-9s %-26s %-9s %-28s %s" % ("model", "result", "max|diff|", "convert", "arena peak / sum", "run"))
    for r in rows:
        print("%-22s %-9s %-26s %-9s %-28s %s" % r)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
