"""What one atvoss.Optimizer with a database spends per trial outside the objective: the
time of sync (reading what others stored), ask (strategy and claims) and tell (storing), as
the number of stored results grows (docs/decisions/objective-values.md).

    PYTHONPATH=build/python /usr/bin/python3 bench/python_optimizer_overhead.py [--trials 250] [--strategy model-guided]
"""
import argparse
import os
import tempfile
import time

import atvoss


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=250)
    ap.add_argument("--strategy", default="model-guided")
    args = ap.parse_args()
    space = {"a": list(range(16)), "b": list(range(16))}
    with tempfile.TemporaryDirectory() as tmp:
        opt = atvoss.Optimizer(space, db=os.path.join(tmp, "o.db"), name="o", strategy=args.strategy)
        spent = {"sync": 0.0, "ask": 0.0, "tell": 0.0}
        print(f"{args.strategy}, one SQLite database; mean ms per trial over the first n trials")
        print(f"{'n':>5} {'sync':>6} {'ask':>6} {'tell':>6}")
        for i in range(1, args.trials + 1):
            t = time.perf_counter()
            opt._sync()
            spent["sync"] += time.perf_counter() - t
            t = time.perf_counter()
            configs = opt.ask(1)  # syncs again: its own sync is counted in ask
            spent["ask"] += time.perf_counter() - t
            if not configs:
                break
            c = configs[0]
            t = time.perf_counter()
            opt.tell(c, 1.0 + (c["a"] - 11) ** 2 + (c["b"] - 5) ** 2)
            spent["tell"] += time.perf_counter() - t
            if i in (50, 150, args.trials):
                print(f"{i:>5} " + " ".join(f"{v / i * 1000:>6.2f}" for v in spent.values()))


if __name__ == "__main__":
    main()
