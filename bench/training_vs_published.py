#!/usr/bin/env python3
"""atvoss's simulated training steps beside published Ascend 910 training throughputs
(data/published-training/ascend910.json: each figure with its source, and whether it is a
calibration figure or held out). For each published model it runs one atvoss-tune job on
ascend910: the zoo model's training step at the published batch, mixed precision, the
published optimizer, the graph sunk to the device (as the published runs were), a data-parallel
block over the largest device count published. Prints, per published figure, atvoss's
throughput with the vendor-default schedules and with the tuned plan (the scaling table's
overlapped rows), each as a ratio to the published one, and the scaling efficiency beside the
published speedup. docs/calibration.md "Training throughput" is this script's output.

Usage: bench/training_vs_published.py [--build build] [--trials 400] [--seed 1]
"""
import argparse
import json
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PUBLISHED = os.path.join(ROOT, "data", "published-training", "ascend910.json")


def topology(devices):
    return "ascend910-server8" if devices <= 8 else "ascend910-server8-x%d" % ((devices + 7) // 8)


def run_job(tune, folder, model, batch, optimizer, devices, trials, seed):
    name = "%s-b%d" % (model, batch)
    spec = {"name": name, "target": "ascend910", "model": model, "mode": "training", "batch": batch,
            "optimizer": optimizer, "mixed_precision": True, "launch": "sunk", "trials": trials, "seed": seed,
            "parallel": {"devices": devices, "topology": topology(devices), "mode": "training"}}
    path = os.path.join(folder, name + ".json")
    with open(path, "w") as f:
        json.dump(spec, f)
    out = subprocess.run([tune, path, "--json", "--quiet"], cwd=folder, check=True, capture_output=True, text=True)
    summary = json.loads(out.stdout)
    return {r["devices"]: r for r in summary["parallel"]["scaling"] if r["overlap"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--trials", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    tune = os.path.join(os.path.abspath(args.build), "bin", "atvoss-tune")
    runs = json.load(open(PUBLISHED))["runs"]
    jobs = {}
    for r in runs:
        key = (r["model"], r["batch"], r["optimizer"])
        jobs[key] = max(jobs.get(key, 2), r["devices"])
    scaling = {}
    with tempfile.TemporaryDirectory() as folder:
        for (model, batch, optimizer), devices in jobs.items():
            scaling[(model, batch, optimizer)] = run_job(tune, folder, model, batch, optimizer, devices, args.trials,
                                                         args.seed)
    print("ascend910, mixed precision, sunk graph, %d trials, seed %d; samples/s per job (all devices)" %
          (args.trials, args.seed))
    print("| set | model | batch | devices | published | atvoss default | ratio | atvoss tuned | ratio |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in sorted(runs, key=lambda r: (r["set"], r["model"], r["devices"])):
        row = scaling[(r["model"], r["batch"], r["optimizer"])][r["devices"]]
        pub = r["samples_per_s"]
        print("| %s | %s | %d | %d | %.0f | %.0f | %.2f | %.0f | %.2f |" %
              (r["set"], r["model"], r["batch"], r["devices"], pub, row["default_samples_per_s"],
               row["default_samples_per_s"] / pub, row["samples_per_s"], row["samples_per_s"] / pub))
    print()
    print("scaling efficiency (N devices / N x 1 device) where a source publishes both:")
    for r in runs:
        one = [o for o in runs if o["source"] == r["source"] and o["model"] == r["model"] and o["devices"] == 1]
        if r["devices"] == 1 or not one:
            continue
        published = r["samples_per_s"] / (r["devices"] * one[0]["samples_per_s"])
        atvoss = scaling[(r["model"], r["batch"], r["optimizer"])][r["devices"]]["efficiency"]
        print("  %s x%d (%s): published %.3f, atvoss tuned %.3f, difference %+.3f" %
              (r["model"], r["devices"], r["set"], published, atvoss, atvoss - published))


if __name__ == "__main__":
    main()
