"""Caffe models written from PyTorch modules with known weights, for test_caffe_models.py.

The prototxt and the caffemodel are written through protobuf classes made at test time from
caffe.proto (beside this file): protoc compiles it to a descriptor set, and google.protobuf's
descriptor pool and message factory make the classes, so no generated code has to match the
installed protobuf runtime. A `Twin` runs each PyTorch module on the running tensors while it
writes the same computation as Caffe layers; the modules' outputs are the reference.

Tensors cross between numpy and torch through Python lists: Debian's torch is built against
numpy 1.x and a test venv may hold numpy 2.x, and the tensors here are small.
"""
from __future__ import annotations

import math
import os
import shutil
import subprocess
from types import SimpleNamespace

import numpy as np

PROTO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "caffe.proto")


def missing_tools():
    """Why the generator cannot run here (a reason to skip with), or None."""
    if shutil.which("protoc") is None:
        return "protoc is not installed (Debian: apt-get install protobuf-compiler; scripts/setup.sh --tests)"
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        return "the protobuf Python package is not installed (pip install protobuf)"
    try:
        import torch  # noqa: F401
    except ImportError:
        return "PyTorch is not importable (Debian's python3-torch; a venv needs --system-site-packages)"
    return None


def load_caffe_pb(workdir):
    """caffe.proto's message classes, by name (pb.NetParameter, pb.V1LayerParameter, ...)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    out = os.path.join(str(workdir), "caffe.desc")
    subprocess.run(["protoc", "--descriptor_set_out=" + out, "--include_imports", "-I" + os.path.dirname(PROTO), PROTO],
                   check=True, capture_output=True)
    files = descriptor_pb2.FileDescriptorSet.FromString(open(out, "rb").read())
    pool = descriptor_pool.DescriptorPool()
    for f in files.file:
        pool.Add(f)
    get = getattr(message_factory, "GetMessageClass", None)  # protobuf >= 4.22; GetPrototype before
    if get is None:
        get = message_factory.MessageFactory(pool).GetPrototype
    names = pool.FindFileByName("caffe.proto").message_types_by_name
    return SimpleNamespace(**{name: get(d) for name, d in names.items()})


def to_torch(a):
    import torch
    a = np.asarray(a, dtype=np.float32)
    return torch.tensor(a.reshape(-1).tolist(), dtype=torch.float32).reshape(a.shape)


def to_numpy(t):
    return np.array(t.detach().reshape(-1).tolist(), dtype=np.float32).reshape(tuple(t.shape))


def seed_module(module, rng):
    """Known weights: every parameter and buffer drawn from `rng`, weights scaled by 1 / sqrt(fan-in)
    so activations stay near 1 through a net (softmax scores do not saturate into ties), BatchNorm
    variances positive."""
    import torch
    with torch.no_grad():
        for name, p in list(module.named_parameters()) + list(module.named_buffers()):
            if p.dtype != torch.float32:
                continue
            fan_in = int(np.prod(p.shape[1:])) if p.dim() > 1 else 4
            v = rng.standard_normal(tuple(p.shape)) / math.sqrt(fan_in)
            if name.endswith("running_var"):
                v = rng.uniform(0.5, 1.5, tuple(p.shape))
            p.copy_(to_torch(v))
    return module.eval()


class Twin:
    """Runs torch modules on named blobs while writing the same layers into a Caffe net.

    Each method takes bottom blob names and a top name, computes the top with PyTorch, and adds
    the layer (its parameters to the prototxt, its blobs to the caffemodel). `legacy` writes
    V1LayerParameter `layers` with the enum types instead."""

    V1 = {"Convolution": "CONVOLUTION", "ReLU": "RELU", "Pooling": "POOLING", "InnerProduct": "INNER_PRODUCT",
          "Softmax": "SOFTMAX", "LRN": "LRN", "Concat": "CONCAT", "Dropout": "DROPOUT", "Eltwise": "ELTWISE"}

    def __init__(self, pb, rng, name, legacy=False):
        self.pb, self.rng, self.legacy = pb, rng, legacy
        self.net = pb.NetParameter(name=name)
        self.weights = pb.NetParameter(name=name)
        self.blobs = {}
        self.inputs = {}

    def input(self, name, shape):
        x = self.rng.standard_normal(shape).astype(np.float32)
        self.net.input.append(name)
        if self.legacy:
            self.net.input_dim.extend(shape)
        else:
            self.net.input_shape.add().dim.extend(shape)
        self.blobs[name] = to_torch(x)
        self.inputs[name] = x
        return name

    def layer(self, type_, name, bottoms, tops, params=None, blobs=()):
        """Adds one layer: params {"convolution_param": {field: value}}, blobs numpy arrays."""
        group = self.net.layers if self.legacy else self.net.layer
        for target in (group, self.weights.layers if self.legacy else self.weights.layer):
            layer = target.add()
            layer.name = name
            if self.legacy:
                types = self.pb.V1LayerParameter.DESCRIPTOR.enum_types_by_name["LayerType"]
                layer.type = types.values_by_name[self.V1[type_]].number
            else:
                layer.type = type_
            layer.bottom.extend(bottoms)
            layer.top.extend(tops)
            for field, values in (params or {}).items():
                fill(getattr(layer, field), values)
            if target is not group:
                for b in blobs:
                    proto = layer.blobs.add()
                    b = np.asarray(b, dtype=np.float32)
                    if self.legacy:  # the 4-D num/channels/height/width form
                        shape = (1,) * (4 - b.ndim) + b.shape
                        proto.num, proto.channels, proto.height, proto.width = shape
                    else:
                        proto.shape.dim.extend(b.shape)
                    proto.data.extend(b.reshape(-1).tolist())

    def run(self, module, bottom, top, type_, params, blobs):
        import torch
        with torch.no_grad():
            self.blobs[top] = module(self.blobs[bottom])
        self.layer(type_, top if top != bottom else top + "_" + type_.lower(), [bottom], [top], params, blobs)
        return top

    # ---- layers from torch modules ----

    def conv(self, bottom, top, cin, cout, k, stride=1, pad=0, group=1, dilation=1, bias=True, type_="Convolution"):
        import torch
        m = seed_module(torch.nn.Conv2d(cin, cout, k, stride, pad, dilation, group, bias), self.rng)
        p = {"num_output": cout, "kernel_size": [k], "stride": [stride], "pad": [pad], "bias_term": bias}
        if group != 1 and type_ != "DepthwiseConvolution":
            p["group"] = group
        if dilation != 1:
            p["dilation"] = [dilation]
        blobs = [to_numpy(m.weight)] + ([to_numpy(m.bias)] if bias else [])
        return self.run(m, bottom, top, type_, {"convolution_param": p}, blobs)

    def deconv(self, bottom, top, cin, cout, k, stride, pad=0, bias=False):
        import torch
        m = seed_module(torch.nn.ConvTranspose2d(cin, cout, k, stride, pad, bias=bias), self.rng)
        p = {"num_output": cout, "kernel_size": [k], "stride": [stride], "pad": [pad], "bias_term": bias}
        blobs = [to_numpy(m.weight)] + ([to_numpy(m.bias)] if bias else [])
        return self.run(m, bottom, top, "Deconvolution", {"convolution_param": p}, blobs)

    def bn_scale(self, bottom, top, c):
        """BatchNorm (moving averages stored times a factor, as Caffe saves them) + Scale."""
        import torch
        m = seed_module(torch.nn.BatchNorm2d(c), self.rng)
        factor = 2.0
        mean, var = to_numpy(m.running_mean) * factor, to_numpy(m.running_var) * factor
        with torch.no_grad():
            self.blobs[top] = m(self.blobs[bottom])
        self.layer("BatchNorm", top + "_bn", [bottom], [top], {"batch_norm_param": {"eps": m.eps}},
                   [mean, var, np.array([factor])])
        self.layer("Scale", top + "_scale", [top], [top], {"scale_param": {"bias_term": True}},
                   [to_numpy(m.weight), to_numpy(m.bias)])
        return top

    def relu(self, blob, slope=0.0):
        import torch
        m = torch.nn.LeakyReLU(slope) if slope else torch.nn.ReLU()
        return self.run(m, blob, blob, "ReLU", {"relu_param": {"negative_slope": slope}} if slope else None, ())

    def pool(self, bottom, top, kind, k, stride, pad=0):
        import torch
        if kind == "MAX":
            m = torch.nn.MaxPool2d(k, stride, pad, ceil_mode=True)
        else:  # Caffe divides by the window clipped to the padded input, as count_include_pad does
            m = torch.nn.AvgPool2d(k, stride, pad, ceil_mode=True, count_include_pad=True)
        p = {"pool": kind, "kernel_size": k, "stride": stride, "pad": pad}
        return self.run(m, bottom, top, "Pooling", {"pooling_param": p}, ())

    def global_pool(self, bottom, top, kind="AVE"):
        import torch
        m = torch.nn.AdaptiveAvgPool2d(1) if kind == "AVE" else torch.nn.AdaptiveMaxPool2d(1)
        return self.run(m, bottom, top, "Pooling", {"pooling_param": {"pool": kind, "global_pooling": True}}, ())

    def lrn(self, bottom, top, size, alpha, beta, k):
        import torch
        m = torch.nn.LocalResponseNorm(size, alpha, beta, k)  # Caffe's ACROSS_CHANNELS: alpha / size * sum
        p = {"local_size": size, "alpha": alpha, "beta": beta, "k": k}
        return self.run(m, bottom, top, "LRN", {"lrn_param": p}, ())

    def fc(self, bottom, top, cin, cout):
        import torch
        m = seed_module(torch.nn.Linear(cin, cout), self.rng)
        seq = torch.nn.Sequential(torch.nn.Flatten(1), m)
        w = to_numpy(m.weight)
        blobs = [w.reshape(1, 1, cout, cin) if self.legacy else w, to_numpy(m.bias)]
        return self.run(seq, bottom, top, "InnerProduct", {"inner_product_param": {"num_output": cout}}, blobs)

    def softmax(self, bottom, top, axis=1):
        import torch
        p = {"softmax_param": {"axis": axis}} if axis != 1 else None
        return self.run(torch.nn.Softmax(axis), bottom, top, "Softmax", p, ())

    def dropout(self, blob):
        import torch
        return self.run(torch.nn.Dropout(0.5).eval(), blob, blob, "Dropout", {"dropout_param": {"dropout_ratio": 0.5}}, ())

    # ---- layers on several blobs ----

    def concat(self, bottoms, top, axis=1):
        import torch
        self.blobs[top] = torch.cat([self.blobs[b] for b in bottoms], axis)
        self.layer("Concat", top, bottoms, [top], {"concat_param": {"axis": axis}} if axis != 1 else None)
        return top

    def eltwise_sum(self, bottoms, top):
        self.blobs[top] = sum(self.blobs[b] for b in bottoms)
        self.layer("Eltwise", top, bottoms, [top], {"eltwise_param": {"operation": "SUM"}})
        return top

    def crop(self, bottom, like, top, offset):
        h, w = self.blobs[like].shape[2:]
        self.blobs[top] = self.blobs[bottom][:, :, offset:offset + h, offset:offset + w]
        self.layer("Crop", top, [bottom, like], [top], {"crop_param": {"axis": 2, "offset": [offset]}})
        return top

    # ---- files ----

    def save(self, directory, stem):
        from google.protobuf import text_format
        proto = os.path.join(str(directory), stem + ".prototxt")
        model = os.path.join(str(directory), stem + ".caffemodel")
        with open(proto, "w") as f:
            f.write(text_format.MessageToString(self.net))
        with open(model, "wb") as f:
            f.write(self.weights.SerializeToString())
        return proto, model

    def value(self, blob):
        return to_numpy(self.blobs[blob])


def fill(message, values):
    """Sets a message's fields from a dict: lists extend repeated fields, dicts fill messages."""
    for key, v in values.items():
        field = message.DESCRIPTOR.fields_by_name[key]
        if isinstance(v, dict):
            fill(getattr(message, key), v)
        elif isinstance(v, (list, tuple)):
            getattr(message, key).extend(v)
        elif field.enum_type is not None and isinstance(v, str):
            setattr(message, key, field.enum_type.values_by_name[v].number)
        else:
            setattr(message, key, v)
