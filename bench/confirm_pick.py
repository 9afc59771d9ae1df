"""How often the end-of-tune confirmation changes the winner on the host:
tunes host matmuls (square and BERT shapes) with the
default confirmation (the 5 fastest measured again side by side in 3 interleaved rounds,
repeats pooled) and counts the tunes where it picked another schedule.

    PYTHONPATH=build/python python3 bench/confirm_pick.py [--trials 24] [--seeds 1,2]

Figures depend on the machine's noise: take them on the machine whose noise you care about.
"""
import argparse
import os
import tempfile
import time

import atvoss

SHAPES = [(128, 128, 128), (256, 256, 256), (512, 512, 512), (128, 768, 768), (128, 3072, 768),
          (128, 768, 3072)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=24)
    ap.add_argument("--seeds", default="1,2")
    a = ap.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    changed = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            for m, n, k in SHAPES:
                w = {"op": "matmul", "dtype": "float32", "dims": {"M": m, "N": n, "K": k}}
                started = time.monotonic()
                r = atvoss.tune(w, "host", trials=a.trials, strategy="model-guided", seed=seed,
                                db=os.path.join(tmp, f"{m}x{n}x{k}-{seed}.db"))
                total += 1
                changed += int(r.pick_changed)
                print(f"{m}x{n}x{k} seed {seed}: best {r.best_us:.1f} us, curve's {r.curve[-1]:.1f} us, "
                      f"confirmed {r.confirmed}, winner {'changed' if r.pick_changed else 'held'} "
                      f"({time.monotonic() - started:.1f} s)")
    print(f"RESULT tunes={total} pick_changed={changed} share={changed / total:.2f}")


if __name__ == "__main__":
    main()
