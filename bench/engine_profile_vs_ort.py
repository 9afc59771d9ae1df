#!/usr/bin/env python3
"""Where a model's time goes in atvoss beside ONNX Runtime, node by node: ONNX Runtime's own
profiler (median of --runs runs per node; a fused node, named after its first or last node,
is mapped back to the atvoss step it starts from by walking the graph's producers) against `atvoss-run --profile` (the median per step), on
the same thread count. Prints both totals and the nodes where atvoss loses most.

Usage (the peers' environment, scripts/setup.sh):
  PYTHONPATH=build/python build/peers/bin/python bench/engine_profile_vs_ort.py MODEL.onnx
      [--plan PLAN.json] [--threads 1] [--runs 10] [--top 15] [--dim sequence_length=128 ...]
Named dims the model's inputs do not have are ignored; those not given are 1."""
import argparse
import collections
import json
import os
import re
import subprocess
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ort_node_us(path, threads, runs, dims):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    session = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feed = {}
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) else dims.get(d, 1) for d in i.shape]
        feed[i.name] = (rng.uniform(-1, 1, shape).astype(np.float32) if i.type == "tensor(float)"
                        else np.zeros(shape, np.int64))
    for _ in range(runs + 3):
        session.run(None, feed)
    per = collections.defaultdict(list)
    for e in json.load(open(session.end_profiling())):
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            per[e["name"][:-len("_kernel_time")]].append(e["dur"])
    us = collections.Counter()
    for name, times in per.items():
        us[re.sub(r"(\.(relu|bn))?_nchwc$", "", name)] += sorted(times)[len(times) // 2]
    return us


def atvoss_steps(path, plan, threads, runs, dims):
    cmd = [os.path.join(ROOT, "build", "bin", "atvoss-run"), path, "--threads", str(threads),
           "--profile", str(runs), "--json"] + (["--plan", plan] if plan else [])
    for name, value in dims.items():
        cmd += ["--dim", "%s=%d" % (name, value)]
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)["profile"]["steps"]


def mapped_to_steps(theirs, path, step_names):
    """ONNX Runtime's per-node times keyed by the atvoss step each fused node starts from: a name
    that is no step is walked up its first input's producers (BatchNormalization, then the Conv)."""
    nodes = {n.name: n for n in onnx.load(path, load_external_data=False).graph.node}
    producer = {o: n for n in nodes.values() for o in n.output}
    out = collections.Counter()
    for name, us in theirs.items():
        node, hops = nodes.get(name), 0
        while node is not None and node.name not in step_names and hops < 4:
            node, hops = producer.get(node.input[0]) if node.input else None, hops + 1
        out[node.name if node is not None and node.name in step_names else name] += us
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--plan")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--dim", action="append", default=[], help="NAME=VALUE, a named input dim")
    args = parser.parse_args()
    named = {d.dim_param for i in onnx.load(args.model, load_external_data=False).graph.input
             for d in i.type.tensor_type.shape.dim if d.dim_param}
    dims = {k: int(v) for k, v in (d.split("=", 1) for d in args.dim) if k in named}
    theirs = ort_node_us(args.model, args.threads, args.runs, dims)
    ours = atvoss_steps(args.model, args.plan, args.threads, args.runs, dims)
    theirs = mapped_to_steps(theirs, args.model, {s["node"] for s in ours})
    print("onnxruntime %s, %d thread(s): ort %.0f us in %d nodes, atvoss %.0f us in %d steps" % (
        ort.__version__, args.threads, sum(theirs.values()), len(theirs), sum(s["us"] for s in ours), len(ours)))
    rows = sorted(((s["us"] - theirs.get(s["node"], 0.0), s) for s in ours), key=lambda r: -r[0])
    print("%9s %9s %9s  %-28s %s" % ("lost us", "atvoss", "ort", "node", "what"))
    for lost, s in rows[:args.top]:
        what = s.get("workload", {}).get("dims") or s.get("op") or s["kind"]
        print("%9.1f %9.1f %9s  %-28s %s %s" % (lost, s["us"], "%.1f" % theirs[s["node"]] if s["node"] in theirs
                                                 else "-", s["node"][:28], s["kind"], what))


if __name__ == "__main__":
    main()
