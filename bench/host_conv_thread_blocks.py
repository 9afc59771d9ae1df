#!/usr/bin/env python3
"""The pixel blocks a host conv2d's default takes on two threads (host/conv_space.cpp,
conv_on_threads), against every block height its space offers: for each shape, the engine's
pick (a one-conv ONNX model through atvoss-run, which runs the default on the model's threads)
and each tile_h with the default's other knobs, on two threads, timed by atvoss.measure (3
rounds of 3 repeats, interleaved, medians). Prints the times, the pick and its time over the
fastest. Shapes: dev (SqueezeNet 1.1's convs, where the rule was changed) or heldout (ResNet-50's,
Inception v1's and DenseNet-121's convs on outputs of 28 x 28 and less, ImageNet at 224).

Usage (the peers' environment, for onnx):
  PYTHONPATH=build/python build/peers/bin/python bench/host_conv_thread_blocks.py [--set dev|heldout]"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper

import atvoss
from atvoss import _atvoss

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (C, H, K, R, stride)
DEV = [(3, 224, 64, 3, 2), (64, 55, 16, 1, 1), (16, 55, 64, 1, 1), (16, 55, 64, 3, 1), (128, 55, 16, 1, 1),
       (128, 27, 32, 1, 1), (32, 27, 128, 1, 1), (32, 27, 128, 3, 1), (256, 27, 32, 1, 1), (256, 13, 48, 1, 1),
       (48, 13, 192, 1, 1), (48, 13, 192, 3, 1), (384, 13, 48, 1, 1), (384, 13, 64, 1, 1), (64, 13, 256, 1, 1),
       (64, 13, 256, 3, 1), (512, 13, 64, 1, 1), (512, 13, 1000, 1, 1)]
HELDOUT = [(128, 28, 512, 1, 1), (512, 28, 128, 1, 1), (128, 28, 128, 3, 1), (256, 14, 256, 3, 1),
           (1024, 14, 256, 1, 1), (256, 14, 1024, 1, 1), (512, 7, 2048, 1, 1), (2048, 7, 512, 1, 1),
           (512, 7, 512, 3, 1), (192, 28, 64, 1, 1), (96, 28, 128, 3, 1), (480, 14, 192, 1, 1),
           (832, 7, 384, 1, 1), (192, 7, 384, 3, 1), (512, 14, 128, 1, 1), (128, 14, 32, 3, 1),
           (1024, 7, 128, 1, 1), (128, 7, 32, 3, 1)]


def engine_pick(c, h, k, r, stride):
    """The schedule the engine runs the conv (with its bias and a ReLU) with on two threads."""
    pad = r // 2
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((k, c, r, r)) * 0.1).astype(np.float32), "w"),
             numpy_helper.from_array(np.zeros(k, np.float32), "b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[r, r], strides=[stride] * 2,
                              pads=[pad] * 4, name="conv"), helper.make_node("Relu", ["y"], ["z"])]
    graph = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", T.FLOAT, [1, c, h, h])],
                              [helper.make_tensor_value_info("z", T.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "conv.onnx")
        onnx.save(model, path)
        out = subprocess.run([os.path.join(ROOT, "build", "bin", "atvoss-run"), path, "--threads", "2", "--profile",
                              "1", "--json"], capture_output=True, text=True, check=True).stdout
    step = next(s for s in json.loads(out)["profile"]["steps"] if s["kind"] == "kernel")
    return step["workload"], step["schedule"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", choices=["dev", "heldout"], default="heldout")
    args = parser.parse_args()
    ratios = []
    for c, h, k, r, stride in DEV if args.set == "dev" else HELDOUT:
        w, pick = engine_pick(c, h, k, r, stride)
        default = json.loads(_atvoss.default_schedule(json.dumps(w), "host"))
        heights = sorted({v for v in (1, 4, 16, 64) if v <= max(h, 16)} | {pick["tile_h"]})
        candidates = [dict(default, threads=2, tile_h=v) for v in heights] + [pick]
        times = [[] for _ in candidates]
        for _ in range(3):
            for i, m in enumerate(atvoss.measure(w, "host", candidates, repeat=3)):
                times[i].append(m.time_us if m.status == "ok" else float("inf"))
        med = [statistics.median(t) for t in times]
        best = min(med[:-1])
        ratios.append(med[-1] / best)
        cells = "  ".join("h%-2d %8.1f" % (v, t) for v, t in zip(heights, med))
        print("C=%4d H=%3d K=%4d %dx%d s%d  %s  pick h%-2d %8.1f  %.2fx the fastest"
              % (c, h, k, r, r, stride, cells, pick["tile_h"], med[-1], med[-1] / best), flush=True)
    print("geomean %.3fx, worst %.2fx the fastest tile_h" % (float(np.exp(np.mean(np.log(ratios)))), max(ratios)))


if __name__ == "__main__":
    main()
