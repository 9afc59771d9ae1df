"""Overhead of a Python search policy against the same policy in C++: proposals per second
of random search (search/random_search.cpp) and of a Python random policy, both driven by
the same C++ loop without measuring (_atvoss.drive_strategy), on one workload's space.
Usage: PYTHONPATH=build/python /usr/bin/python3 bench/python_strategy_bench.py [PROPOSALS]"""
import json
import sys

import atvoss
from atvoss import _atvoss


@atvoss.register_strategy(name="py-random")
class PyRandom(atvoss.SearchStrategy):
    """Random valid schedules, never one twice: what the built-in "random" does."""

    def __init__(self, *args):
        super().__init__(*args)
        self.seen = set()
        self.knobs = list(self.space.knobs.items())

    def propose(self, n):
        out = []
        for _ in range(100 * n):
            if len(out) == n:
                break
            s = {k: self.rng.choice(v) for k, v in self.knobs}
            key = tuple(s.values())
            if key not in self.seen and self.space.check(s)[0]:
                self.seen.add(key)
                out.append(s)
        return out

    def update(self, trials):
        pass


def main():
    proposals = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    w = json.dumps({"op": "conv2d", "dims": {"N": 1, "C": 256, "H": 56, "W": 56, "K": 256, "R": 3, "S": 3, "pad": 1}})
    t = json.dumps(atvoss.Target("ascend910b").to_json())
    print(f"{'strategy':>10} {'batch':>5} {'proposals':>9} {'seconds':>8} {'proposals/s':>12}")
    for batch in (16, 64):
        for name in ("random", "py-random"):
            made, seconds = _atvoss.drive_strategy(name, w, t, proposals, batch, 1)
            print(f"{name:>10} {batch:>5} {made:>9} {seconds:>8.3f} {made / seconds:>12.0f}")


if __name__ == "__main__":
    main()
