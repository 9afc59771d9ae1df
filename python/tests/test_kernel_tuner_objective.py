"""A Kernel Tuner cache tuned for another objective than time ("objective",
"objective_higher_is_better") is ranked by it, and its export keeps it and the parameter order."""
import json

import pytest

import atvoss


def _cache(path, objective=None, higher=None, keys=("tile", "block_size_x")):
    """Nine configurations where time and GFLOP/s disagree: the fastest time (tile 1, bx 32)
    is not the highest GFLOP/s (tile 4, bx 128), as when problem sizes differ per config."""
    cache = {}
    for bx in (32, 64, 128):
        for tile in (1, 2, 4):
            entry = {"block_size_x": bx, "tile": tile, "time": 1.0 + tile + bx / 32,
                     "GFLOP/s": float(tile * bx)}
            cache[",".join(str(entry[k]) for k in keys)] = entry
    doc = {"device_name": "Test_GPU", "kernel_name": "toy", "problem_size": [1024], "tune_params_keys": list(keys),
           "tune_params": {"block_size_x": [32, 64, 128], "tile": [1, 2, 4]}, "cache": cache}
    if objective is not None:
        doc["objective"] = objective
    if higher is not None:
        doc["objective_higher_is_better"] = higher
    path.write_text(json.dumps(doc))
    return str(path)


def test_a_higher_is_better_objective_is_maximised(tmp_path):
    path = _cache(tmp_path / "gflops.json", "GFLOP/s", True)
    r = atvoss.tune_kernel_cache(path, strategies="grid", trials=9)["grid"]
    assert r.objective == "GFLOP/s" and r.higher_is_better
    assert r.best_schedule == {"tile": 4, "block_size_x": 128}
    assert r.best_objective == pytest.approx(512.0) and r.best_us == pytest.approx(1 / 512)
    timed = atvoss.tune_kernel_cache(_cache(tmp_path / "time.json"), strategies="grid", trials=9)["grid"]
    assert timed.objective == "time" and timed.best_schedule == {"tile": 1, "block_size_x": 32}
    assert timed.best_objective == timed.best_us == pytest.approx(3000.0)  # 3 ms


def test_a_lower_is_better_objective_is_minimised_in_its_own_units(tmp_path):
    path = _cache(tmp_path / "lower.json", "GFLOP/s", False)
    r = atvoss.tune_kernel_cache(path, strategies="grid", trials=9)["grid"]
    assert r.best_schedule == {"tile": 1, "block_size_x": 32} and r.best_us == pytest.approx(32.0)


@pytest.mark.parametrize("fields, message", [
    ({"objective": "GFLOP/s"}, "objective_higher_is_better' is missing"),
    ({"objective": "GFLOP/s", "higher": "yes"}, "objective_higher_is_better' must be true or false"),
    ({"objective": "time", "higher": True}, "but the objective is time"),
    ({"objective": 5}, "field 'objective' must be a non-empty string"),
    ({"objective": "energy", "higher": False}, "field 'energy'"),
])
def test_an_objective_that_cannot_be_ranked_is_refused_naming_the_field(tmp_path, fields, message):
    path = _cache(tmp_path / "bad.json", fields.get("objective"), fields.get("higher"))
    with pytest.raises(ValueError, match=message):
        atvoss.tune_kernel_cache(path, strategies="grid", trials=2)


def test_the_export_keeps_the_objective_and_the_parameter_order(tmp_path):
    path = _cache(tmp_path / "gflops.json", "GFLOP/s", True)
    db_path = str(tmp_path / "t.db")
    atvoss.tune_kernel_cache(path, strategies="grid", trials=9, db=db_path)
    out = tmp_path / "export.json"
    w = atvoss.Workload({"op": "recorded", "table": path})
    atvoss.Database(db_path).export_kernel_tuner_cache(str(out), w, "ascend910b")
    doc = json.loads(out.read_text())
    assert doc["objective"] == "GFLOP/s" and doc["objective_higher_is_better"] is True
    assert doc["tune_params_keys"] == ["tile", "block_size_x"]
    assert doc["cache"]["4,128"]["GFLOP/s"] == pytest.approx(512.0)
    # Read back as a recorded space, the export ranks as the original.
    again = atvoss.tune_kernel_cache(str(out), strategies="grid", trials=9)["grid"]
    assert again.best_schedule == {"tile": 4, "block_size_x": 128}
