#!/usr/bin/env python3
"""How much fp16 rounding in each convolution of make_models.py's ResNet-50 moves its output.

Runs on the CPU with PyTorch in fp32: BatchNorm folded into the convolutions as
Osprey's converter does, then for each convolution alone its input, folded weights, bias and
output rounded to fp16 (what fp16 storage with fp32 accumulation does to that layer), and the
max difference from the model's reference output printed beside the fp16 bound
2e-2 * max(1, max|ref|). Also: the input alone rounded, every layer rounded, and every layer
from the k-th on (the first k kept in fp32).

  bench/cuda/fp16_sensitivity.py --make-models ../shared/models/make_models.py --models-dir /tmp/models
"""
import argparse
import importlib.util

import numpy as np
import torch
import torch.nn.functional as F


def load_resnet50(make_models):
    spec = importlib.util.spec_from_file_location("make_models", make_models)
    mm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mm)
    for i, (name, ctor, shape) in enumerate(mm.model_list(12)):
        if name == "resnet50":
            torch.manual_seed(0)
            return mm.randomize(ctor().eval(), name, shape, i)
    raise SystemExit("make_models.py has no resnet50")


def folded(conv, bn):
    scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    return conv.weight * scale[:, None, None, None], bn.bias - bn.running_mean * scale


def forward(model, x, rounded):
    """ResNet-50 with BatchNorm folded; convolutions whose index is in `rounded` run in fp16 storage."""
    half = lambda t: t.half().float()
    index = [0]

    def conv(t, c, bn, relu, residual=None):
        w, b = folded(c, bn)
        if index[0] in rounded:
            t, w, b = half(t), half(w), half(b)
        y = F.conv2d(t, w, b, c.stride, c.padding, c.dilation, c.groups)
        if residual is not None:
            y = y + residual
        if relu:
            y = F.relu(y)
        y = half(y) if index[0] in rounded else y
        index[0] += 1
        return y

    names = []
    with torch.no_grad():
        t = F.max_pool2d(conv(x, model.conv1, model.bn1, True), 3, 2, 1)
        names.append("conv1")
        for li, layer in enumerate([model.layer1, model.layer2, model.layer3, model.layer4], 1):
            for bi, block in enumerate(layer):
                identity = t
                y = conv(t, block.conv1, block.bn1, True)
                y = conv(y, block.conv2, block.bn2, True)
                names += [f"layer{li}.{bi}.conv1", f"layer{li}.{bi}.conv2"]
                if block.downsample is not None:
                    identity = conv(t, block.downsample[0], block.downsample[1], False)
                    names.append(f"layer{li}.{bi}.downsample")
                t = conv(y, block.conv3, block.bn3, True, identity)
                names.append(f"layer{li}.{bi}.conv3")
        out = F.adaptive_avg_pool2d(t, 1).flatten(1) @ model.fc.weight.t() + model.fc.bias
    return out.numpy(), names


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--make-models", required=True)
    p.add_argument("--models-dir", default="/tmp/models", help="resnet50.input.npy and resnet50.ref.npy")
    a = p.parse_args()
    model = load_resnet50(a.make_models)
    x = torch.from_numpy(np.load(f"{a.models_dir}/resnet50.input.npy"))
    ref = np.load(f"{a.models_dir}/resnet50.ref.npy")
    bound = 0.02 * max(1.0, float(np.abs(ref).max()))
    exact, names = forward(model, x, set())
    print(f"fp32 folded vs reference: {np.abs(exact - ref).max():.2e}; fp16 bound {bound:.4f}")
    with torch.no_grad():
        print(f"input alone rounded: {np.abs(model(x.half().float()).numpy() - ref).max():.4f}")
    every = set(range(len(names)))
    print(f"every convolution rounded: {np.abs(forward(model, x, every)[0] - ref).max():.4f}")
    for k in (1, 4, 5, 8, 11, 14, 24):
        err = np.abs(forward(model, x, every - set(range(k)))[0] - ref).max()
        print(f"first {k:2d} in fp32, the rest rounded: {err:.4f}")
    for i, name in enumerate(names):
        print(f"{name:24s} alone rounded: {np.abs(forward(model, x, {i})[0] - ref).max():.4f}")


if __name__ == "__main__":
    main()
