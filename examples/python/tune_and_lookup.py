"""Tune one matmul on ascend910b into a database, export the lookup table, and look up the
tuned shape (exact) and an untuned one (nearest). Usage: tune_and_lookup.py [OUT_DIR] [TRIALS]"""
import os
import sys
import tempfile

import atvoss

out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
trials = int(sys.argv[2]) if len(sys.argv) > 2 else 64

w = atvoss.Workload(op="matmul", dims={"M": 1024, "N": 1024, "K": 512})
r = atvoss.tune(w, "ascend910b", trials=trials, strategy="evolutionary", db=os.path.join(out, "tune.db"), seed=1)
print(f"tuned {w.label}: {r.best_us:.2f} us (default {r.default_us:.2f} us, {r.speedup:.2f}x) after {r.trials} trials")
print("best schedule:", r.best_schedule)

table_path = os.path.join(out, "table.json")
atvoss.Database(os.path.join(out, "tune.db")).export_table("ascend910b", table_path)
table = atvoss.Table(table_path)
for shape in (w, atvoss.Workload(op="matmul", dims={"M": 2048, "N": 1024, "K": 512})):
    hit = table.lookup(shape)
    print(f"lookup {shape.label}: {hit.match} (distance {hit.distance:.2f}) -> {hit.schedule}")
