"""Osprey: a neural-network inference engine, with an ONNX Runtime-style Python API.

    import numpy as np, osprey
    session = osprey.InferenceSession("model.onnx")          # or a converted .osp
    name = session.get_inputs()[0].name
    outputs = session.run(None, {name: np.zeros((1, 3, 224, 224), np.float32)})

``osprey.convert("model.onnx", "model.osp")`` converts once ahead of time, and
``python -m osprey`` runs the same command-line tool as the ``osprey`` binary.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _osprey
from ._osprey import (
    CancelledError,
    InvalidArgumentError,
    InvalidModelError,
    NotFoundError,
    OspreyError,
    OutOfMemoryError,
    UnsupportedError,
)

__version__: str = _osprey.__version__

__all__ = [
    "InferenceSession",
    "NodeArg",
    "ConvertReport",
    "convert",
    "QuantizeReport",
    "quantize",
    "available_backends",
    "OspreyError",
    "InvalidArgumentError",
    "InvalidModelError",
    "UnsupportedError",
    "NotFoundError",
    "OutOfMemoryError",
    "CancelledError",
    "Runtime",
    "IOBinding",
    "set_cpu_isa_limit",
    "cpu_isa",
]

PathOrBytes = Union[str, "os.PathLike[str]", bytes, Tuple[Union[str, "os.PathLike[str]"], Union[str, "os.PathLike[str]"]]]
Dim = Union[int, str, None]

# ONNX Runtime spells these two differently from the engine; every other name is the same.
_ORT_TYPE_NAMES = {"float32": "float", "float64": "double"}
# ONNX Runtime execution providers that correspond to an Osprey backend.
_PROVIDERS = {
    "CPUExecutionProvider": "cpu",
    "CUDAExecutionProvider": "cuda",
    "OpenCLExecutionProvider": "opencl",
    "VulkanExecutionProvider": "vulkan",
}
_PRECISIONS = ("normal", "high", "low")


def _options(**given: Any) -> Dict[str, Any]:
    """The keyword options that were given (None: the engine's default)."""
    return {k: v for k, v in given.items() if v is not None}


def set_cpu_isa_limit(name: str) -> None:
    """Limits the CPU kernel table to ``"avx2"`` or ``"scalar"`` (``"native"``: no limit).

    The table is chosen once per process, at the first CPU kernel, so call this before the first
    session runs; a different limit afterwards raises ``InvalidArgumentError``. Importing
    ``osprey`` applies ``OSPREY_CPU_ISA`` from the environment the same way.
    """
    _osprey.set_cpu_isa_limit(name)


def cpu_isa() -> str:
    """The CPU kernel table in use (``"scalar"``, ``"avx2_fma"``, ``"avx512f"``)."""
    return _osprey.cpu_isa()


if os.environ.get("OSPREY_CPU_ISA"):
    set_cpu_isa_limit(os.environ["OSPREY_CPU_ISA"])


@dataclass(frozen=True)
class NodeArg:
    """An input or output of a model, as ``onnxruntime.NodeArg`` describes it.

    Attributes:
        name: the tensor's name in the model.
        shape: one entry per dimension: an int where fixed, the symbol (e.g. ``"batch"``) where
            symbolic, None where unknown and unnamed.
        type: the ONNX Runtime type string, e.g. ``"tensor(float)"``.
        dtype: the numpy dtype of the tensor, or None where numpy has none (bfloat16, float8...).
    """

    name: str
    shape: List[Dim]
    type: str
    dtype: Optional[np.dtype]

    @staticmethod
    def _from_engine(info: Mapping[str, Any]) -> "NodeArg":
        symbols = info["dim_names"]
        dims: List[Dim] = []
        for i, size in enumerate(info["shape"]):
            symbol = symbols[i] if i < len(symbols) else ""
            dims.append(int(size) if size >= 0 else (symbol or None))
        engine_name = info["dtype_name"]
        if engine_name == "sequence":
            element = info["element_dtype_name"]
            type_name = "seq(map)" if element == "map" else "seq(tensor(%s))" % _ORT_TYPE_NAMES.get(element, element)
        else:
            type_name = "tensor(%s)" % _ORT_TYPE_NAMES.get(engine_name, engine_name)
        if info["optional"]:
            type_name = "optional(%s)" % type_name
        return NodeArg(info["name"], dims, type_name, _osprey.numpy_dtype(info["dtype_code"]))


@dataclass(frozen=True)
class ConvertReport:
    """What :func:`convert` did.

    Attributes:
        onnx_nodes: nodes in the ONNX graph.
        tflite_ops: operators of a TFLite model's main subgraph.
        caffe_layers: layers of a Caffe net.
        tensorflow_nodes: nodes of a TensorFlow GraphDef.
        osprey_ops: ops in the converted model.
        folded_ops: ops computed at conversion (constant folding).
        removed_ops: Identity, Dropout and dead ops removed.
        fused_ops: ops fused into their producers (BatchNorm into Conv, activations...) and
            QDQ patterns rewritten into integer ops (QLinearConv, QGemm...).
        seconds: conversion time.
        bytes: size of the written .osp file.
    """

    onnx_nodes: int
    tflite_ops: int
    caffe_layers: int
    tensorflow_nodes: int
    osprey_ops: int
    folded_ops: int
    removed_ops: int
    fused_ops: int
    seconds: float
    bytes: int


def _default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _backend_from_providers(providers: Sequence[str]) -> str:
    compiled = available_backends()
    for provider in providers:
        if not isinstance(provider, str):
            raise TypeError("providers must be names (str), got %r" % (provider,))
        backend = _PROVIDERS.get(provider, provider)
        if backend not in _PROVIDERS.values():
            raise ValueError("unknown provider %r (known: %s)" % (provider, ", ".join(_PROVIDERS)))
        if backend in compiled:
            return backend
    raise UnsupportedError("none of the providers %s is compiled into this build (available: %s)"
                           % (list(providers), ", ".join(compiled)))


class IOBinding:
    """Inputs and outputs bound to the caller's memory: ``bind_input(name, value)`` and
    ``bind_output(name, value)`` take a numpy array (an output array must be C-contiguous and
    writeable, of the output's dtype and shape) or an object with ``__cuda_array_interface__``
    (a contiguous torch or CuPy CUDA tensor). The binding keeps the bound objects alive."""

    def __init__(self) -> None:
        self._binding = _osprey.IoBinding()

    def bind_input(self, name: str, value: Any) -> None:
        self._binding.bind_input(name, value)

    def bind_output(self, name: str, value: Any) -> None:
        self._binding.bind_output(name, value)


class Runtime:
    """A backend's thread pool, memory pools and caches, made once and shared by sessions
    (MNN's ``createRuntime``): ``InferenceSession(path, runtime=rt)``. Sessions on one runtime take
    turns: a run waits while another session of the runtime runs on another thread.

    Args:
        backend, threads, precision, memory_limit, run_time_limit_ms, plan_cache_size and the
            options below: as for ``InferenceSession``. Sessions on the runtime use these.
    """

    def __init__(self, backend: str = "cpu", threads: Optional[int] = None, precision: str = "normal", *,
                 memory_limit: Optional[int] = None, run_time_limit_ms: Optional[int] = None,
                 plan_cache_size: int = 4, memory: Optional[str] = None,
                 fp32_stem: Optional[float] = None, cpu_pinning: Optional[str] = None,
                 cpu_layout: Optional[str] = None, cpu_quantized_layout: Optional[str] = None,
                 cuda_low_precision: Optional[str] = None,
                 cuda_layout: Optional[str] = None, cuda_graphs: Optional[bool] = None,
                 cuda_autotune: Optional[bool] = None, cuda_cache: Optional[str] = None,
                 opencl_platform: Union[str, int, None] = None, opencl_device: Union[str, int, None] = None,
                 opencl_tune: Optional[str] = None, opencl_cache: Optional[str] = None,
                 opencl_memory: Optional[str] = None, opencl_fp16_math: Optional[bool] = None,
                 opencl_profile: Optional[bool] = None, vulkan_device: Union[str, int, None] = None,
                 vulkan_cache: Optional[str] = None, vulkan_validation: Optional[bool] = None,
                 vulkan_fp16_math: Optional[bool] = None, vulkan_mapped_weights: Optional[bool] = None) -> None:
        if precision not in _PRECISIONS:
            raise ValueError("precision must be one of %s, got %r" % (", ".join(_PRECISIONS), precision))
        self.backend = backend
        self.threads = int(_default_threads() if threads is None else threads)
        self.precision = precision
        self.memory_limit = memory_limit
        self.run_time_limit_ms = run_time_limit_ms
        self.plan_cache_size = int(plan_cache_size)
        self.options = _options(
            memory=memory, fp32_stem=fp32_stem, cpu_pinning=cpu_pinning, cpu_layout=cpu_layout,
            cpu_quantized_layout=cpu_quantized_layout,
            cuda_low_precision=cuda_low_precision, cuda_layout=cuda_layout, cuda_graphs=cuda_graphs,
            cuda_autotune=cuda_autotune, cuda_cache=cuda_cache,
            opencl_platform=opencl_platform, opencl_device=opencl_device, opencl_tune=opencl_tune,
            opencl_cache=opencl_cache, opencl_memory=opencl_memory, opencl_fp16_math=opencl_fp16_math,
            opencl_profile=opencl_profile, vulkan_device=vulkan_device, vulkan_cache=vulkan_cache,
            vulkan_validation=vulkan_validation, vulkan_fp16_math=vulkan_fp16_math,
            vulkan_mapped_weights=vulkan_mapped_weights)
        self._runtime = _osprey.Runtime(backend, self.threads, precision,
                                        0 if memory_limit is None else int(memory_limit),
                                        0 if run_time_limit_ms is None else int(run_time_limit_ms),
                                        self.plan_cache_size, self.options)

    def thread_count(self) -> int:
        """The worker threads of its CPU pool, the caller's included."""
        return self._runtime.thread_count()

    def garbage_collect(self, level: int = 0) -> None:
        """Returns to the system what the runtime's pools keep but no session uses."""
        self._runtime.garbage_collect(level)


class InferenceSession:
    """Loads a model (.onnx, converted in memory, or .osp) and runs it, like ``onnxruntime.InferenceSession``.

    Args:
        path_or_bytes: a path to a .onnx, .osp or .tflite file, or the file's bytes, or a path to
            a frozen TensorFlow GraphDef (.pb; docs/tensorflow.md); for Caffe,
            the pair (deploy.prototxt, net.caffemodel), or the .prototxt alone when the
            .caffemodel of the same name lies beside it.
        backend: ``"cpu"`` (always compiled in), ``"cuda"``, ``"opencl"`` or ``"vulkan"`` where the
            build has them; ops the backend declines run on the CPU.
        threads: CPU threads; None uses every CPU this process may run on.
        precision: ``"normal"``, ``"high"`` or ``"low"`` (backends may compute in lower precision
            with "low").
        memory_limit: the most bytes the session may plan (any one tensor, and activations,
            weights and folded constants together); shapes needing more raise
            ``OutOfMemoryError`` when run. None: the machine's physical memory.
        run_time_limit_ms: a run that takes longer raises ``InvalidArgumentError`` (checked
            between ops and at each Loop / Scan iteration). None: no limit.
        providers: ONNX Runtime provider names (e.g. ``["CUDAExecutionProvider",
            "CPUExecutionProvider"]``); the first one compiled into this build picks the backend.
            Overrides ``backend``.
        plan_cache_size: plans of this many other input shapes are kept, so that returning to
            one plans nothing (0: every new shape plans again).
        runtime: an ``osprey.Runtime`` to share with other sessions; its settings replace the
            ones above and below.
        memory: ``"normal"`` or ``"low"``: after each run the activation arena's pages go back
            to the system, and a ``.osp`` file is mapped and its weights' pages returned once
            packed (an ``.onnx`` model is converted into memory, so only the arena's go).
        fp32_stem: at ``precision="low"``, the share (0 to 1) of the model's convolution work,
            counted from its inputs, kept in fp32 on backends that mix precisions (default 0.1).
        cpu_pinning: ``"auto"`` (default), ``"on"`` or ``"off"``: bind the CPU pool's threads to cores.
        cpu_layout: ``"nchw"`` (default) or ``"nc8hw8"`` (the opt-in packed activation layout).
        cpu_quantized_layout: ``"auto"`` (default: ``"nhwc"``), ``"nchw"`` or ``"nhwc"``: the
            layout of 4-D int8 / uint8 activations.
        cuda_low_precision: ``"fp16"`` (default) or ``"bf16"``: storage at ``precision="low"``.
        cuda_layout: ``"auto"`` (default), ``"nchw"`` or ``"nhwc"``: CUDA activation layout.
        cuda_graphs: capture runs into CUDA graphs (default True).
        cuda_autotune: time cuBLASLt / cuDNN algorithms once per shape and keep the fastest
            (default False: the libraries' heuristic choices).
        cuda_cache: file keeping the timed choices across processes.
        opencl_platform, opencl_device: an index or a name substring (default: the first GPU).
        opencl_tune: ``"none"`` (default), ``"fast"`` or ``"wide"``: work-size tuning.
        opencl_cache: file caching OpenCL programs and tuned work sizes.
        opencl_memory: ``"auto"`` (default), ``"buffer"`` or ``"image"``.
        opencl_fp16_math: half arithmetic at ``precision="low"`` where the device has it (default True).
        opencl_profile: a profiling queue, so per-op times are the kernels' own (default False).
        vulkan_device: an index or a name substring (default: the first GPU).
        vulkan_cache: file caching compiled Vulkan pipelines.
        vulkan_validation: turn on VK_LAYER_KHRONOS_validation where installed (default False).
        vulkan_fp16_math: fp16 multiplies in the convolution and MatMul shaders at
            ``precision="low"`` where the device has shaderFloat16 (default True).
        vulkan_mapped_weights: weights written straight into mapped device memory where the
            device has a large mapped heap (default True); False: through a staging copy.
        signature: a TensorFlow SavedModel directory's signature to run (default serving_default).

    Raises:
        NotFoundError: the file does not exist.
        InvalidModelError: the file is not a valid model.
        UnsupportedError: the model uses an op or dtype this build cannot run, or the backend is absent.
        InvalidArgumentError: a bad argument (a ValueError too).

    A session plans once per set of input shapes: running with new shapes re-plans. Runs of one
    session from several threads are serialised; use one session per thread to run in parallel.
    """

    def __init__(
        self,
        path_or_bytes: PathOrBytes,
        backend: str = "cpu",
        threads: Optional[int] = None,
        precision: str = "normal",
        *,
        memory_limit: Optional[int] = None,
        run_time_limit_ms: Optional[int] = None,
        providers: Optional[Sequence[str]] = None,
        plan_cache_size: int = 4,
        runtime: Optional["Runtime"] = None,
        memory: Optional[str] = None,
        fp32_stem: Optional[float] = None,
        cpu_pinning: Optional[str] = None,
        cpu_layout: Optional[str] = None,
        cpu_quantized_layout: Optional[str] = None,
        cuda_low_precision: Optional[str] = None,
        cuda_layout: Optional[str] = None,
        cuda_graphs: Optional[bool] = None,
        cuda_autotune: Optional[bool] = None,
        cuda_cache: Optional[str] = None,
        opencl_platform: Union[str, int, None] = None,
        opencl_device: Union[str, int, None] = None,
        opencl_tune: Optional[str] = None,
        opencl_cache: Optional[str] = None,
        opencl_memory: Optional[str] = None,
        opencl_fp16_math: Optional[bool] = None,
        opencl_profile: Optional[bool] = None,
        vulkan_device: Union[str, int, None] = None,
        vulkan_cache: Optional[str] = None,
        vulkan_validation: Optional[bool] = None,
        vulkan_fp16_math: Optional[bool] = None,
        vulkan_mapped_weights: Optional[bool] = None,
        signature: Optional[str] = None,
    ) -> None:
        options = _options(
            memory=memory, fp32_stem=fp32_stem, cpu_pinning=cpu_pinning, cpu_layout=cpu_layout,
            cpu_quantized_layout=cpu_quantized_layout,
            cuda_low_precision=cuda_low_precision, cuda_layout=cuda_layout, cuda_graphs=cuda_graphs,
            cuda_autotune=cuda_autotune, cuda_cache=cuda_cache,
            opencl_platform=opencl_platform, opencl_device=opencl_device, opencl_tune=opencl_tune,
            opencl_cache=opencl_cache, opencl_memory=opencl_memory, opencl_fp16_math=opencl_fp16_math,
            opencl_profile=opencl_profile, vulkan_device=vulkan_device, vulkan_cache=vulkan_cache,
            vulkan_validation=vulkan_validation, vulkan_fp16_math=vulkan_fp16_math,
            vulkan_mapped_weights=vulkan_mapped_weights)
        if runtime is not None:
            # A shared runtime brings its own backend, threads and settings.
            backend, threads, precision = runtime.backend, runtime.threads, runtime.precision
            memory_limit, run_time_limit_ms = runtime.memory_limit, runtime.run_time_limit_ms
            plan_cache_size = runtime.plan_cache_size
            options = runtime.options
        if providers:
            backend = _backend_from_providers(providers)
        if threads is None:
            threads = _default_threads()
        if precision not in _PRECISIONS:
            raise ValueError("precision must be one of %s, got %r" % (", ".join(_PRECISIONS), precision))
        if isinstance(path_or_bytes, (tuple, list)):  # a Caffe deploy.prototxt and its .caffemodel
            if len(path_or_bytes) != 2:
                raise ValueError("a model given as a pair is (deploy.prototxt, net.caffemodel), got %d paths"
                                 % len(path_or_bytes))
            source = tuple(os.fspath(p) for p in path_or_bytes)
        else:
            source = path_or_bytes if isinstance(path_or_bytes, (bytes, bytearray, memoryview)) else os.fspath(path_or_bytes)
        if isinstance(source, (bytearray, memoryview)):
            source = bytes(source)
        self._backend = backend
        self._threads = int(threads)
        self._precision = precision
        if memory_limit is not None and int(memory_limit) <= 0:
            raise ValueError("memory_limit must be a positive number of bytes, got %r" % (memory_limit,))
        if run_time_limit_ms is not None and int(run_time_limit_ms) <= 0:
            raise ValueError("run_time_limit_ms must be a positive number of milliseconds, got %r" % (run_time_limit_ms,))
        self._session = _osprey.Session(source, backend, self._threads, precision,
                                        0 if memory_limit is None else int(memory_limit),
                                        0 if run_time_limit_ms is None else int(run_time_limit_ms),
                                        int(plan_cache_size), None if runtime is None else runtime._runtime,
                                        options, signature or "")
        self._inputs = [NodeArg._from_engine(t) for t in self._session.inputs()]
        self._outputs = [NodeArg._from_engine(t) for t in self._session.outputs()]

    def get_inputs(self) -> List[NodeArg]:
        """The model's inputs, in order."""
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        """The model's outputs, in order."""
        return list(self._outputs)

    def get_providers(self) -> List[str]:
        """The ONNX Runtime names of the backend and its CPU fallback, e.g. ``["CPUExecutionProvider"]``."""
        names = {v: k for k, v in _PROVIDERS.items()}
        chain = [self._backend] + ([] if self._backend == "cpu" else ["cpu"])
        return [names[b] for b in chain]

    @property
    def backend(self) -> str:
        """The backend the session runs on (``"cpu"``, ``"cuda"``...)."""
        return self._backend

    @property
    def threads(self) -> int:
        """The number of CPU threads."""
        return self._threads

    def run(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, Any]) -> List[np.ndarray]:
        """Runs the model.

        Args:
            output_names: the outputs to return, in this order; None (or empty) for all of them.
            input_feed: every input of the model by name, as numpy arrays (anything ``np.asarray``
                accepts) of the input's dtype. C-contiguous arrays are read in place, without a copy.
                A sequence input takes a list of arrays, an optional one None for no value.

        Returns:
            One value per requested output: a numpy array; a list of arrays for a sequence (of
            dicts for ZipMap's maps); None for an optional output without a value.

        Raises:
            InvalidArgumentError: an unknown input or output name, a missing input, or an input of
                the wrong dtype, rank or shape (a ValueError too).
            UnsupportedError: an output has a dtype numpy cannot hold (bfloat16...).
            OspreyError: any other failure while running; the message names the op.

        The GIL is released while the model runs.
        """
        if isinstance(output_names, str):
            raise TypeError("output_names must be a list of names or None, not a str")
        if not isinstance(input_feed, Mapping):
            raise TypeError("input_feed must be a mapping from input name to array, got %s" % type(input_feed).__name__)
        return self._session.run(list(output_names or ()), dict(input_feed))

    def run_async(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, Any],
                  callback: Callable[[Optional[List[np.ndarray]], Any, str], None], user_data: Any = None) -> None:
        """Starts a run and returns at once, as ONNX Runtime's ``run_async``: the model runs on a
        thread of its own (C++ ``Session::runAsync``), and ``callback(outputs, user_data, error)``
        is called from another thread when it ends, with ``outputs`` None and ``error`` the
        message if it failed ("" otherwise). One run may be pending per session; the input arrays
        must not change until the callback. Arguments as for ``run``.
        """
        if isinstance(output_names, str):
            raise TypeError("output_names must be a list of names or None, not a str")
        if not isinstance(input_feed, Mapping):
            raise TypeError("input_feed must be a mapping from input name to array, got %s" % type(input_feed).__name__)
        self._session.run_async(list(output_names or ()), dict(input_feed))

        def finish() -> None:
            try:
                outputs = self._session.wait()
            except OspreyError as e:
                callback(None, user_data, str(e))
                return
            callback(outputs, user_data, "")

        threading.Thread(target=finish, daemon=True).start()

    def run_with_callbacks(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, Any], *,
                           before: Optional[Callable[[Dict[str, Any], List[Optional[np.ndarray]]], Optional[bool]]] = None,
                           after: Optional[Callable[[Dict[str, Any], List[Optional[np.ndarray]]], Optional[bool]]] = None
                           ) -> List[np.ndarray]:
        """Runs the model like ``run``, showing each op to the callbacks (MNN's runSessionWithCallBack).

        ``before(op, inputs)`` is called before each op runs and ``after(op, outputs)`` after it;
        ``op`` is a dict with ``name``, ``type``, ``backend`` and ``names`` (of the tensors), the
        tensors are numpy copies (None for an omitted input). A callback that returns False stops
        the run with ``CancelledError``; an exception it raises stops the run and propagates.
        Ops computed once when the session was planned (constant folding) are not shown.
        """
        if isinstance(output_names, str):
            raise TypeError("output_names must be a list of names or None, not a str")
        if not isinstance(input_feed, Mapping):
            raise TypeError("input_feed must be a mapping from input name to array, got %s" % type(input_feed).__name__)
        return self._session.run_with_callbacks(list(output_names or ()), dict(input_feed), before, after)

    def io_binding(self) -> "IOBinding":
        """A binding of this session's inputs and outputs to memory the caller owns (ONNX Runtime's
        ``io_binding``); run it with ``run_with_iobinding``."""
        return IOBinding()

    def run_with_iobinding(self, binding: "IOBinding") -> None:
        """Runs with every input bound and writes the bound outputs in place: numpy arrays on the
        host (nothing allocated), CUDA tensors (torch, CuPy: ``__cuda_array_interface__``) on the
        device, without host copies, on a CUDA session. Returns once the device has finished."""
        self._session.run_with_binding(binding._binding)

    def release_memory(self) -> None:
        """Returns the memory of the session's plans (activations, folded values, packed weights no
        other session holds) to the system; the next run plans again."""
        self._session.release_memory()

    def stats(self) -> Dict[str, Any]:
        """Figures of the current plan: arena bytes, executions, folded ops, FLOPs, ops per backend."""
        return self._session.stats()

    def __repr__(self) -> str:
        return "<osprey.InferenceSession backend=%s threads=%d inputs=%s outputs=%s>" % (
            self._backend, self._threads, [i.name for i in self._inputs], [o.name for o in self._outputs])


def convert(src: Union[str, "os.PathLike[str]"], dst: Union[str, "os.PathLike[str]"], *,
            fold_constants: bool = True, fuse: bool = True,
            weights: Union[str, "os.PathLike[str]", None] = None, signature: Optional[str] = None) -> ConvertReport:
    """Converts a model to Osprey's .osp format (what ``osprey convert SRC DST`` does).

    Args:
        src: the .onnx or .tflite file, a frozen TensorFlow GraphDef (.pb) or SavedModel
            directory, or a Caffe deploy.prototxt.
        weights: a Caffe net's .caffemodel.
        signature: the signature of a TensorFlow SavedModel (default: serving_default).
        dst: the .osp file to write.
        fold_constants: compute ops whose inputs are all constant at conversion.
        fuse: fold BatchNorm into Conv, fuse activations into Conv/Gemm, and rewrite the
            DequantizeLinear -> op -> QuantizeLinear patterns of QDQ models into integer ops.

    Raises:
        OspreyError: the model cannot be read or converted, or dst cannot be written; the message
            names the node or file.
    """
    report = _osprey.convert(os.fspath(src), os.fspath(dst), fold_constants, fuse,
                             "" if weights is None else os.fspath(weights), signature or "")
    return ConvertReport(**report)


class QuantizeReport:
    """What :func:`quantize` did.

    Attributes:
        quantized_ops: ops of the float model that run as integer ops (or on bytes).
        float_ops: ops left in float.
        quantized_by_type: op type of the float model -> how many were quantized.
        tensors: (tensor, op, cosine, max error) of each quantized tensor against the float
            model's, on the first calibration sample.
        outputs: the same for the model's outputs.
    """

    def __init__(self, quantized_ops: int, float_ops: int, quantized_by_type: Dict[str, int],
                 tensors: List[Tuple[str, str, float, float]], outputs: List[Tuple[str, str, float, float]]):
        self.quantized_ops = quantized_ops
        self.float_ops = float_ops
        self.quantized_by_type = dict(quantized_by_type)
        self.tensors = [tuple(t) for t in tensors]
        self.outputs = [tuple(t) for t in outputs]

    def __repr__(self) -> str:
        cosine = ", ".join("%.5f" % t[2] for t in self.outputs)
        return "QuantizeReport(quantized_ops=%d, float_ops=%d, output cosine=[%s])" % (
            self.quantized_ops, self.float_ops, cosine)


def quantize(model: Union[str, "os.PathLike[str]"], output: Union[str, "os.PathLike[str]"],
             calibration: Union[None, str, "os.PathLike[str]", Iterable[Mapping[str, Any]]] = None, *,
             method: str = "minmax", percentile: float = 99.999, per_channel: bool = False,
             dynamic: bool = False, weights_only: Optional[str] = None, block_size: int = 32,
             accuracy_level: int = 4, exclude: Sequence[str] = (), threads: int = 0) -> QuantizeReport:
    """Post-training int8 quantization (what ``osprey quantize MODEL OUT.osp`` does).

    Args:
        model: a float .onnx or .osp model.
        output: the quantized .osp file to write.
        calibration: a folder of .npy files (``DIR/*.npy`` for a one-input model, or
            ``DIR/<sample>/<input name>.npy``), or an iterable of {input name: array} samples.
            Static quantization needs at least one; dynamic takes none.
        method: how activation ranges are chosen: "minmax", "entropy" or "percentile".
        percentile: the share of values "percentile" keeps inside the range.
        per_channel: one weight scale per output channel (else one per tensor).
        dynamic: quantize MatMul activations at run time instead (DynamicQuantizeMatMul).
        weights_only: "int8" or "int4": only MatMul / Gemm weights, as MatMulNBits blocks of
            ``block_size`` along K (activations stay float; calibration, when given, is used
            for the report only).
        block_size: the block of weight-only quantization (a power of 2, at least 16).
        accuracy_level: MatMulNBits' accuracy_level (ONNX Runtime's): 4 lets int4 weights
            multiply int8-quantized activations (faster), 0 keeps the activations float32.
        exclude: op types ("Conv", "MatMul", ...) or node names to leave in float.
        threads: threads of the calibration runs (0: all cores).

    Raises:
        OspreyError: the model or a calibration file cannot be read, a sample does not fit the
            model's inputs, or the output cannot be written; the message names it.
    """
    if isinstance(calibration, os.PathLike):
        calibration = os.fspath(calibration)
    samples = calibration if calibration is None or isinstance(calibration, str) else [dict(s) for s in calibration]
    bits = {None: 0, "int8": 8, "int4": 4}
    if weights_only not in bits:
        raise ValueError("weights_only must be 'int8', 'int4' or None, not %r" % (weights_only,))
    if accuracy_level not in range(5):
        raise ValueError("accuracy_level must be 0 to 4, not %r" % (accuracy_level,))
    report = _osprey.quantize(os.fspath(model), os.fspath(output), samples, method, percentile, per_channel,
                              dynamic, list(exclude), threads, bits[weights_only], block_size,
                              accuracy_level)
    return QuantizeReport(**report)


def available_backends() -> Dict[str, List[str]]:
    """The backends compiled into this build, each with the devices it sees (``{"cpu": [...]}``)."""
    return dict(_osprey.backends())
