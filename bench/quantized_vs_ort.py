"""Quantized models through atvoss and ONNX Runtime (docs/decisions/engine-ninth-cut.md).

Each float model given is quantized here by onnxruntime.quantization, as its users quantize:
quantize_static in QDQ form (per-channel int8 weights, uint8 activations) and in operator form
(QuantFormat.QOperator), calibrated on two random inputs of the seed. For each, prints the output's
largest difference |a - r| / max(|r|, 1) of atvoss against ONNX Runtime with its graph
optimizations on (its int8 kernels) and off (the float ops the file writes), and of those two
against each other, in steps of the output's quantization, and the two speeds (medians of
--runs, interleaved in blocks as bench/engine_vs_ort.py times them, with its thread settings)
with their ratio.

Run: PYTHONPATH=build/python build/peers/bin/python bench/quantized_vs_ort.py MODEL.onnx ...
"""
import argparse
import os
import sys
import tempfile

import engine_vs_ort  # noqa: F401 (first: its thread settings are read when libgomp loads)
import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

import atvoss.runtime as rt


def feeds_for(path, seed, count):
    model = onnx.load(path)
    inp = model.graph.input[0]
    shape = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
    rng = np.random.default_rng(seed)
    return [{inp.name: rng.uniform(-1, 1, shape).astype(np.float32)} for _ in range(count)]


class Reader(CalibrationDataReader):
    def __init__(self, feeds):
        self.feeds = iter(feeds)

    def get_next(self):
        return next(self.feeds, None)


def difference(a, r):
    return float(np.max(np.abs(a - r) / np.maximum(np.abs(r), 1)))


def report(name, path, feeds, threads, runs):
    model = rt.Model(path, threads=threads)
    inputs = [feeds[n] for n, _ in model.inputs]
    ours = model.run(inputs)[0]
    on, off = (engine_vs_ort.ort_session(path, threads, False, optimized) for optimized in (True, False))
    theirs_on, theirs_off = on.run(None, feeds)[0], off.run(None, feeds)[0]
    levels = np.unique(theirs_off.ravel())
    step = float(np.min(np.diff(levels))) if levels.size > 1 else 0.0
    ours_us, ort_us = engine_vs_ort.interleaved_medians(lambda: model.run(inputs), lambda: on.run(None, feeds), runs, 5)
    print("%-24s %9.3g %9.3g %9.3g %8.3g %10.0f %10.0f %6.2fx" % (
        name, difference(ours, theirs_on), difference(ours, theirs_off), difference(theirs_on, theirs_off), step,
        ours_us, ort_us, ort_us / ours_us))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print("onnxruntime %s, %d threads; differences |a - r| / max(|r|, 1)" % (ort.__version__, args.threads))
    print("%-24s %9s %9s %9s %8s %10s %10s %7s" % ("model", "vs ort-on", "vs ort-off", "on vs off", "step",
                                                   "atvoss us", "ort us", "ratio"))
    with tempfile.TemporaryDirectory() as tmp:
        for path in args.models:
            base = os.path.splitext(os.path.basename(path))[0]
            feeds = feeds_for(path, args.seed, 3)
            for form, fmt in (("qdq", QuantFormat.QDQ), ("qop", QuantFormat.QOperator)):
                out = os.path.join(tmp, "%s-%s.onnx" % (base, form))
                try:
                    quantize_static(path, out, Reader(feeds[:2]), quant_format=fmt, per_channel=form == "qdq",
                                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
                    report("%s %s" % (base, form), out, feeds[2], args.threads, args.runs)
                except Exception as e:  # reported, never hidden
                    print("%-24s failed: %s" % ("%s %s" % (base, form), e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
