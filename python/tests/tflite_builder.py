"""Writes small .tflite models for the tests, through Python code that flatc generates from
schema/tflite.fbs into a temporary directory (the schema is the one Osprey's reader uses)."""
from __future__ import annotations

import atexit
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Sequence

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA = os.path.join(ROOT, "schema", "tflite.fbs")

_TENSOR_TYPES = {np.dtype(np.float32): 0, np.dtype(np.float16): 1, np.dtype(np.int32): 2, np.dtype(np.uint8): 3,
                 np.dtype(np.int64): 4, np.dtype(np.int16): 7, np.dtype(np.bool_): 6, np.dtype(np.int8): 9}


def generated_module_dir() -> Optional[str]:
    """Generates the Python schema code once per process; None when flatc is missing."""
    if hasattr(generated_module_dir, "dir"):
        return generated_module_dir.dir
    flatc = shutil.which("flatc")
    if not flatc:
        generated_module_dir.dir = None
        return None
    out = tempfile.mkdtemp(prefix="tflite_schema_")
    atexit.register(shutil.rmtree, out, True)
    subprocess.run([flatc, "--python", "-o", out, SCHEMA], check=True)
    sys.path.insert(0, out)
    generated_module_dir.dir = out
    return out


def _table(name: str):
    return importlib.import_module("tflite." + name)


def _camel(field: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in field.split("_"))


class ModelBuilder:
    """Tensors, buffers and operators of one subgraph; `build()` returns the file's bytes."""

    def __init__(self) -> None:
        self.tensors: List[dict] = []
        self.buffers: List[bytes] = [b""]
        self.operators: List[tuple] = []
        self.opcodes: List[tuple] = []
        self.inputs: List[int] = []
        self.outputs: List[int] = []
        self.signature: Optional[tuple] = None
        self.subgraphs: List["ModelBuilder"] = []

    def subgraph(self) -> "ModelBuilder":
        """Another subgraph (index len(subgraphs) after the call) sharing this model's buffers and
        operator codes, for WHILE and IF bodies."""
        sub = ModelBuilder()
        sub.buffers, sub.opcodes = self.buffers, self.opcodes
        self.subgraphs.append(sub)
        return sub

    def tensor(self, shape: Sequence[int], dtype=np.float32, name: Optional[str] = None, buffer: int = 0,
               quantization: Optional[dict] = None) -> int:
        self.tensors.append(dict(shape=list(shape), type=_TENSOR_TYPES[np.dtype(dtype)], buffer=buffer,
                                 name=name or "t%d" % len(self.tensors), quantization=quantization))
        return len(self.tensors) - 1

    def variable(self, shape: Sequence[int], dtype=np.float32, name: Optional[str] = None) -> int:
        """A state tensor an op keeps between invocations (TFLite's is_variable)."""
        t = self.tensor(shape, dtype, name)
        self.tensors[t]["variable"] = True
        return t

    def input(self, shape: Sequence[int], dtype=np.float32, name: Optional[str] = None) -> int:
        t = self.tensor(shape, dtype, name or "input%d" % len(self.inputs))
        self.inputs.append(t)
        return t

    def const(self, array, dtype=None, name: Optional[str] = None) -> int:
        array = np.ascontiguousarray(np.asarray(array, dtype=dtype))
        self.buffers.append(array.tobytes())
        return self.tensor(array.shape, array.dtype, name or "const%d" % len(self.tensors), len(self.buffers) - 1)

    def sparse_const(self, array, formats: str, block_map: Sequence[int] = (), block_sizes: Sequence[int] = (),
                     name: Optional[str] = None) -> int:
        """A constant stored as TFLite sparsity: `formats` has one letter per traversal level
        (the dimensions, then the blocks), D dense or S CSR; the order is the natural one."""
        array = np.ascontiguousarray(array)
        sparsity, values = encode_sparse(array, formats, list(block_map), list(block_sizes))
        self.buffers.append(np.asarray(values, array.dtype).tobytes())
        t = self.tensor(array.shape, array.dtype, name or "sparse%d" % len(self.tensors), len(self.buffers) - 1)
        self.tensors[t]["sparsity"] = sparsity
        return t

    def op(self, code: str, inputs: Sequence[int], outputs: Sequence[int], options: Optional[str] = None,
           custom_code: Optional[str] = None, custom_options: bytes = b"", version: int = 1, **fields) -> None:
        builtin = getattr(_table("BuiltinOperator").BuiltinOperator, code)
        key = (builtin, custom_code, version)
        if key not in self.opcodes:
            self.opcodes.append(key)
        fields = dict(fields, _custom_options=custom_options) if custom_options else fields
        self.operators.append((self.opcodes.index(key), list(inputs), list(outputs), options, fields))

    def output(self, t: int) -> int:
        self.outputs.append(t)
        return t

    @staticmethod
    def _sparsity(b, int_vector, sparsity):
        levels = []
        for fmt, size, segments, indices in sparsity["levels"]:
            D = _table("DimensionMetadata")
            vectors = []
            for values in (segments, indices):
                if values is None:
                    vectors.append(None)
                    continue
                V = _table("Int32Vector")
                vec = int_vector(V.StartValuesVector, values)
                V.Start(b)
                V.AddValues(b, vec)
                vectors.append(V.End(b))
            D.Start(b)
            D.AddFormat(b, fmt)
            D.AddDenseSize(b, size)
            if vectors[0] is not None:
                union = _table("SparseIndexVector").SparseIndexVector.Int32Vector
                D.AddArraySegmentsType(b, union)
                D.AddArraySegments(b, vectors[0])
                D.AddArrayIndicesType(b, union)
                D.AddArrayIndices(b, vectors[1])
            levels.append(D.End(b))
        P = _table("SparsityParameters")
        order = int_vector(P.StartTraversalOrderVector, sparsity["traversal_order"])
        block_map = int_vector(P.StartBlockMapVector, sparsity["block_map"]) if sparsity["block_map"] else None
        P.StartDimMetadataVector(b, len(levels))
        for level in reversed(levels):
            b.PrependUOffsetTRelative(level)
        metadata = b.EndVector()
        P.Start(b)
        P.AddTraversalOrder(b, order)
        if block_map is not None:
            P.AddBlockMap(b, block_map)
        P.AddDimMetadata(b, metadata)
        return P.End(b)

    def build(self) -> bytes:
        import flatbuffers
        b = flatbuffers.Builder(1024)

        def int_vector(start, values, prepend="PrependInt32"):
            start(b, len(values))
            for v in reversed(values):
                getattr(b, prepend)(v)
            return b.EndVector()

        def table(name, fields):
            module = _table(name)
            offsets = {}
            for field, value in fields.items():
                if isinstance(value, (list, tuple)):
                    offsets[field] = int_vector(getattr(module, "Start%sVector" % _camel(field)), value)
            module.Start(b)
            for field, value in fields.items():
                getattr(module, "Add" + _camel(field))(b, offsets.get(field, value))
            return module.End(b)

        buffers = []
        for data in self.buffers:
            vec = None
            if data:
                b.StartVector(1, len(data), 16)
                b.head = b.head - len(data)
                b.Bytes[b.head:b.head + len(data)] = data
                vec = b.EndVector()
            Buffer = _table("Buffer")
            Buffer.Start(b)
            if vec is not None:
                Buffer.AddData(b, vec)
            buffers.append(Buffer.End(b))

        def offsets_vector(start, items):
            start(b, len(items))
            for item in reversed(items):
                b.PrependUOffsetTRelative(item)
            return b.EndVector()

        def subgraph(g):
            tensors = []
            for t in g.tensors:
                name = b.CreateString(t["name"])
                shape = int_vector(_table("Tensor").StartShapeVector, t["shape"])
                quant = None
                if t["quantization"]:
                    q = t["quantization"]
                    Q = _table("QuantizationParameters")
                    scale = int_vector(Q.StartScaleVector, q["scale"], "PrependFloat32")
                    zero = int_vector(Q.StartZeroPointVector, q["zero_point"], "PrependInt64")
                    Q.Start(b)
                    Q.AddScale(b, scale)
                    Q.AddZeroPoint(b, zero)
                    Q.AddQuantizedDimension(b, q.get("quantized_dimension", 0))
                    quant = Q.End(b)
                sparsity = g._sparsity(b, int_vector, t["sparsity"]) if t.get("sparsity") else None
                T = _table("Tensor")
                T.Start(b)
                T.AddShape(b, shape)
                T.AddType(b, t["type"])
                T.AddBuffer(b, t["buffer"])
                T.AddName(b, name)
                if quant is not None:
                    T.AddQuantization(b, quant)
                if sparsity is not None:
                    T.AddSparsity(b, sparsity)
                if t.get("variable"):
                    T.AddIsVariable(b, True)
                tensors.append(T.End(b))
            operators = []
            for opcode, ins, outs, options, fields in g.operators:
                fields = dict(fields)
                custom = fields.pop("_custom_options", b"")
                opt = table(options, fields) if options else None
                O = _table("Operator")
                in_vec = int_vector(O.StartInputsVector, ins)
                out_vec = int_vector(O.StartOutputsVector, outs)
                custom_vec = b.CreateByteVector(custom) if custom else None
                O.Start(b)
                if custom_vec is not None:
                    O.AddCustomOptions(b, custom_vec)
                O.AddOpcodeIndex(b, opcode)
                O.AddInputs(b, in_vec)
                O.AddOutputs(b, out_vec)
                if opt is not None:
                    O.AddBuiltinOptionsType(b, getattr(_table("BuiltinOptions").BuiltinOptions, options))
                    O.AddBuiltinOptions(b, opt)
                operators.append(O.End(b))

            S = _table("SubGraph")
            tensor_vec = offsets_vector(S.StartTensorsVector, tensors)
            op_vec = offsets_vector(S.StartOperatorsVector, operators)
            in_vec = int_vector(S.StartInputsVector, g.inputs)
            out_vec = int_vector(S.StartOutputsVector, g.outputs)
            S.Start(b)
            S.AddTensors(b, tensor_vec)
            S.AddInputs(b, in_vec)
            S.AddOutputs(b, out_vec)
            S.AddOperators(b, op_vec)
            return S.End(b)

        subgraphs = [subgraph(g) for g in [self] + self.subgraphs]
        opcodes = []
        for builtin, custom, version in self.opcodes:
            custom_off = b.CreateString(custom) if custom else None
            C = _table("OperatorCode")
            C.Start(b)
            C.AddDeprecatedBuiltinCode(b, min(builtin, 127))
            C.AddBuiltinCode(b, builtin)
            C.AddVersion(b, version)
            if custom_off is not None:
                C.AddCustomCode(b, custom_off)
            opcodes.append(C.End(b))

        sigs = None
        if self.signature:
            M = _table("TensorMap")

            def maps(pairs):
                made = []
                for name, index in pairs:
                    n = b.CreateString(name)
                    M.Start(b)
                    M.AddName(b, n)
                    M.AddTensorIndex(b, index)
                    made.append(M.End(b))
                return made

            D = _table("SignatureDef")
            ins_m = offsets_vector(D.StartInputsVector, maps(self.signature[0]))
            outs_m = offsets_vector(D.StartOutputsVector, maps(self.signature[1]))
            key = b.CreateString("serving_default")
            D.Start(b)
            D.AddInputs(b, ins_m)
            D.AddOutputs(b, outs_m)
            D.AddSignatureKey(b, key)
            sigs = offsets_vector(_table("Model").StartSignatureDefsVector, [D.End(b)])
        Mo = _table("Model")
        codes_vec = offsets_vector(Mo.StartOperatorCodesVector, opcodes)
        sub_vec = offsets_vector(Mo.StartSubgraphsVector, subgraphs)
        buf_vec = offsets_vector(Mo.StartBuffersVector, buffers)
        desc = b.CreateString("osprey test model")
        Mo.Start(b)
        Mo.AddVersion(b, 3)
        Mo.AddOperatorCodes(b, codes_vec)
        Mo.AddSubgraphs(b, sub_vec)
        Mo.AddDescription(b, desc)
        Mo.AddBuffers(b, buf_vec)
        if sigs is not None:
            Mo.AddSignatureDefs(b, sigs)
        b.Finish(Mo.End(b), file_identifier=b"TFL3")
        return bytes(b.Output())


def encode_sparse(array, formats: str, block_map: List[int], block_sizes: List[int]):
    """TFLite's sparse encoding of `array` (as its converter writes it): a CSR level keeps the
    indices whose subtree holds a nonzero; dense levels keep every element, zeros included."""
    import itertools
    rank = array.ndim
    sizes = list(array.shape)
    for d, size in zip(block_map, block_sizes):
        sizes[d] //= size
    sizes += list(block_sizes)
    assert len(formats) == len(sizes)

    def element(position):
        index = list(position[:rank])
        for j, d in enumerate(block_map):
            index[d] = index[d] * block_sizes[j] + position[rank + j]
        return array[tuple(index)]

    def any_nonzero(position):
        rest = [range(n) for n in sizes[len(position):]]
        return any(element(list(position) + list(tail)) != 0 for tail in itertools.product(*rest))

    segments = [[0] for _ in sizes]
    indices = [[] for _ in sizes]
    values = []

    def walk(position):
        level = len(position)
        if level == len(sizes):
            values.append(element(position))
            return
        for i in range(sizes[level]):
            if formats[level] == "D" or any_nonzero(position + [i]):
                if formats[level] == "S":
                    indices[level].append(i)
                walk(position + [i])
        if formats[level] == "S":
            segments[level].append(len(indices[level]))

    walk([])
    levels = [(0, n, None, None) if f == "D" else (1, 0, segments[i], indices[i])
              for i, (f, n) in enumerate(zip(formats, sizes))]
    return dict(traversal_order=list(range(len(sizes))), block_map=list(block_map), levels=levels), values
