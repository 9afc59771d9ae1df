"""The engine (atvoss.runtime.Model, docs/engine.md) over ONNX's own backend node tests, the
models and reference outputs the onnx package ships (onnx/backend/test/data/node): each test
passes (every output within 1e-4), is refused at load (an op, attribute or dtype the engine
does not take, named in the message), fails at run (an input the engine does not take), or is
wrong. A wrong one is also run through ONNX Runtime: where ONNX Runtime gives atvoss's answer,
the two differ from the reference together (the project checks against ONNX Runtime).

--constants feeds every input after the first as an initializer, as exporters write a Resize's
scales or a Pad's pads; the tests feed them at run time.

    PYTHONPATH=build/python build/peers/bin/python bench/onnx_node_conformance.py [--constants] [--match 'test_resize*']
"""
import argparse
import collections
import glob
import os
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

import atvoss.runtime as rt


def tensors(folder, kind):
    files = sorted(glob.glob(os.path.join(folder, kind + "_*.pb")), key=lambda p: int(p.rsplit("_", 1)[1][:-3]))
    return [numpy_helper.to_array(onnx.load_tensor(f)) for f in files]


def with_constants(model_path, inputs, out_path):
    """The model with every input after the first an initializer holding the test's value."""
    m = onnx.load(model_path)
    keep = [v for k, v in enumerate(m.graph.input) if k == 0 or k >= len(inputs)]
    for k, v in enumerate(m.graph.input):
        if 0 < k < len(inputs):
            m.graph.initializer.append(numpy_helper.from_array(inputs[k], v.name))
    del m.graph.input[:]
    m.graph.input.extend(keep)
    onnx.save(m, out_path)
    return out_path, inputs[:1]


def mismatch(got, want):
    if len(got) != len(want):
        return "%d outputs, expected %d" % (len(got), len(want))
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return "output %d of shape %s, expected %s" % (i, g.shape, w.shape)
        gf, wf = g.astype(np.float64), w.astype(np.float64)
        ok = np.array_equal(gf != 0, w) if w.dtype == np.bool_ else np.allclose(gf, wf, rtol=1e-4, atol=1e-4,
                                                                                 equal_nan=True)
        if not ok:
            return "output %d off by up to %.3g" % (i, float(np.nanmax(np.abs(gf - wf))))
    return None


def ort_agrees(model_path, inputs, got):
    import onnxruntime as ort
    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    theirs = session.run(None, dict(zip(names, inputs)))
    return mismatch(got, theirs) is None


def run_one(folder, constants, scratch):
    model = os.path.join(folder, "model.onnx")
    data = os.path.join(folder, "test_data_set_0")
    inputs, want = tensors(data, "input"), tensors(data, "output")
    if constants:
        model, inputs = with_constants(model, inputs, os.path.join(scratch, "model.onnx"))
    try:
        m = rt.Model(model, threads=1)
    except Exception as e:  # noqa: BLE001 - a refusal is a result here
        return "refused", str(e)
    try:
        got = m.run(inputs)
    except Exception as e:  # noqa: BLE001
        return "run-error", str(e)
    why = mismatch(got, want)
    if why is None:
        return "pass", ""
    return "wrong", why + ("; ONNX Runtime gives atvoss's answer" if ort_agrees(model, inputs, got) else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--constants", action="store_true", help="inputs after the first as initializers")
    ap.add_argument("--match", default="test_*", help="test folders to run (a glob)")
    ap.add_argument("--verbose", action="store_true", help="a line for every test, not only the wrong ones")
    args = ap.parse_args()
    root = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    counts = collections.Counter()
    with tempfile.TemporaryDirectory() as scratch:
        for folder in sorted(glob.glob(os.path.join(root, args.match))):
            name = os.path.basename(folder)
            try:
                verdict, why = run_one(folder, args.constants, scratch)
            except Exception:  # noqa: BLE001 - test data this script cannot read (sequences, optionals)
                continue
            counts[verdict] += 1
            if args.verbose or verdict == "wrong":
                print("%-60s %-9s %s" % (name, verdict, why[:150]))
    print("onnx %s node tests%s: %s" % (onnx.__version__, " (inputs after the first as constants)"
                                        if args.constants else "", ", ".join("%s %d" % kv for kv in
                                                                             sorted(counts.items()))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
