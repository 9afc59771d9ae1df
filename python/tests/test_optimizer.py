"""atvoss.Optimizer and atvoss.minimize: ask/tell over a space the user defines, with
constraints, driven by every atvoss strategy."""
import time

import numpy as np
import pytest

import atvoss

SPACE = {"block": [8, 16, 32, 64, 128, 256], "unroll": [1, 2, 4, 8], "order": ["ij", "ji"]}
CONSTRAINT = "block * unroll <= 256"


def bowl(block, unroll, order):
    """A known landscape: the single best point is block 64, unroll 4, order ij."""
    return 1.0 + abs(block - 64) / 16 + abs(unroll - 4) + (0.5 if order == "ji" else 0.0)


def valid_points():
    return [(b, u, o) for b in SPACE["block"] for u in SPACE["unroll"] for o in SPACE["order"] if b * u <= 256]


@pytest.mark.parametrize("strategy", atvoss.strategy_names())
def test_every_strategy_asks_only_new_valid_points_until_the_space_is_exhausted(strategy):
    valid = valid_points()
    opt = atvoss.minimize(bowl, SPACE, trials=len(valid) + 10, constraints=[CONSTRAINT], strategy=strategy, seed=2)
    asked = [(t.config["block"], t.config["unroll"], t.config["order"]) for t in opt.trials]
    assert len(asked) == len(set(asked)), "a configuration was asked twice"
    assert all(b * u <= 256 for b, u, _ in asked), "a configuration breaks the constraint"
    assert sorted(asked, key=repr) == sorted(valid, key=repr)  # all of them, then it stopped
    assert opt.best.config == {"block": 64, "unroll": 4, "order": "ij"} and opt.best.value == 1.0
    assert opt.ask(4) == []


def test_the_same_seed_asks_the_same_points():
    runs = [atvoss.minimize(bowl, SPACE, trials=20, seed=s) for s in (7, 7, 8)]
    configs = [[t.config for t in r.trials] for r in runs]
    assert configs[0] == configs[1]
    assert configs[0] != configs[2]


def test_a_strategy_config_reaches_the_strategy():
    # A longer random start changes what TPE asks once its startup would have ended.
    def asked(config):
        return [t.config for t in atvoss.minimize(bowl, SPACE, trials=16, strategy="tpe", seed=3,
                                                  strategy_config=config).trials]
    assert asked({"tpe_startup": 2}) == asked({"tpe_startup": 2})
    assert asked({"tpe_startup": 2}) != asked({"tpe_startup": 16})


def test_failures_are_learnt_and_the_best_is_a_success():
    def fails_when_unrolled(block, unroll, order):
        if unroll > 2:
            raise RuntimeError("register spill")
        return bowl(block, unroll, order)

    opt = atvoss.minimize(fails_when_unrolled, SPACE, trials=30, seed=1)
    failed = [t for t in opt.trials if t.value is None]
    assert failed and all(t.config["unroll"] > 2 and "register spill" in t.error for t in failed)
    assert opt.best.config["unroll"] <= 2
    assert opt.best.value == min(t.value for t in opt.trials if t.value is not None)


def blocked_matmul(a, b, block):
    n = a.shape[0]
    c = np.zeros((n, n))
    for i in range(0, n, block):
        for k in range(0, n, block):
            c[i:i + block] += a[i:i + block, k:k + block] @ b[k:k + block]
    return c


def test_tunes_a_real_python_timed_kernel_through_ask_and_tell():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((128, 128)), rng.standard_normal((128, 128))
    opt = atvoss.Optimizer({"block": [4, 8, 16, 32, 64, 128]}, seed=3)
    while len(opt.trials) < 6:
        configs = opt.ask(2)
        times = []
        for c in configs:
            start = time.perf_counter()
            result = blocked_matmul(a, b, **c)
            times.append((time.perf_counter() - start) * 1e6)
            assert np.allclose(result, a @ b)
        opt.tell(configs, times)
    assert sorted(t.config["block"] for t in opt.trials) == [4, 8, 16, 32, 64, 128]
    assert opt.best.value == min(t.value for t in opt.trials)


def test_misuse_is_a_clear_error():
    opt = atvoss.Optimizer(SPACE, seed=0)
    configs = opt.ask(2)
    with pytest.raises(ValueError, match="is not a pending ask"):
        opt.tell([{"block": 999, "unroll": 1, "order": "ij"}], [1.0])
    with pytest.raises(TypeError, match="must be a real number, None or an exception, not str"):
        opt.tell(configs, [1.0, "fast"])
    with pytest.raises(ValueError, match="2 configs but 1 results"):
        opt.tell(configs, [1.0])
    with pytest.raises(ValueError, match="is given twice"):
        opt.tell([configs[0], configs[0]], [1.0, 2.0])
    assert opt.pending == configs  # nothing was kept from the refused tells
    reordered = [dict(reversed(list(c.items()))) for c in configs]  # keys in another order
    opt.tell(reordered, [1.0, None])
    with pytest.raises(ValueError, match="told already"):
        opt.tell(configs, [1.0, 2.0])
    with pytest.raises(ValueError, match="parameter 'x' must be a non-empty list"):
        atvoss.Optimizer({"x": []})
    with pytest.raises(ValueError, match="no point of the space satisfies them"):
        atvoss.Optimizer(SPACE, constraints=["block > 1000"])
    with pytest.raises(ValueError, match="a parameter of the space, not 'blok'"):
        atvoss.Optimizer(SPACE, constraints=["blok > 1"])
    with pytest.raises(ValueError, match="no-such"):
        atvoss.Optimizer(SPACE, strategy="no-such")
    with pytest.raises(ValueError, match="seed must be in"):
        atvoss.Optimizer(SPACE, seed=2**64)
    with pytest.raises(ValueError, match="direction must be 'minimize' or 'maximize'"):
        atvoss.Optimizer(SPACE, direction="down")
    with pytest.raises(ValueError, match="tpe strategy_config: unknown field 'population'"):
        atvoss.Optimizer(SPACE, strategy="tpe", strategy_config={"population": 8})
    with pytest.raises(TypeError, match="strategy_config"):
        atvoss.Optimizer(SPACE, strategy_config=["tpe_gamma"])


def test_results_are_stored_and_a_rerun_resumes(tmp_path):
    db = tmp_path / "objective.db"

    def flaky(block, unroll, order):
        if block == 256:
            raise MemoryError("too big")
        return bowl(block, unroll, order)

    first = atvoss.minimize(flaky, SPACE, trials=12, seed=1, db=db, name="bowl")
    stored = atvoss.Database(db).query(op="objective")
    assert len(stored) == 12
    assert {r["workload"]["name"] for r in stored} == {"bowl"}
    assert all(r["worker"] == "python" for r in stored)
    failures = [r for r in stored if r["measurement"]["status"] != "ok"]
    assert len(failures) == len([t for t in first.trials if t.value is None])
    assert all("MemoryError: too big" in r["measurement"]["message"] for r in failures)

    # The rerun starts from the twelve, asks none of them again, and stops at twenty.
    second = atvoss.minimize(flaky, SPACE, trials=20, seed=1, db=db, name="bowl")
    assert [t.resumed for t in second.trials] == [True] * 12 + [False] * 8
    configs = [repr(t.config) for t in second.trials]
    assert len(set(configs)) == 20
    assert {repr(t.config) for t in first.trials} == set(configs[:12])
    # Another name is another objective: it starts from nothing.
    assert atvoss.Optimizer(SPACE, db=db, name="other").trials == []
    # Exported records import into another database (atvoss cannot check a user's space).
    assert atvoss.Database(db).export(tmp_path / "all.jsonl") == 20
    assert atvoss.Database(tmp_path / "copy.db").import_(tmp_path / "all.jsonl")["added"] == 20


def test_observed_results_inform_the_search_and_are_never_asked():
    space = {"a": list(range(6)), "b": ["x", "y"]}
    opt = atvoss.Optimizer(space, seed=1)
    pending = opt.ask(1)[0]
    elsewhere = [{"a": a, "b": "x"} for a in range(6)]
    assert opt.observe(elsewhere + [pending], [float(a + 1) for a in range(6)] + [9.0]) == 6 - (pending in elsewhere)
    assert opt.observe(elsewhere[0], 1.0) == 0  # known already: skipped
    opt.tell(pending, 5.0)
    asked = []
    while batch := opt.ask(4):
        asked += batch
        opt.tell(batch, [1.0] * len(batch))
    assert all(c not in elsewhere for c in asked) and len(asked) == 12 - 6 - (pending not in elsewhere)
    assert {t.config["a"] for t in opt.trials if t.config["b"] == "x"} == set(range(6))
    with pytest.raises(ValueError, match="not a point of the space"):
        opt.observe({"a": 7, "b": "x"}, 1.0)


def _table(name):
    """A recorded Kernel Tuner space of data/recorded-spaces: (space, {config key: time or None})."""
    import gzip
    import json
    import os
    path = os.path.join(os.path.dirname(__file__), "..", "..", "data", "recorded-spaces", name + ".json.gz")
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    keys = doc["tune_params_keys"]
    times = {}
    for entry in doc["cache"].values():
        t = entry["time"]
        times[tuple(entry[k] for k in keys)] = t if isinstance(t, (int, float)) else None
    return keys, {k: doc["tune_params"][k] for k in keys}, times


def test_priors_from_another_kernels_table_lead_to_the_optimum_sooner():
    """convolution_milo on a W6600 (a needle among 4362 configurations) with the RTX 3090
    convolution's table as a prior: other knobs, matched by name."""
    keys, space, times = _table("convolution_milo-W6600")
    other_keys, _, other_times = _table("convolution-RTX_3090")
    prior = {"name": "convolution on an RTX 3090",
             "results": [(dict(zip(other_keys, k)), t) for k, t in list(other_times.items())[::4]]}
    optimum = min(t for t in times.values() if t is not None)

    def evaluations_to_95(priors, seed):
        opt = atvoss.Optimizer(space, constraints=[lambda c: tuple(c[k] for k in keys) in times], seed=seed,
                               priors=priors)
        for n in range(1, 151):
            config = opt.ask()[0]
            t = times[tuple(config[k] for k in keys)]
            opt.tell(config, t)
            if t is not None and optimum / t >= 0.95:
                return n
        return 151

    cold = sum(evaluations_to_95([], seed) for seed in (1, 2, 3))
    warm = sum(evaluations_to_95([prior], seed) for seed in (1, 2, 3))
    print(f"convolution_milo-W6600 to 95 %, seeds 1-3: {warm} evaluations with the prior, {cold} without")
    assert warm < cold, f"{warm} evaluations with the prior, {cold} without"


def test_priors_are_checked_naming_the_field():
    with pytest.raises(ValueError, match=r"priors\[0\] must be a dict"):
        atvoss.Optimizer(SPACE, priors=[{"results": []}])
    with pytest.raises(ValueError, match=r"priors\[0\].results\[1\] must be a \(config dict, value\) pair"):
        atvoss.Optimizer(SPACE, priors=[{"name": "x", "results": [({"block": 8}, 1.0), (8, 1.0)]}])
    with pytest.raises(TypeError, match="priors must be a list"):
        atvoss.Optimizer(SPACE, priors={"name": "x", "results": []})
