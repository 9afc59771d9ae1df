#!/usr/bin/env python3
"""docs/host-backend.md "Waiting": how the host runner times a small conv on one thread and on
two under the OpenMP wait policy of this process's environment (the runner inherits it):
ResNet-50's 7x7x512 -> 2048 1x1 conv with its residual epilogue, the default schedule and the
same on 2 threads, --rounds rounds of 5 repeats interleaved, each round's time printed.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/host_wait_timing.py [--rounds 3]
  GOMP_SPINCOUNT=0 ...      passive waiting, the runner's default: a wake-up per parallel region
  GOMP_SPINCOUNT=1000 ...   a brief spin, as a model run finds its threads awake"""
import argparse
import json
import os

import atvoss
from atvoss import _atvoss

W = {"op": "conv2d", "dtype": "float32", "epilogue": ["bias", "add", "relu"],
     "dims": {"C": 512, "H": 7, "K": 2048, "N": 1, "R": 1, "S": 1, "W": 7, "pad": 0, "stride": 1}}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    one = json.loads(_atvoss.default_schedule(json.dumps(W), "host"))
    two = dict(one, threads=2)
    print("GOMP_SPINCOUNT=%s OMP_WAIT_POLICY=%s" % (os.environ.get("GOMP_SPINCOUNT"),
                                                    os.environ.get("OMP_WAIT_POLICY")))
    for r in range(args.rounds):
        a, b = atvoss.measure(W, "host", [one, two], repeat=5, seed=r)
        print("round %d: 1 thread %7.0f us, 2 threads %7.0f us" % (r, a.time_us, b.time_us), flush=True)


if __name__ == "__main__":
    main()
