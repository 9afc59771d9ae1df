"""atvoss as a Kernel Tuner strategy (atvoss.kernel_tuner) inside a real
kernel_tuner.tune_kernel (the peers' environment's kernel-tuner), in simulation mode on a
recorded cache: Kernel Tuner's budget and accounting hold, only points of its search space
are proposed, none twice, the seed repeats the run, failures are avoided, the search beats
Kernel Tuner's random sampling, and options it does not take are refused by name."""
import gzip
import json
import os
import statistics
import warnings

import kernel_tuner
import numpy as np
import pytest

import atvoss.kernel_tuner
from conftest import SOURCE_DIR

SPACE = os.path.join(SOURCE_DIR, "data", "recorded-spaces", "pnpoly-RTX_3090.json.gz")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """pnpoly-RTX_3090 as the plain .json Kernel Tuner's simulation mode reads (4092
    configurations, 330 failed)."""
    with gzip.open(SPACE, "rt") as f:
        doc = json.load(f)
    path = tmp_path_factory.mktemp("kt") / "pnpoly.json"
    path.write_text(json.dumps(doc))
    return doc, str(path)


def tune(recorded, strategy, restrictions=None, **options):
    doc, path = recorded
    names = doc["tune_params_keys"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, env = kernel_tuner.tune_kernel(
            doc["kernel_name"], "", doc["problem_size"], [], {n: doc["tune_params"][n] for n in names},
            restrictions=restrictions, cache=path, simulation_mode=True, strategy=strategy,
            strategy_options=options, quiet=True)
    return results, env


def keys(doc, results):
    return [",".join(str(r[n]) for n in doc["tune_params_keys"]) for r in results]


def best_fraction(doc, results):
    times = [r["time"] for r in results if "__error__" not in r]
    optimum = min(e["time"] for e in doc["cache"].values() if isinstance(e["time"], (int, float)))
    return optimum / min(times)


def test_runs_as_a_tune_kernel_strategy_within_its_budget(recorded):
    doc, _ = recorded
    results, env = tune(recorded, atvoss.kernel_tuner, max_fevals=40, seed=1)
    seen = keys(doc, results)
    assert len(seen) == 40 and len(set(seen)) == 40  # Kernel Tuner's budget; no point twice
    assert all(k in doc["cache"] for k in seen)
    assert env["best_config"]["time"] == min(r["time"] for r in results if "__error__" not in r)


def test_proposes_exactly_the_points_of_kernel_tuners_search_space(recorded):
    from kernel_tuner.searchspace import Searchspace
    doc, _ = recorded
    tune_params = {"block_size_x": [32, 64, 128, 256], "tile_size": [1, 2, 4, 8], "use_method": [0, 1, 2]}
    space = Searchspace(tune_params, ["block_size_x * tile_size <= 256", "use_method != 1 or tile_size > 1"], 1024)
    options = {"strategy_options": {"seed": 1}, "objective": "time", "objective_higher_is_better": False}
    opt = atvoss.kernel_tuner.make_optimizer(space, options)
    asked = []
    while batch := opt.ask(8):
        asked += batch
        opt.tell(batch, [1.0] * len(batch))
    assert sorted(tuple(c[n] for n in tune_params) for c in asked) == sorted(space.list)


def test_stays_inside_the_restrictions_in_a_real_run(recorded):
    restriction = ["block_size_x * tile_size <= 1024"]
    results, _ = tune(recorded, atvoss.kernel_tuner, restrictions=restriction, max_fevals=30, seed=2)
    assert len(results) == 30
    assert all(r["block_size_x"] * r["tile_size"] <= 1024 for r in results)


def test_the_seed_repeats_the_run(recorded):
    doc, _ = recorded
    first = keys(doc, tune(recorded, atvoss.kernel_tuner, max_fevals=25, seed=3)[0])
    again = keys(doc, tune(recorded, atvoss.kernel_tuner, max_fevals=25, seed=3)[0])
    other = keys(doc, tune(recorded, atvoss.kernel_tuner, max_fevals=25, seed=4)[0])
    assert first == again and first != other


def test_learns_to_avoid_failed_configurations(recorded):
    doc, _ = recorded
    failed = sum(isinstance(e["time"], str) for e in doc["cache"].values()) / len(doc["cache"])
    results, _ = tune(recorded, atvoss.kernel_tuner, max_fevals=60, seed=5)
    later = results[30:]
    assert sum("__error__" in r for r in later) / len(later) < failed  # 8 % of the space failed


def test_beats_kernel_tuners_random_sampling(recorded):
    doc, _ = recorded
    ours, theirs = [], []
    for seed in range(1, 6):
        ours.append(best_fraction(doc, tune(recorded, atvoss.kernel_tuner, max_fevals=40, seed=seed)[0]))
        np.random.seed(seed)
        theirs.append(best_fraction(doc, tune(recorded, "random_sample", max_fevals=40)[0]))
    assert statistics.median(ours) > statistics.median(theirs)


def test_options_it_does_not_take_are_refused_by_name(recorded):
    with pytest.raises(ValueError, match="unknown strategy_options 'popsize'"):
        tune(recorded, atvoss.kernel_tuner, max_fevals=5, popsize=10)
    with pytest.raises(ValueError, match="strategy_options\\['batch'\\]"):
        tune(recorded, atvoss.kernel_tuner, max_fevals=5, batch=0)


@pytest.fixture(scope="module")
def milo(tmp_path_factory):
    """convolution_milo-W6600 (a needle: 4 of 4362 configurations within 1 %) as plain .json."""
    with gzip.open(os.path.join(SOURCE_DIR, "data", "recorded-spaces", "convolution_milo-W6600.json.gz"), "rt") as f:
        doc = json.load(f)
    path = tmp_path_factory.mktemp("kt") / "milo.json"
    path.write_text(json.dumps(doc))
    return doc, str(path)


def test_prior_caches_of_another_kernel_lead_to_the_needle_sooner(milo):
    """The RTX 3090 convolution's cache (other parameters, matched by name) as prior_caches."""
    doc, _ = milo
    other = os.path.join(SOURCE_DIR, "data", "recorded-spaces", "convolution-RTX_3090.json.gz")
    names, entries = doc["tune_params_keys"], set(doc["cache"])

    def restriction(p):  # the recorded space's points (Kernel Tuner reads a lambda's source)
        return ",".join(str(p[n]) for n in names) in entries
    in_cache = [restriction]
    cold, warm = [], []
    for seed in range(1, 6):
        cold.append(best_fraction(doc, tune(milo, atvoss.kernel_tuner, in_cache, max_fevals=50, seed=seed)[0]))
        warm.append(best_fraction(doc, tune(milo, atvoss.kernel_tuner, in_cache, max_fevals=50, seed=seed,
                                            prior_caches=[other])[0]))
    print(f"convolution_milo-W6600 at 50: {statistics.mean(warm):.3f} with the prior cache, "
          f"{statistics.mean(cold):.3f} without (seeds 1-5)")
    assert statistics.mean(warm) > statistics.mean(cold)


def test_prior_caches_are_checked_naming_the_option(recorded, tmp_path):
    with pytest.raises(ValueError, match=r"strategy_options\['prior_caches'\] must be a list"):
        tune(recorded, atvoss.kernel_tuner, max_fevals=5, prior_caches="a.json")
    with pytest.raises(ValueError, match=r"strategy_options\['prior_caches'\]\[0\]: not a readable"):
        tune(recorded, atvoss.kernel_tuner, max_fevals=5, prior_caches=[str(tmp_path / "missing.json")])
