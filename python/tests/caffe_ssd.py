"""numpy implementations of SSD's PriorBox and DetectionOutput as Caffe's SSD fork defines them
(prior_box_layer.cpp, detection_output_layer.cpp and bbox_util.cpp of weiliu89/caffe, CPU path),
the reference of test_caffe_models.py. Boxes are normalized [xmin, ymin, xmax, ymax]; the IoU is
Caffe's JaccardOverlap for normalized boxes (no +1 on sides); boxes decode in float32 as Caffe's do."""
from __future__ import annotations

import math

import numpy as np


def prior_box(fh, fw, ih, iw, min_sizes, max_sizes=(), ratios=(), flip=True, clip=False, variance=(0.1,),
              img=None, step=None, offset=0.5):
    img_h, img_w = img or (ih, iw)
    step_h, step_w = step or (img_h / fh, img_w / fw)
    ars = [1.0]
    for r in ratios:
        if any(abs(r - a) < 1e-6 for a in ars):
            continue
        ars.append(r)
        if flip:
            ars.append(1.0 / r)
    boxes = []
    for h in range(fh):
        for w in range(fw):
            cx, cy = (w + offset) * step_w, (h + offset) * step_h
            for i, m in enumerate(min_sizes):
                sizes = [(m, m)]
                if max_sizes:
                    s = math.sqrt(m * max_sizes[i])
                    sizes.append((s, s))
                sizes += [(m * math.sqrt(a), m / math.sqrt(a)) for a in ars if abs(a - 1) >= 1e-6]
                for bw, bh in sizes:
                    boxes.append([(cx - bw / 2) / img_w, (cy - bh / 2) / img_h, (cx + bw / 2) / img_w,
                                  (cy + bh / 2) / img_h])
    boxes = np.array(boxes, dtype=np.float32)
    if clip:
        boxes = np.clip(boxes, 0, 1)
    var = np.tile(np.array(list(variance) * (4 if len(variance) == 1 else 1), np.float32), (len(boxes), 1))
    return np.stack([boxes.reshape(-1), var.reshape(-1)])[None]


def _size(b):
    return 0.0 if b[2] < b[0] or b[3] < b[1] else float(np.float32(b[2] - b[0]) * np.float32(b[3] - b[1]))


def _jaccard(a, b):
    if b[0] > a[2] or b[2] < a[0] or b[1] > a[3] or b[3] < a[1]:
        return 0.0
    w, h = min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])
    if not (w > 0 and h > 0):
        return 0.0
    inter = w * h
    return inter / (_size(a) + _size(b) - inter)


def _decode(prior, var, d, code, in_target):
    v = np.ones(4, np.float32) if in_target else var
    if code == "CORNER":
        return prior + v * d
    pw, ph = prior[2] - prior[0], prior[3] - prior[1]
    if code == "CORNER_SIZE":
        return prior + v * d * np.array([pw, ph, pw, ph], np.float32)
    cx, cy = v[0] * d[0] * pw + (prior[0] + prior[2]) / 2, v[1] * d[1] * ph + (prior[1] + prior[3]) / 2
    w, h = np.exp(v[2] * d[2]) * pw, np.exp(v[3] * d[3]) * ph
    return np.array([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], np.float32)


def detection_output(loc, conf, prior, num_classes, share_location=True, background=0, nms_threshold=0.3,
                     top_k=-1, eta=1.0, keep_top_k=-1, confidence=None, code="CENTER_SIZE", in_target=False):
    n, priors = loc.shape[0], prior.shape[2] // 4
    lc = 1 if share_location else num_classes
    loc = loc.reshape(n, priors, lc, 4)
    conf = conf.reshape(n, priors, num_classes)
    pb, pv = prior[0, 0].reshape(priors, 4), prior[0, 1].reshape(priors, 4)
    threshold = -np.finfo(np.float32).max if confidence is None else confidence
    rows = []
    for i in range(n):
        boxes = [[_decode(pb[p], pv[p], loc[i, p, c], code, in_target) for p in range(priors)] for c in range(lc)]
        found = []  # (score, label, prior) by label, then NMS order
        for c in range(num_classes):
            if c == background:
                continue
            bs, scores = boxes[0 if share_location else c], conf[i, :, c]
            order = [p for p in np.argsort(-scores, kind="stable") if scores[p] > threshold]
            if top_k > -1:
                order = order[:top_k]
            kept, adaptive = [], nms_threshold
            for p in order:
                if all(_jaccard(bs[p], bs[k]) <= adaptive for k in kept):
                    kept.append(p)
                    if eta < 1 and adaptive > 0.5:
                        adaptive *= eta
            found += [(scores[p], c, p) for p in kept]
        if keep_top_k > -1 and len(found) > keep_top_k:
            best = sorted(found, key=lambda f: -f[0])[:keep_top_k]
            found = sorted(best, key=lambda f: f[1])
        for score, c, p in found:
            rows.append([i, c, score, *boxes[0 if share_location else c][p]])
    if not rows:
        rows = [[i, -1, -1, -1, -1, -1, -1] for i in range(n)]
    return np.array(rows, np.float32).reshape(1, 1, -1, 7)
