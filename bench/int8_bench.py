#!/usr/bin/env python3
"""Osprey's int8 path against its own fp32 path and against ONNX Runtime, in one run: ResNet-50,
MobileNetV2 and a 12-layer BERT-base encoder, each quantized by ONNX Runtime's quantize_static
(QDQ) and, where the build has it, by `osprey quantize`. Prints the machine, then one table per
model (latency of each variant, the speed-up ratios the int8 goal is stated in, accuracy of each
int8 output against the same engine's fp32 output) and a summary.

    bench/int8_bench.py [--models resnet50,mobilenet_v2,bert] [--models-dir build/int8-bench/models]
                        [--threads 2] [--rounds 3] [--runs 5] [--warmup 2] [--gap-ms 200]
                        [--cpu-isa native|avx2|scalar] [--activation-type QInt8|QUInt8]
                        [--weight-type QInt8|QUInt8] [--osprey BIN] [--requantize] [--json FILE]
                        [--wait-idle SHARE] [--quick]

--models-dir caches make_models.py's fp32 models (made with /usr/bin/python3, which has torch, when
missing), the 32 calibration inputs (NAME.calib/NNNN.npy), ORT's QDQ model (NAME.qdq.onnx, with
the settings it was made with in NAME.qdq.json) and `osprey quantize`'s NAME.osprey-int8.osp.
--quick: 1 round of 2 runs, MobileNetV2 only. --cpu-isa limits Osprey's CPU kernel table (process
wide, as the CLI's --cpu-isa), e.g. to measure the AVX2 path on an AVX-512 machine; ONNX Runtime
has no such limit and uses every ISA the CPU has.

Runs in one process, each engine with --threads intra-op threads (ORT: inter-op 1, sequential,
all graph optimizations). After --warmup untimed runs of each, every round runs each variant K
times in turn, the order rotated by one each round, with a --gap-ms pause before each variant
(ORT's workers spin for a while after a run). Latency: the median of the rounds' medians, in ms.
Needs the osprey package (python/osprey with the built _osprey module and _bin/osprey), onnx,
numpy and onnxruntime (1.32: its quantize_static defaults are printed). docs/int8_bench.md explains
the columns and holds measured results.
"""
import argparse
import inspect
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx

import osprey

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_MODELS = "/work/shared/models/make_models.py"
CALIBRATION_SAMPLES = 32
CALIBRATION_SEED = 1234  # make_models' benchmark inputs use RandomState(model index): not these
ALIASES = {"resnet50": "resnet50", "mobilenet_v2": "mobilenet_v2", "mobilenetv2": "mobilenet_v2", "bert": None}
LABELS = {
    "osprey_fp32": "Osprey fp32 (.onnx)",
    "osprey_int8": "Osprey int8 (ORT QDQ .onnx)",
    "ort_fp32": "ORT fp32",
    "ort_int8": "ORT int8 (same QDQ .onnx)",
    "osprey_q": "Osprey int8 (osprey quantize .osp)",
    "osprey_w4": "Osprey weight-only int4 (.osp)",
}
# Weight-only int4 goals (of the fp32 .osp that `osprey convert` writes): file, peak RSS, latency.
WEIGHTS_ONLY_GOALS = {"file": 0.3, "rss": 0.4, "latency": 1.0}


# ---- machine ----

def lscpu() -> dict:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    info = {}
    for line in out.splitlines():
        key, _, value = line.partition(":")
        info[key.strip()] = value.strip()
    return info


def cpu_flags(info: dict) -> set:
    flags = set(info.get("Flags", "").split())
    if not flags:
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("flags"):
                        flags = set(line.split(":", 1)[1].split())
                        break
        except OSError:
            pass
    return flags


def cpu_busy_seconds() -> float:
    """CPU seconds the whole machine has been busy (all CPUs; /proc/stat, not idle or iowait)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return float("nan")
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class OtherLoad:
    """The share of the machine's CPU time that other processes used while it was open."""

    def __enter__(self):
        self.start = (time.perf_counter(), cpu_busy_seconds(), own_cpu_seconds())
        return self

    def __exit__(self, *exc):
        wall, busy, own = (b - a for a, b in zip(self.start, (time.perf_counter(), cpu_busy_seconds(), own_cpu_seconds())))
        self.share = max(0.0, busy - own) / (wall * (os.cpu_count() or 1)) if wall > 0 else float("nan")


def wait_idle(threshold: float, limit_s: float = 1800) -> float:
    """Waits until other processes use at most `threshold` of the machine over 5 seconds (at most
    limit_s). Returns the share seen last."""
    deadline = time.time() + limit_s
    while True:
        with OtherLoad() as load:
            time.sleep(5)
        if load.share <= threshold or time.time() > deadline:
            return load.share


def int8_goal(isa: str, flags: set):
    """The speed-up goal for Osprey fp32 / Osprey int8 on the kernel table in use."""
    if isa.startswith("avx512") and "avx512_vnni" in flags:
        return 2.5, "VNNI"
    if isa.startswith("avx2") or isa.startswith("avx512"):
        return 1.8, "AVX2"
    return None, isa


# ---- models ----

def model_names(spec: str, bert_layers: int) -> list:
    names = []
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        name = ALIASES.get(item.lower(), item)
        names.append(name or "bert_base_l%d_seq128" % bert_layers)
    return names


def ensure_fp32(names: list, models_dir: str, bert_layers: int, python: str) -> None:
    missing = [n for n in names if not (os.path.exists(os.path.join(models_dir, n + ".onnx"))
                                         and os.path.exists(os.path.join(models_dir, n + ".input.npy")))]
    if not missing:
        return
    print("making %s with %s (once; cached in %s)" % (", ".join(missing), MAKE_MODELS, models_dir), flush=True)
    os.makedirs(models_dir, exist_ok=True)
    subprocess.run([python, MAKE_MODELS, models_dir, "--only", ",".join(missing), "--bert-layers", str(bert_layers)],
                   check=True, stdout=subprocess.DEVNULL)


def input_spec(model_path: str):
    """(name, shape, numpy dtype) of each graph input that is not an initializer; symbolic dims 1."""
    model = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    specs = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        shape = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1 for d in t.shape.dim)
        specs.append((vi.name, shape, onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)))
    return specs


def calibration_set(model_path: str, calib_dir: str) -> list:
    """CALIBRATION_SAMPLES seeded random feeds, as make_models' input (standard normal for float
    inputs), saved as `osprey quantize --calibration` reads them: calib_dir/NNNN.npy for a
    single-input model, calib_dir/NNNN/INPUT.npy otherwise."""
    specs = input_spec(model_path)
    rng = np.random.default_rng(CALIBRATION_SEED)
    feeds = []
    for _ in range(CALIBRATION_SAMPLES):
        feed = {}
        for name, shape, dtype in specs:
            if np.issubdtype(dtype, np.floating):
                feed[name] = rng.standard_normal(shape).astype(dtype)
            elif dtype == np.bool_:
                feed[name] = rng.integers(0, 2, size=shape).astype(dtype)
            else:
                feed[name] = rng.integers(0, 100, size=shape).astype(dtype)
        feeds.append(feed)
    os.makedirs(calib_dir, exist_ok=True)
    for i, feed in enumerate(feeds):
        for name, value in feed.items():
            path = os.path.join(calib_dir, "%04d.npy" % i)
            if len(feed) > 1:
                os.makedirs(os.path.join(calib_dir, "%04d" % i), exist_ok=True)
                path = os.path.join(calib_dir, "%04d" % i, name + ".npy")
            if not os.path.exists(path) or not np.array_equal(np.load(path), value):
                np.save(path, value)
    return feeds


def default_types(quantization):
    """quantize_static's default (activation_type, weight_type), as this ORT's signature states them."""
    defaults = inspect.signature(quantization.quantize_static).parameters
    return tuple(str(defaults[k].default).split(".")[-1] for k in ("activation_type", "weight_type"))


def quantization_settings(quantization, preprocessed: str, types=None) -> dict:
    """The settings of a QDQ model: quantize_static's defaults as this ORT states them, the
    activation and weight types where `types` overrides them, plus what this script sets."""
    defaults = inspect.signature(quantization.quantize_static).parameters
    act, weight = types or default_types(quantization)
    return {
        "onnxruntime": __import__("onnxruntime").__version__,
        "quant_format": "QDQ",
        "per_channel": True,
        "activation_type": act,
        "weight_type": weight,
        "calibrate_method": str(defaults["calibrate_method"].default).split(".")[-1],
        "calibration_samples": CALIBRATION_SAMPLES,
        "calibration_seed": CALIBRATION_SEED,
        "quant_pre_process": preprocessed,
    }


def ort_qdq(name: str, models_dir: str, feeds: list, types, redo: bool):
    """ORT's QDQ model of NAME (made once): quant_pre_process first, then quantize_static with
    per-channel weights and the default activation and weight types (or `types`, then cached as
    NAME.qdq.<act>-<weight>.onnx). Returns (settings, path)."""
    from onnxruntime import quantization
    from onnxruntime.quantization.shape_inference import quant_pre_process

    types = types or default_types(quantization)
    tag = "" if types == default_types(quantization) else ".%s-%s" % (types[0].lower(), types[1].lower())
    src = os.path.join(models_dir, name + ".onnx")
    pre = os.path.join(models_dir, name + ".pre.onnx")
    dst = os.path.join(models_dir, name + ".qdq%s.onnx" % tag)
    meta = os.path.join(models_dir, name + ".qdq%s.json" % tag)
    if not redo and os.path.exists(dst) and os.path.exists(meta):
        with open(meta) as f:
            made = json.load(f)
        if made == quantization_settings(quantization, made.get("quant_pre_process", ""), types):
            return made, dst
    print("quantizing %s with onnxruntime.quantization (once; cached as %s)" % (name, dst), flush=True)
    # ORT recommends quant_pre_process (it warns without it). Its symbolic shape inference needs
    # sympy; these models have static shapes, so without sympy ONNX's shape inference is enough.
    preprocessed = ""
    for how, kwargs in (("yes", {}), ("yes, skip_symbolic_shape", {"skip_symbolic_shape": True})):
        try:
            quant_pre_process(src, pre, **kwargs)
            preprocessed = how
            break
        except Exception as e:  # noqa: BLE001 - the model as exported is quantized instead
            print("  quant_pre_process(%s) failed: %s" % (", ".join("%s=%s" % kv for kv in kwargs.items()),
                                                       str(e).strip().splitlines()[0][:200]))
    if not preprocessed:
        print("  quantizing the model as exported")

    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            self.feeds = iter(feeds)

        def get_next(self):
            return next(self.feeds, None)

    quantization.quantize_static(pre if preprocessed else src, dst, Reader(), quant_format=quantization.QuantFormat.QDQ,
                                 per_channel=True, activation_type=getattr(quantization.QuantType, types[0]),
                                 weight_type=getattr(quantization.QuantType, types[1]))
    settings = quantization_settings(quantization, preprocessed, types)
    with open(meta, "w") as f:
        json.dump(settings, f, indent=1)
    return settings, dst


def osprey_quantize_available(cli: str):
    """(True, "") where the CLI knows `quantize`, else (False, why). A build without it answers
    `osprey quantize --help` with "unknown command 'quantize'"; the command itself (first
    version) exits 1 on --help with "unknown option --help", which still means it is there."""
    try:
        p = subprocess.run([cli, "quantize", "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)
    text = p.stdout + p.stderr
    if "unknown command" in text or (p.returncode != 0 and "option" not in text and "usage" not in text.lower()):
        return False, (text.strip().splitlines() or ["exit %d" % p.returncode])[0]
    return True, ""


def osprey_quantized(cli: str, name: str, models_dir: str, isa_limit: str, threads: int, redo: bool):
    """`osprey quantize NAME.onnx NAME.osprey-int8.osp --calibration NAME.calib --per-channel`
    (MinMax, its default, as ORT's; made again when older than the CLI). Returns (path, the
    command's summary lines: ops quantized, model cosine); raises RuntimeError with the command's
    message when it fails."""
    src = os.path.join(models_dir, name + ".onnx")
    dst = os.path.join(models_dir, name + ".osprey-int8.osp")
    log = dst + ".txt"
    calib = os.path.join(models_dir, name + ".calib")
    if redo or not (os.path.exists(dst) and os.path.getmtime(dst) >= os.path.getmtime(cli)):
        env = dict(os.environ)
        if isa_limit:
            env["OSPREY_CPU_ISA"] = isa_limit
        print("quantizing %s with `osprey quantize` (cached as %s)" % (name, dst), flush=True)
        for path in (dst, log):
            if os.path.exists(path):
                os.remove(path)
        p = subprocess.run([cli, "quantize", src, dst, "--calibration", calib, "--per-channel", "--threads", str(threads)],
                           capture_output=True, text=True, env=env)
        if p.returncode != 0 or not os.path.exists(dst):
            lines = [ln for ln in (p.stderr + p.stdout).replace("\r", "\n").splitlines() if ln.strip()
                     and not ln.startswith("calibrating")]
            raise RuntimeError("osprey quantize failed (exit %d): %s" % (p.returncode, lines[-1] if lines else ""))
        with open(log, "w") as f:
            f.write(p.stdout)
    summary = []
    if os.path.exists(log):
        with open(log) as f:
            summary = [ln.strip() for ln in f if " ops quantized" in ln or ln.startswith("model ")]
    return dst, summary


def osprey_weights_only(cli: str, name: str, models_dir: str) -> dict:
    """`osprey convert NAME.onnx NAME.osp` and `osprey quantize NAME.onnx NAME.osprey-w4.osp
    --weights-only int4` (each made again when older than the CLI), and each file's peak RSS
    under `osprey bench FILE --loops 3` in a process of its own."""
    src = os.path.join(models_dir, name + ".onnx")
    files = {"fp32": os.path.join(models_dir, name + ".osp"), "int4": os.path.join(models_dir, name + ".osprey-w4.osp")}
    commands = {"fp32": [cli, "convert", src, files["fp32"]],
                "int4": [cli, "quantize", src, files["int4"], "--weights-only", "int4"]}
    out = {}
    for key, path in files.items():
        if not (os.path.exists(path) and os.path.getmtime(path) >= os.path.getmtime(cli)):
            p = subprocess.run(commands[key], capture_output=True, text=True)
            if p.returncode != 0:
                raise RuntimeError("%s failed: %s" % (" ".join(commands[key][:2]), (p.stderr or p.stdout).strip()[-300:]))
        p = subprocess.run([cli, "bench", path, "--loops", "3"], capture_output=True, text=True)
        rss = re.search(r"peak RSS ([0-9.]+) MB", p.stdout + p.stderr)
        out[key] = {"path": path, "mb": os.path.getsize(path) / 2**20, "rss_mb": float(rss.group(1)) if rss else None}
    return out


# ---- sessions ----

def ort_session(path: str, threads: int):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


class Variant:
    def __init__(self, key: str, make):
        self.key, self.label, self.make = key, LABELS[key], make
        self.session = None
        self.error = ""  # why it has no timings
        self.outputs = None
        self.first_ms = None
        self.round_medians = []
        self.times = []

    def open(self, feed) -> None:
        try:
            self.session = self.make()
            start = time.perf_counter()
            self.outputs = self.session.run(None, feed)
            self.first_ms = (time.perf_counter() - start) * 1e3
        except Exception as e:  # noqa: BLE001 - reported in the table, the other variants go on
            self.error = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0] if str(e).strip() else "")
            self.session = None

    def median(self):
        return statistics.median(self.round_medians) if self.round_medians else None


def compare(out, ref):
    """(cosine similarity, max |out - ref|) over all outputs, flattened, in float64."""
    a = np.concatenate([np.asarray(o, np.float64).ravel() for o in out])
    b = np.concatenate([np.asarray(r, np.float64).ravel() for r in ref])
    if a.shape != b.shape:
        return None, None
    denom = np.linalg.norm(a) * np.linalg.norm(b)
    cos = float(np.dot(a, b) / denom) if denom > 0 else float("nan")
    return cos, float(np.max(np.abs(a - b))) if a.size else 0.0


def bench_model(name: str, args, cli: str, quantize_ok: bool, isa_limit: str) -> dict:
    d = args.models_dir
    fp32 = os.path.join(d, name + ".onnx")
    feed_value = np.load(os.path.join(d, name + ".input.npy"))
    specs = input_spec(fp32)
    feed = {specs[0][0]: feed_value}
    feeds = calibration_set(fp32, os.path.join(d, name + ".calib"))
    row = {"model": name, "input": list(feed_value.shape)}
    try:
        row["quantization"], qdq = ort_qdq(name, d, feeds, args.types, args.requantize)
    except Exception as e:  # noqa: BLE001
        row["quantization_error"] = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0][:300])
        qdq = None
    osp_q, osp_q_error = None, ""
    if not quantize_ok:
        osp_q_error = "osprey quantize: not available in this build"
    else:
        try:
            osp_q, row["osprey_quantize"] = osprey_quantized(cli, name, d, isa_limit, args.threads, args.requantize)
        except RuntimeError as e:
            osp_q_error = str(e).splitlines()[0][:300]

    weights_only, w4_error = None, ""
    if name.startswith("bert") and quantize_ok:
        try:
            weights_only = osprey_weights_only(cli, name, d)
            row["weights_only"] = weights_only
        except RuntimeError as e:
            w4_error = str(e).splitlines()[0][:300]

    t = args.threads
    variants = [Variant("osprey_fp32", lambda: osprey.InferenceSession(fp32, threads=t)),
                Variant("osprey_int8", lambda: osprey.InferenceSession(qdq, threads=t)),
                Variant("ort_fp32", lambda: ort_session(fp32, t)),
                Variant("ort_int8", lambda: ort_session(qdq, t)),
                Variant("osprey_q", lambda: osprey.InferenceSession(osp_q, threads=t))]
    if weights_only or w4_error:
        variants.append(Variant("osprey_w4", lambda: osprey.InferenceSession(weights_only["int4"]["path"], threads=t)))
    by_key = {v.key: v for v in variants}
    if qdq is None:
        by_key["osprey_int8"].error = by_key["ort_int8"].error = "no QDQ model: " + row["quantization_error"]
    if osp_q is None:
        by_key["osprey_q"].error = osp_q_error
    if w4_error:
        by_key["osprey_w4"].error = w4_error
    for v in variants:
        if not v.error:
            v.open(feed)
    live = [v for v in variants if v.session is not None]
    for v in live:
        try:
            for _ in range(args.warmup - 1):  # open() made the first run
                v.session.run(None, feed)
        except Exception as e:  # noqa: BLE001
            v.error, v.session = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0]), None
    if args.wait_idle is not None:
        wait_idle(args.wait_idle)
    timing = OtherLoad().__enter__()
    for r in range(args.rounds):
        k = r % len(live) if live else 0
        for v in live[k:] + live[:k]:
            if v.session is None:  # failed in an earlier round
                continue
            time.sleep(args.gap_ms / 1e3)
            times = []
            try:
                for _ in range(args.runs):
                    start = time.perf_counter()
                    v.session.run(None, feed)
                    times.append((time.perf_counter() - start) * 1e3)
            except Exception as e:  # noqa: BLE001
                v.error, v.session = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0]), None
                v.round_medians, v.times = [], []
                continue
            v.round_medians.append(statistics.median(times))
            v.times.extend(times)
    timing.__exit__()
    row["other_load"] = timing.share
    for v in variants:
        v.session = None  # frees the model before the next one loads

    row["variants"] = {v.key: {"label": v.label, "median_ms": v.median(), "min_ms": min(v.times) if v.times else None,
                               "first_run_ms": v.first_ms, "error": v.error, "round_medians_ms": v.round_medians,
                               "times_ms": v.times} for v in variants}
    ms = {v.key: v.median() for v in variants}

    def ratio(a, b):
        return ms[a] / ms[b] if ms[a] and ms[b] else None

    row["ratios"] = {"osprey_fp32/osprey_int8": ratio("osprey_fp32", "osprey_int8"),
                     "ort_int8/osprey_int8": ratio("ort_int8", "osprey_int8"),
                     "ort_fp32/ort_int8": ratio("ort_fp32", "ort_int8"),
                     "osprey_fp32/osprey_q": ratio("osprey_fp32", "osprey_q")}
    if "osprey_w4" in ms:
        row["ratios"]["osprey_w4/osprey_fp32"] = ratio("osprey_w4", "osprey_fp32")
    pairs = [("osprey_int8", "osprey_fp32", "Osprey int8 vs Osprey fp32"),
             ("ort_int8", "ort_fp32", "ORT int8 vs ORT fp32"),
             ("osprey_int8", "ort_int8", "Osprey int8 vs ORT int8 (same file)"),
             ("osprey_q", "osprey_fp32", "osprey quantize vs Osprey fp32"),
             ("osprey_w4", "osprey_fp32", "weight-only int4 vs Osprey fp32"),
             ("osprey_fp32", "ort_fp32", "Osprey fp32 vs ORT fp32 (sanity)")]
    row["accuracy"] = []
    for a, b, label in pairs:
        if a in by_key and by_key[a].outputs is not None and by_key[b].outputs is not None:
            cos, err = compare(by_key[a].outputs, by_key[b].outputs)
            row["accuracy"].append({"pair": label, "cosine": cos, "max_abs_err": err})
    return row


# ---- printing ----

def fmt_ms(v):
    return "%.2f" % v if v is not None else "-"


def fmt_x(v):
    return "%.2fx" % v if v is not None else "-"


def print_table(rows: list, left=(0,), notes=()) -> None:
    """Columns padded to their widest cell: those in `left` left-justified, the others right.
    `notes` are (first cell, text) lines printed under it, the text starting at the second column."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  " + "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    for first, text in notes:
        print("  " + first.ljust(widths[0]) + "  " + text)


def print_model(row: dict, goal) -> None:
    print()
    print("%s, input %s; other processes used %.0f%% of the CPUs during the timed rounds" % (
        row["model"], row["input"], 100 * row["other_load"]))
    if "quantization_error" in row:
        print("  ORT quantization failed: " + row["quantization_error"])
    elif not row["quantization"]["quant_pre_process"]:
        print("  (quantized without quant_pre_process: it failed on this model)")
    elif row["quantization"]["quant_pre_process"] != "yes":
        print("  (quant_pre_process: %s)" % row["quantization"]["quant_pre_process"])
    lines = [("variant", "median ms", "min ms", "first run ms")]
    errors = []
    for key, v in row["variants"].items():
        if v["error"]:
            errors.append((v["label"], v["error"]))
            continue
        lines.append((v["label"], fmt_ms(v["median_ms"]), fmt_ms(v["min_ms"]), fmt_ms(v["first_run_ms"])))
    print_table(lines, notes=errors)
    for line in row.get("osprey_quantize", []):
        print("  osprey quantize: " + line)
    r = row["ratios"]
    target = "goal >= %.1fx (%s)" % goal if goal[0] else "no goal for %s" % goal[1]
    met = ""
    if goal[0] and r["osprey_fp32/osprey_int8"] is not None:
        met = ": met" if r["osprey_fp32/osprey_int8"] >= goal[0] else ": not met"
    lines = [("ratio", "value", ""),
             ("Osprey fp32 / Osprey int8", fmt_x(r["osprey_fp32/osprey_int8"]), "int8 speed-up, " + target + met),
             ("ORT int8 / Osprey int8", fmt_x(r["ort_int8/osprey_int8"]), "> 1: Osprey faster on the same file"),
             ("ORT fp32 / ORT int8", fmt_x(r["ort_fp32/ort_int8"]), "ORT's int8 speed-up, for context")]
    if r["osprey_fp32/osprey_q"] is not None:
        lines.append(("Osprey fp32 / osprey quantize", fmt_x(r["osprey_fp32/osprey_q"]), "int8 speed-up of Osprey's own quantizer"))
    print_table(lines, left=(0, 2))
    w = row.get("weights_only")
    if w:
        def goal_text(value, key):
            if value is None:
                return "-", ""
            return "%.2fx" % value, "goal <= %.1fx: %s" % (WEIGHTS_ONLY_GOALS[key], "met" if value <= WEIGHTS_ONLY_GOALS[key] else "not met")
        rss = (w["int4"]["rss_mb"] / w["fp32"]["rss_mb"]) if w["int4"]["rss_mb"] and w["fp32"]["rss_mb"] else None
        lines = [("weight-only int4 against fp32 (.osp files)", "int4", "fp32", "ratio", "")]
        lines.append(("file MB", "%.1f" % w["int4"]["mb"], "%.1f" % w["fp32"]["mb"], *goal_text(w["int4"]["mb"] / w["fp32"]["mb"], "file")))
        lines.append(("peak RSS MB (osprey bench, own process)", fmt_ms(w["int4"]["rss_mb"]), fmt_ms(w["fp32"]["rss_mb"]), *goal_text(rss, "rss")))
        lines.append(("median ms (alternating rounds above)", fmt_ms(row["variants"]["osprey_w4"]["median_ms"]),
                      fmt_ms(row["variants"]["osprey_fp32"]["median_ms"]), *goal_text(r.get("osprey_w4/osprey_fp32"), "latency")))
        print_table(lines, left=(0, 4))
    if row["accuracy"]:
        lines = [("accuracy on the benchmark input", "cosine", "max abs err")]
        for a in row["accuracy"]:
            lines.append((a["pair"], "%.6f" % a["cosine"] if a["cosine"] is not None else "shape differs",
                          "%.4g" % a["max_abs_err"] if a["max_abs_err"] is not None else "-"))
        print_table(lines)


def print_summary(rows: list) -> None:
    print()
    print("summary (ms; ratios as above; cosine of each int8 output vs the same engine's fp32)")
    lines = [("model", "Osp fp32", "Osp int8", "ORT fp32", "ORT int8", "Osp quant", "OspF/OspI", "ORTI/OspI",
              "ORTF/ORTI", "cos Osp", "cos ORT", "cos OspI~ORTI")]
    for row in rows:
        v, r = row["variants"], row["ratios"]
        acc = {a["pair"].split(" (")[0]: a for a in row["accuracy"]}

        def cos(pair):
            a = acc.get(pair)
            return "%.4f" % a["cosine"] if a and a["cosine"] is not None else "-"

        lines.append((row["model"], fmt_ms(v["osprey_fp32"]["median_ms"]), fmt_ms(v["osprey_int8"]["median_ms"]),
                      fmt_ms(v["ort_fp32"]["median_ms"]), fmt_ms(v["ort_int8"]["median_ms"]),
                      fmt_ms(v["osprey_q"]["median_ms"]) if not v["osprey_q"]["error"] else "n/a",
                      fmt_x(r["osprey_fp32/osprey_int8"]), fmt_x(r["ort_int8/osprey_int8"]), fmt_x(r["ort_fp32/ort_int8"]),
                      cos("Osprey int8 vs Osprey fp32"), cos("ORT int8 vs ORT fp32"), cos("Osprey int8 vs ORT int8")))
    print_table(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="resnet50,mobilenet_v2,bert",
                        help="comma-separated: resnet50, mobilenet_v2, bert (or make_models.py names)")
    parser.add_argument("--models-dir", default=os.path.join(HERE, "..", "build", "int8-bench", "models"))
    parser.add_argument("--bert-layers", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each variant per round")
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs of each variant first (at least 1)")
    parser.add_argument("--gap-ms", type=float, default=200.0, help="idle pause before each variant's runs in a round")
    parser.add_argument("--cpu-isa", choices=["native", "avx2", "scalar"],
                        help="limit Osprey's CPU kernel table (default: OSPREY_CPU_ISA, else native)")
    parser.add_argument("--osprey", help="the osprey CLI, for `osprey quantize` (default: the package's _bin/osprey, "
                                         "else build/osprey)")
    parser.add_argument("--make-models-python", default="/usr/bin/python3", help="a python with torch and torchvision")
    parser.add_argument("--activation-type", choices=["QInt8", "QUInt8"],
                        help="ORT quantize_static's activation_type (default: ORT's default)")
    parser.add_argument("--weight-type", choices=["QInt8", "QUInt8"],
                        help="ORT quantize_static's weight_type (default: ORT's default)")
    parser.add_argument("--requantize", action="store_true", help="quantize again even where cached")
    parser.add_argument("--wait-idle", type=float, metavar="SHARE",
                        help="before each model, wait (up to 30 min) until other processes use at most SHARE "
                             "(0-1) of the machine's CPU time over 5 s")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 round of 2 runs, MobileNetV2 only")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.runs, args.warmup, args.models = 1, 2, 1, "mobilenet_v2"
    args.warmup = max(1, args.warmup)
    args.models_dir = os.path.abspath(args.models_dir)

    isa_limit = args.cpu_isa or os.environ.get("OSPREY_CPU_ISA", "")
    if args.cpu_isa:
        osprey.set_cpu_isa_limit(args.cpu_isa)  # before any session: the table is chosen once
    isa = osprey.cpu_isa()
    info = lscpu()
    flags = cpu_flags(info)
    goal = int8_goal(isa, flags)
    cli = args.osprey
    if not cli:
        import osprey.__main__ as osprey_main
        cli = osprey_main.cli_path()
        if not os.access(cli, os.X_OK):
            cli = os.path.join(HERE, "..", "build", "osprey")
    quantize_ok, quantize_why = osprey_quantize_available(cli)
    import onnxruntime
    from onnxruntime import quantization

    names = model_names(args.models, args.bert_layers)
    onnxruntime.set_default_logger_severity(3)  # no per-initializer warnings
    defaults = default_types(quantization)
    args.types = (args.activation_type or defaults[0], args.weight_type or defaults[1])
    settings = quantization_settings(quantization, "yes", args.types)
    print("machine: %s, %s cpus; avx2 %s, avx512f %s, avx512_vnni %s, avx_vnni %s" % (
        info.get("Model name", "?"), os.cpu_count(),
        *("yes" if f in flags else "no" for f in ("avx2", "avx512f", "avx512_vnni", "avx_vnni"))))
    print("osprey %s: CPU kernel table %s (limit %s); onnxruntime %s (uses every ISA the CPU has)" % (
        osprey.__version__, isa, isa_limit or "native", onnxruntime.__version__))
    print("int8 goal for this table: %s" % ("Osprey fp32 / Osprey int8 >= %.1fx (%s)" % goal if goal[0] else "none"))
    print("ORT quantization: quantize_static, QDQ, per-channel weights, activations %s, weights %s (%s), "
          "%s calibration on %d random inputs (seed %d), quant_pre_process first" % (
              settings["activation_type"], settings["weight_type"],
              "ORT %s's defaults" % settings["onnxruntime"] if args.types == defaults else
              "set here; ORT %s's defaults: %s, %s" % (settings["onnxruntime"], defaults[0], defaults[1]),
              settings["calibrate_method"], CALIBRATION_SAMPLES, CALIBRATION_SEED))
    print("osprey quantize: %s" % ("available (%s)" % cli if quantize_ok else "not available in this build (%s)" % quantize_why))
    try:
        load = os.getloadavg()
        load_text = "load average %.2f %.2f %.2f, " % load
    except OSError:
        load_text = ""
    print("%s%d thread(s) per engine, %d warm-up run(s), %d round(s) x %d run(s), variants alternated; "
          "median of round medians, ms" % (load_text, args.threads, args.warmup, args.rounds, args.runs), flush=True)

    ensure_fp32(names, args.models_dir, args.bert_layers, args.make_models_python)
    rows = []
    for name in names:
        row = bench_model(name, args, cli, quantize_ok, isa_limit)
        rows.append(row)
        print_model(row, goal)
        sys.stdout.flush()
    if len(rows) > 1:
        print_summary(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info.get("Model name", ""), "flags": sorted(flags & {"avx2", "avx512f", "avx512_vnni", "avx_vnni"}),
                       "osprey_isa": isa, "isa_limit": isa_limit or "native", "onnxruntime": onnxruntime.__version__,
                       "threads": args.threads, "rounds": args.rounds, "runs": args.runs, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
