"""atvoss.Database and atvoss.Table against a database filled by atvoss.tune: answers agree
with the tuning result, plain Python data and numpy columns, export/import/merge, models,
lookup exact vs nearest, bad input."""
import json
import os
import subprocess
import sys
import uuid

import numpy as np
import pytest

import atvoss


@pytest.fixture(params=["file", "postgres"])
def db_path(request, tmp_path):
    """The database the tuning writes: an SQLite file, or a fresh schema on the throwaway
    PostgreSQL server ctest starts (tests/db/pg_cluster.sh)."""
    if request.param == "file":
        yield str(tmp_path / "tune.db")
        return
    base = os.environ.get("ATVOSS_TEST_PG_URL")
    if not base:
        pytest.fail("ATVOSS_TEST_PG_URL is not set: run this suite through ctest, which starts the server")
    schema = "py_" + uuid.uuid4().hex[:12]
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", base, "-c", f"CREATE SCHEMA {schema}"], check=True)
    yield f"{base}&options=-csearch_path%3D{schema}"
    subprocess.run(["psql", "-X", "-q", base, "-c", f"DROP SCHEMA {schema} CASCADE"], check=False)


@pytest.fixture
def tuned(matmul, db_path):
    r = atvoss.tune(matmul, "ascend910b", trials=16, strategy="random", db=db_path, seed=7, batch_size=8)
    return r, atvoss.Database(db_path)


def test_best_history_query_and_columns(tuned, matmul):
    r, db = tuned
    best = db.best(matmul, "ascend910b", k=3)
    assert len(best) == 3 and best[0]["measurement"]["time_us"] == r.best_us
    assert [b["measurement"]["time_us"] for b in best] == sorted(b["measurement"]["time_us"] for b in best)
    assert db.best(matmul.key, atvoss.Target("ascend910b"))[0]["id"] == best[0]["id"]
    history = db.history(matmul)
    assert len(history) == 16 and [h["id"] for h in history] == sorted(h["id"] for h in history)
    assert db.history(matmul, "ascend910") == []  # target-aware
    cols = atvoss.columns(history)
    assert isinstance(cols["time_us"], np.ndarray) and cols["time_us"].dtype == np.float64
    ok = np.array([s == "ok" for s in cols["status"]])
    assert cols["time_us"][ok].min() == r.best_us
    assert len(db.query(op="matmul", status="ok", limit=5)) == 5
    assert db.query(op="conv2d") == []
    with pytest.raises(ValueError, match="status"):
        db.query(status="fine")
    with pytest.raises(ValueError, match="k"):
        db.best(matmul, "ascend910b", k=0)


def test_stats_and_models(tuned):
    r, db = tuned
    s = db.stats()
    assert s["records"] == 16 and s["workloads"] == 1 and s["targets"] == 1
    assert sum(s["by_status"].values()) == 16
    assert db.targets()[0]["name"] == "ascend910b"
    assert db.models("ascend910b") == []  # random search trains no model


def test_models_after_model_guided(matmul, db_path):
    atvoss.tune(matmul, "ascend910b", trials=24, strategy="model-guided", cost_model="linear", db=db_path,
                seed=1, batch_size=8)
    models = atvoss.Database(db_path).models("ascend910b")
    assert models and models[0]["kind"] == "linear" and models[0]["n_records"] > 0


def test_export_import_merge(tuned, tmp_path, matmul):
    r, db = tuned
    path = tmp_path / "all.jsonl"
    assert db.export(path) == 16
    other = atvoss.Database(tmp_path / "other.db")
    assert other.import_(path)["added"] == 16
    assert other.import_(path)["identical"] == 16  # importing again adds nothing
    third = atvoss.Database(tmp_path / "third.db")
    assert third.merge(db.path)["added"] == 16
    assert third.best(matmul, "ascend910b")[0]["measurement"]["time_us"] == r.best_us
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format":"atvoss-record"}\n')
    with pytest.raises(ValueError):
        other.import_(bad)
    assert other.stats()["records"] == 16  # all or nothing


def test_kernel_tuner_cache_import(tmp_path, small_cache):
    db = atvoss.Database(tmp_path / "kt.db")
    report = db.import_(small_cache)
    assert report["added"] == 11
    assert db.targets()[0]["name"] == "Test_GPU"  # a recorded target, named by the cache
    ok = db.query(target="Test_GPU", status="ok")
    assert len(ok) == 10 and len(db.query(target="Test_GPU", status="compile_error")) == 1
    assert min(r["measurement"]["time_us"] for r in ok) == pytest.approx(1000.0)


def _kernel_tuner_reads(path):
    """What Kernel Tuner (util.read_cache, runners/simulation.py) does with a cache file: plain
    text, taken as finished only if it ends in "}\n}" or "}}}" (else it appends brackets), then
    entries looked up by ",".join(str(v) for v in config) in tune_params_keys order, their
    "time" the objective and compile/verification/benchmark time charged in simulation."""
    import json

    text = open(path, encoding="utf-8").read().strip()
    assert text[-3:] in ("}\n}", "}}}"), "Kernel Tuner would take the file for an unfinished one"
    doc = json.loads(text)
    assert list(doc)[-1] == "cache"
    for field in ("device_name", "kernel_name", "tune_params_keys", "tune_params", "objective", "cache"):
        assert field in doc, field
    keys = doc["tune_params_keys"]
    assert list(doc["tune_params"]) == keys and doc["objective"] == "time"
    for key, entry in doc["cache"].items():
        assert key == ",".join(str(entry[k]) for k in keys)
        assert all(entry[k] in doc["tune_params"][k] for k in keys)
        assert isinstance(entry["time"], float) or entry["time"] in ("CompilationFailedConfig", "RuntimeFailedConfig")
        for field in ("compile_time", "verification_time", "benchmark_time"):
            assert isinstance(entry[field], (int, float)), (key, field)
    return doc


def test_kernel_tuner_cache_export_round_trip(tuned, tmp_path, matmul):
    r, db = tuned
    path = tmp_path / "matmul.json"
    report = db.export_kernel_tuner_cache(path, workload=matmul, target="ascend910b")
    history = db.history(matmul, "ascend910b")
    written = [h for h in history if h["measurement"]["status"] not in ("invalid", "worker_lost", "error")]
    assert report["entries"] == len(written) and report["skipped"] == len(history) - len(written)
    assert report["kernel_name"] == "matmul" and report["device_name"] == "ascend910b"
    doc = _kernel_tuner_reads(path)
    assert doc["device_name"] == "ascend910b" and doc["tune_params_keys"] == sorted(r.best_schedule.to_json())
    best_key = ",".join(str(r.best_schedule.to_json()[k]) for k in doc["tune_params_keys"])
    assert doc["cache"][best_key]["time"] == pytest.approx(r.best_us / 1000)  # ms
    # Read back by the importer: the same schedules and times, on a target named as the device.
    other = atvoss.Database(tmp_path / "back.db")
    assert other.import_(path)["added"] == report["entries"]
    back = other.query(target="ascend910b", status="ok")
    assert len(back) == sum(1 for h in written if h["measurement"]["status"] == "ok")
    assert min(b["measurement"]["time_us"] for b in back) == pytest.approx(r.best_us)
    assert {str(sorted(b["schedule"].items())) for b in back} == {
        str(sorted(h["schedule"].items())) for h in written if h["measurement"]["status"] == "ok"}


def test_kernel_tuner_cache_import_then_export_gives_the_cache_back(tmp_path, small_cache):
    import gzip
    import json

    db = atvoss.Database(tmp_path / "kt.db")
    db.import_(small_cache)
    workload = db.query(target="Test_GPU", limit=1)[0]["workload"]
    path = tmp_path / "toy.json"
    report = db.export_kernel_tuner_cache(path, workload, "Test_GPU")
    assert (report["entries"], report["failed"], report["kernel_name"]) == (11, 1, "toy")
    doc = _kernel_tuner_reads(path)
    with gzip.open(small_cache, "rt") as f:
        original = json.load(f)
    assert doc["device_name"] == original["device_name"] and doc["kernel_name"] == original["kernel_name"]
    assert set(doc["cache"]) == set(original["cache"])
    for key, entry in original["cache"].items():
        if isinstance(entry["time"], str):
            assert doc["cache"][key]["time"] == entry["time"]
        else:
            assert doc["cache"][key]["time"] == pytest.approx(entry["time"])
            assert doc["cache"][key]["times"] == pytest.approx(entry["times"])


def test_kernel_tuner_cache_export_keeps_the_parameter_order(tmp_path):
    # Kernel Tuner keys its cache by the values in tune_params_keys order ("4,32"); an export
    # in alphabetical order gave keys the user's kernel never asks for.
    import json

    cache = {f"{t},{b}": {"tile_y": t, "block_x": b, "time": 1.0 + t + b / 100, "times": [1.0 + t + b / 100]}
             for t in (1, 2, 4) for b in (32, 64)}
    doc = {"device_name": "Order_GPU", "kernel_name": "ordered", "tune_params_keys": ["tile_y", "block_x"],
           "tune_params": {"tile_y": [1, 2, 4], "block_x": [32, 64]}, "objective": "time", "cache": cache}
    source = tmp_path / "ordered.json"
    source.write_text(json.dumps(doc))
    db = atvoss.Database(tmp_path / "kt.db")
    db.import_(source)
    workload = db.query(target="Order_GPU", limit=1)[0]["workload"]
    db.export_kernel_tuner_cache(tmp_path / "out.json", workload, "Order_GPU")
    out = _kernel_tuner_reads(tmp_path / "out.json")
    assert out["tune_params_keys"] == ["tile_y", "block_x"]
    assert set(out["cache"]) == set(cache)


def test_kernel_tuner_cache_export_bad_input(tuned, tmp_path, matmul):
    r, db = tuned
    with pytest.raises(ValueError, match="path"):
        db.export_kernel_tuner_cache(tmp_path / "x.json.gz", matmul, "ascend910b")
    with pytest.raises(ValueError, match="workload"):
        db.export_kernel_tuner_cache(tmp_path / "x.json", {"op": "matmul", "dims": {"M": 8, "N": 8, "K": 8}},
                                     "ascend910b")
    with pytest.raises(TypeError, match="kernel_name"):
        db.export_kernel_tuner_cache(tmp_path / "x.json", matmul, "ascend910b", kernel_name=3)
    assert not (tmp_path / "x.json").exists()

def test_table_lookup_exact_and_nearest(tuned, tmp_path, matmul):
    r, db = tuned
    path = tmp_path / "table.json"
    assert db.export_table("ascend910b", path)["entries"] == 1
    table = atvoss.Table(path)
    assert len(table) == 1 and table.header["target_name"] == "ascend910b"
    hit = table.lookup(matmul)
    assert hit.exact and hit.schedule == r.best_schedule and hit.time_us == r.best_us and hit.distance == 0
    near = table.lookup({"op": "matmul", "dims": {"M": 512, "N": 256, "K": 256}})
    assert near.match == "nearest" and not near.exact and near.distance > 0
    assert near.schedule == r.best_schedule
    miss = table.lookup({"op": "conv2d", "dims": {"N": 1, "C": 8, "H": 8, "W": 8, "K": 8, "R": 3, "S": 3}})
    assert miss.match == "none" and miss.schedule is None


def test_errors_quoting_bytes_that_are_not_utf8_keep_their_message(tmp_path):
    # The message quotes the input; PyErr_SetString left it empty.
    (tmp_path / "bad.jsonl").write_bytes(b'{"a":"\xff\xfe"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:1: invalid JSON .*field 'a'"):
        atvoss.Database(tmp_path / "x.db").import_(tmp_path / "bad.jsonl")
    (tmp_path / "t.json").write_bytes(b'{"format":"\xff"}')
    with pytest.raises(ValueError, match="invalid JSON"):
        atvoss.Table(tmp_path / "t.json")


def test_database_and_table_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="database: no such file"):
        atvoss.Database(tmp_path / "missing.db", read_only=True)
    (tmp_path / "junk.db").write_text("not a database")
    with pytest.raises(RuntimeError, match="corrupt"):
        atvoss.Database(tmp_path / "junk.db").stats()
    with pytest.raises(FileNotFoundError, match="table: no such file"):
        atvoss.Table(tmp_path / "nothing.json")
    with pytest.raises(RuntimeError):
        atvoss.Database(tmp_path / "empty.db").export_table("ascend910b", tmp_path / "t.json")


WORKER = r"""
import json, os, sys, time
import atvoss
db, log, space = sys.argv[1], sys.argv[2], {"a": list(range(8)), "b": list(range(6))}
# A barrier: all four start together, so one process cannot take every point before the
# others have imported atvoss.
open(f"{log}.ready{sys.argv[3]}", "w").close()
deadline = time.monotonic() + 120
while sum(os.path.exists(f"{log}.ready{i}") for i in range(4)) < 4 and time.monotonic() < deadline:
    time.sleep(0.01)
def objective(a, b):
    with open(log, "a") as f:
        f.write(json.dumps([a, b, os.getpid()]) + "\n")
    time.sleep(0.01)
    return 1.0 + (a - 5) ** 2 + (b - 2) ** 2
atvoss.minimize(objective, space, trials=48, db=db, name="shared", seed=int(sys.argv[3]), batch=2)
"""


def test_four_optimizer_processes_sharing_a_database_evaluate_each_point_once(db_path, tmp_path):
    # atvoss.minimize in 4 processes on one database (docs/python-objective.md).
    db, log = db_path, tmp_path / "calls.jsonl"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(db), str(log), str(seed)], env=env)
               for seed in range(4)]
    assert [w.wait(timeout=300) for w in workers] == [0, 0, 0, 0]
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    points = [(a, b) for a, b, _ in calls]
    assert len(points) == len(set(points)), "a point was evaluated twice"
    assert set(points) == {(a, b) for a in range(8) for b in range(6)}
    assert len({pid for _, _, pid in calls}) > 1, "one process did all the work"
    assert len(atvoss.Database(db).query(op="objective")) == 48
