"""Writes Caffe models for the tests: a deploy prototxt (text) and a .caffemodel (the
NetParameter protobuf, encoded here by hand: no Caffe or protobuf package is needed)."""
from __future__ import annotations

import struct
from typing import Dict, List, Sequence

import numpy as np


def _varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def blob(array: np.ndarray) -> bytes:
    """A BlobProto with a BlobShape and packed float data."""
    a = np.asarray(array, dtype=np.float32)
    dims = b"".join(_varint(int(d)) for d in a.shape)
    return _field(7, _field(1, dims)) + _field(5, a.astype("<f4").tobytes())


def caffemodel(weights: Dict[str, Sequence[np.ndarray]]) -> bytes:
    """NetParameter with one LayerParameter (name, blobs) per entry."""
    out = b""
    for name, blobs in weights.items():
        layer = _field(1, name.encode()) + b"".join(_field(7, blob(b)) for b in blobs)
        out += _field(100, layer)
    return out


def save(directory, prototxt: str, weights: Dict[str, Sequence[np.ndarray]], stem: str = "net"):
    """Writes DIR/stem.prototxt and DIR/stem.caffemodel; returns their paths."""
    proto_path = directory / (stem + ".prototxt")
    model_path = directory / (stem + ".caffemodel")
    proto_path.write_text(prototxt)
    model_path.write_bytes(caffemodel(weights))
    return str(proto_path), str(model_path)
