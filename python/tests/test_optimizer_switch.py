"""atvoss.Optimizer as an Optuna or Kernel Tuner user expects it: values of any sign and
numpy scalars, maximize, failures kept while a run of only failures raises, resume that checks
the space, several pending asks, threads and processes sharing one database, and constraints
parsed by a closed grammar that refuses an escape into Python."""
import json
import threading

import numpy as np
import pytest

import atvoss

SPACE = {"block": [8, 16, 32, 64], "unroll": [1, 2, 4], "layout": ["nchw", "nhwc"]}


def bowl(block, unroll, layout):
    return 1.0 + abs(block - 32) / 8 + abs(unroll - 2) + (0.5 if layout == "nhwc" else 0.0)


def test_values_of_any_sign_are_minimised():
    opt = atvoss.minimize(lambda x: -float(x), {"x": [1, 2, 3]}, trials=3)
    assert opt.best.config == {"x": 3} and opt.best.value == -3.0
    assert sorted(t.value for t in opt.trials) == [-3.0, -2.0, -1.0]
    zero = atvoss.minimize(lambda x: float(x) - 2, {"x": [1, 2, 3]}, trials=3)
    assert zero.best.config == {"x": 1} and zero.best.value == -1.0


def test_maximize_finds_the_largest_value_and_reports_it_unchanged():
    gflops = atvoss.maximize(lambda block, unroll, layout: 100.0 / bowl(block, unroll, layout), SPACE,
                             trials=24, seed=1)
    assert gflops.direction == "maximize"
    assert gflops.best.config == {"block": 32, "unroll": 2, "layout": "nchw"} and gflops.best.value == 100.0
    scores = atvoss.maximize(lambda x: -abs(x - 2), {"x": [0, 1, 2, 3, 4]}, trials=5)
    assert scores.best.config == {"x": 2} and scores.best.value == 0.0


@pytest.mark.parametrize("value", [np.float32(2.5), np.int64(3), np.float64(-1.5), 7, 0.0])
def test_numpy_scalars_and_plain_numbers_are_values(value):
    opt = atvoss.Optimizer({"x": [1, 2]})
    c = opt.ask(1)
    opt.tell(c, [value])
    assert opt.trials[-1].value == float(value) and isinstance(opt.trials[-1].value, float)


def test_nan_and_infinity_are_failures():
    opt = atvoss.Optimizer({"x": [1, 2, 3]})
    configs = opt.ask(3)
    opt.tell(configs, [float("nan"), np.inf, 2.0])
    assert [t.value for t in opt.trials] == [None, None, 2.0]
    assert "returned nan" in opt.trials[0].error and "returned inf" in opt.trials[1].error


def test_an_objective_that_always_raises_raises_its_first_error():
    def typo(x):
        return tiem.perf_counter()  # noqa: F821 (the typo under test)

    with pytest.raises(NameError, match="tiem") as raised:
        atvoss.minimize(typo, {"x": [1, 2, 3, 4]}, trials=4)
    assert any("every one of the 4 trials of this run failed" in n for n in raised.value.__notes__)


def test_catch_empty_raises_at_the_first_failure_and_keeps_it(tmp_path):
    calls = []

    def fails_on_two(x):
        calls.append(x)
        if x == 2:
            raise RuntimeError("bad point")
        return float(x)

    db = tmp_path / "o.db"
    with pytest.raises(RuntimeError, match="bad point"):
        atvoss.minimize(fails_on_two, {"x": [1, 2, 3, 4]}, trials=4, catch=(), strategy="grid", batch=1, db=db)
    assert calls == [1, 2]
    statuses = sorted(r["measurement"]["status"] for r in atvoss.Database(db).query(op="objective"))
    assert statuses == ["ok", "runtime_error"]
    # Some failures among successes are only failures: the run goes on.
    opt = atvoss.minimize(fails_on_two, {"x": [1, 2, 3, 4]}, trials=4)
    assert opt.best.value == 1.0 and [t.value for t in opt.trials].count(None) == 1


def test_failures_read_back_keep_their_message(tmp_path):
    db = tmp_path / "o.db"

    def spill(x):
        raise MemoryError(f"spill at {x}") if x > 1 else None

    atvoss.minimize(lambda x: 1.0 if x == 1 else spill(x), {"x": [1, 2]}, trials=2, db=db)
    again = atvoss.Optimizer({"x": [1, 2]}, db=db)
    failed = [t for t in again.trials if t.value is None]
    assert len(failed) == 1 and failed[0].error == "MemoryError: spill at 2" and failed[0].resumed


def test_several_asks_may_be_pending_and_are_told_in_any_order():
    opt = atvoss.Optimizer(SPACE, seed=3)
    first, second = opt.ask(3), opt.ask(3)
    assert len({json.dumps(c, sort_keys=True) for c in first + second}) == 6
    assert len(opt.pending) == 6
    opt.tell(second[1], 2.0)  # one alone, from the later ask
    opt.tell(first, [bowl(**c) for c in first])
    third = opt.ask(4)
    assert not {json.dumps(c, sort_keys=True) for c in third} & {json.dumps(c, sort_keys=True) for c in first + second}
    opt.tell(second[::2] + third, [bowl(**c) for c in second[::2] + third])
    assert opt.pending == [] and len(opt.trials) == 10


def test_threads_evaluate_each_point_once():
    lock, seen = threading.Lock(), []

    def objective(block, unroll, layout):
        with lock:
            seen.append((block, unroll, layout))
        return bowl(block, unroll, layout)

    opt = atvoss.minimize(objective, SPACE, trials=24, n_jobs=4, seed=2)
    assert len(seen) == 24 == len(set(seen)) == len(opt.trials)
    assert opt.best.value == 1.0


def test_numpy_arrays_and_ranges_are_value_lists():
    opt = atvoss.minimize(lambda a, b: float(a * b), {"a": np.arange(1, 5), "b": range(2, 4)}, trials=8)
    assert sorted((t.config["a"], t.config["b"]) for t in opt.trials) == [(a, b) for a in range(1, 5) for b in (2, 3)]
    assert all(type(t.config["a"]) is int for t in opt.trials)
    tiles = atvoss.Optimizer({"tile": np.array(["a", "b"])})
    assert {c["tile"] for c in tiles.ask(2)} == {"a", "b"}


def test_resume_maps_a_reordered_list_and_refuses_a_space_that_drops_results(tmp_path):
    db = tmp_path / "o.db"
    first = atvoss.minimize(bowl, SPACE, trials=12, db=db, name="conv", seed=1)
    by_config = {json.dumps(t.config, sort_keys=True): t.value for t in first.trials}

    reordered = dict(SPACE, layout=["nhwc", "nchw"])
    again = atvoss.Optimizer(reordered, db=db, name="conv")
    assert {json.dumps(t.config, sort_keys=True): t.value for t in again.trials} == by_config
    assert "resumed 12 stored result(s)" in again.resume_summary
    again.close()

    fewer = dict(SPACE, layout=["nchw"])
    dropped = sum(t.config["layout"] == "nhwc" for t in first.trials)
    with pytest.raises(ValueError, match=rf"{dropped} stored result\(s\) of 'conv' fall outside this space "
                                         r"\('layout' lost 'nhwc'\).*on_space_change='keep'"):
        atvoss.Optimizer(fewer, db=db, name="conv")
    kept = atvoss.Optimizer(fewer, db=db, name="conv", on_space_change="keep")
    assert len(kept.trials) == 12 - dropped and f"left out {dropped}" in kept.resume_summary
    kept.close()

    with pytest.raises(ValueError, match=r"parameter 'layout' is gone; parameter 'vector' is new"):
        atvoss.Optimizer({"block": SPACE["block"], "unroll": SPACE["unroll"], "vector": [4, 8]}, db=db, name="conv")
    with pytest.raises(ValueError, match="was run with direction='minimize', not 'maximize'"):
        atvoss.Optimizer(SPACE, db=db, name="conv", direction="maximize")

    wider = dict(SPACE, layout=["nchw", "nhwc", "chwn"])  # gains a value: nothing is lost
    grown = atvoss.Optimizer(wider, db=db, name="conv")
    assert len(grown.trials) == 12 and "gained 'chwn'" in grown.resume_summary


def test_maximized_values_come_back_from_the_database_unchanged(tmp_path):
    db = tmp_path / "o.db"
    atvoss.maximize(lambda x: float(x) - 2.5, {"x": [1, 2, 3, 4]}, trials=4, db=db, name="m")
    back = atvoss.Optimizer({"x": [1, 2, 3, 4]}, db=db, name="m", direction="maximize")
    assert sorted(t.value for t in back.trials) == [-1.5, -0.5, 0.5, 1.5]
    assert back.best.config == {"x": 4}


def test_constraints_are_parsed_not_evaluated_by_python():
    escape = "().__class__.__base__.__subclasses__()"
    with pytest.raises(ValueError, match="constraint"):
        atvoss.Optimizer(SPACE, constraints=[escape])
    with pytest.raises(ValueError, match="a function among min, max"):
        atvoss.Optimizer(SPACE, constraints=["__import__('os') == 0"])
    with pytest.raises(ValueError, match="a parameter of the space, not 'os'"):
        atvoss.Optimizer(SPACE, constraints=["os == 1"])
    opt = atvoss.Optimizer(SPACE, constraints=["layout in ('nchw',) and block * unroll <= 64",
                                               "block // 8 % 2 == 0 or unroll == 1"])
    allowed = [c for c in opt.ask(100)]
    expected = [{"block": b, "unroll": u, "layout": "nchw"} for b in SPACE["block"] for u in SPACE["unroll"]
                if b * u <= 64 and ((b // 8) % 2 == 0 or u == 1)]
    key = lambda c: json.dumps(c, sort_keys=True)  # noqa: E731
    assert sorted(map(key, allowed)) == sorted(map(key, expected))
