"""atvoss.Database and atvoss.Table against a database filled by atvoss.tune: answers agree
with the tuning result, plain Python data and numpy columns, export/import/merge, models,
lookup exact vs nearest, bad input."""
import numpy as np
import pytest

import atvoss


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


def test_table_lookup_exact_and_nearest(tuned, tmp_path, matmul):
    r, db = tuned
    path = tmp_path / "table.json"
    assert db.export_table("ascend910b", path)["entries"] == 1
    table = atvoss.Table(path)
    assert len(table) == 1 and table.header["target_name"] == "ascend910b"
    hit = table.lookup(matmul)
    assert hit.exact and hit.schedule == r.best_schedule and hit.time_us == r.best_us and hit.distance == 0
    near = table.lookup({"op": "matmul", "dims": {"M": 512, "N": 256, "K": 256}})
    assert near.match == "approximate" and not near.exact and near.distance > 0
    assert near.schedule == r.best_schedule
    miss = table.lookup({"op": "conv2d", "dims": {"N": 1, "C": 8, "H": 8, "W": 8, "K": 8, "R": 3, "S": 3}})
    assert miss.match == "none" and miss.schedule is None


def test_database_and_table_errors(tmp_path):
    with pytest.raises(RuntimeError):
        atvoss.Database(tmp_path / "missing.db", read_only=True)
    (tmp_path / "junk.db").write_text("not a database")
    with pytest.raises(RuntimeError, match="corrupt"):
        atvoss.Database(tmp_path / "junk.db").stats()
    with pytest.raises(RuntimeError):
        atvoss.Table(tmp_path / "nothing.json")
    with pytest.raises(RuntimeError):
        atvoss.Database(tmp_path / "empty.db").export_table("ascend910b", tmp_path / "t.json")
