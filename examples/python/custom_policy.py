"""A custom search policy in Python: coordinate descent around the best schedule so far,
registered by name and compared with the built-in random search on the same budget.
Usage: custom_policy.py [TRIALS]"""
import sys
from typing import Any, Dict, List, Optional, Set, Tuple

import atvoss


@atvoss.register_strategy(name="coordinate-descent", priority=1)
class CoordinateDescent(atvoss.SearchStrategy):
    """Moves one knob at a time to a neighbouring value of the best schedule found so far."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.best: Optional[Tuple[float, atvoss.Schedule]] = None  # (time_us, schedule)
        self.seen: Set[Tuple[Tuple[str, int], ...]] = set()

    def _new(self, s: Dict[str, int]) -> bool:
        key = tuple(sorted(s.items()))
        if key in self.seen or not self.space.check(s)[0]:
            return False
        self.seen.add(key)
        return True

    def propose(self, n: int) -> List[Dict[str, int]]:
        knobs = self.space.knobs
        out: List[Dict[str, int]] = []
        for attempt in range(100 * n):
            if len(out) == n:
                break
            # Neighbours of the best first; random points once they run out (or before any result).
            if self.best is not None and attempt < 50 * n:
                s = dict(self.best[1])
                k = self.rng.choice(list(knobs))
                i = knobs[k].index(s[k]) + self.rng.choice((-1, 1))
                if not 0 <= i < len(knobs[k]):
                    continue
                s[k] = knobs[k][i]
            else:
                s = {k: self.rng.choice(v) for k, v in knobs.items()}
            if self._new(s):
                out.append(s)
        return out

    def update(self, trials: List[atvoss.Trial]) -> None:
        for t in trials:
            self.seen.add(tuple(sorted(t.schedule.items())))
            if t.ok and (self.best is None or t.time_us < self.best[0]):
                self.best = (t.time_us, t.schedule)


trials = int(sys.argv[1]) if len(sys.argv) > 1 else 64
w = atvoss.Workload(op="conv2d", dims={"N": 1, "C": 64, "H": 56, "W": 56, "K": 64, "R": 3, "S": 3, "pad": 1})
for strategy in ("coordinate-descent", "random"):
    r = atvoss.tune(w, "ascend910", trials=trials, strategy=strategy, seed=2)
    print(f"{strategy:>18}: best {r.best_us:.2f} us, {r.speedup:.2f}x over the default, stop: {r.stop_reason}")
