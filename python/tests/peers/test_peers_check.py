"""The short peer check CI runs (seconds): Kernel Tuner and Optuna are installed at the
versions scripts/peers-requirements.txt pins, import, and each completes one small tuning
run of its own and one searched by atvoss through its adapter. Kernel Tuner's run is live:
it compiles a C function with g++ and times it on this CPU (its C backend)."""
import importlib.metadata
import os

import numpy as np
import pytest

from conftest import SOURCE_DIR

PEERS = ("kernel-tuner", "optuna", "cmaes")

# Sums an array with a tunable unroll; returns its own time in ms, as Kernel Tuner's C backend expects.
KERNEL = r"""
#include <time.h>
extern "C" float sum(float* out, const float* x, int n) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  float acc[UNROLL] = {0};
  for (int i = 0; i + UNROLL <= n; i += UNROLL)
    for (int u = 0; u < UNROLL; ++u) acc[u] += x[i + u];
  float s = 0;
  for (int u = 0; u < UNROLL; ++u) s += acc[u];
  out[0] = s;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (float)((t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) * 1e-6);
}
"""


def pins():
    out = {}
    with open(os.path.join(SOURCE_DIR, "scripts", "peers-requirements.txt")) as f:
        for line in f:
            line = line.split("#")[0].strip()
            if "==" in line:
                name, version = line.split("==")
                out[name.strip().lower()] = version.strip()
    return out


@pytest.mark.parametrize("peer", PEERS)
def test_the_pinned_peer_is_installed(peer):
    assert importlib.metadata.version(peer) == pins()[peer]


def kernel_tuner_run(strategy, options):
    import kernel_tuner
    n = 1 << 16
    x = np.ones(n, np.float32)
    out = np.zeros(1, np.float32)
    results, _ = kernel_tuner.tune_kernel(
        "sum", KERNEL, n, [out, x, np.int32(n)], {"UNROLL": [1, 2, 4, 8, 16]}, lang="C",
        compiler_options=["-O2"], answer=[np.array([n], np.float32), None, None], iterations=3,
        strategy=strategy, strategy_options=options, quiet=True)
    return results


def test_kernel_tuner_compiles_and_times_a_c_kernel():
    results = kernel_tuner_run("brute_force", {})
    assert sorted(r["UNROLL"] for r in results) == [1, 2, 4, 8, 16]
    assert all("__error__" not in r and r["time"] > 0 for r in results)


def test_kernel_tuner_with_atvoss_as_its_strategy():
    import atvoss.kernel_tuner
    results = kernel_tuner_run(atvoss.kernel_tuner, {"max_fevals": 3, "seed": 1})
    assert len({r["UNROLL"] for r in results}) == 3
    assert all("__error__" not in r and r["time"] > 0 for r in results)


def test_optuna_tpe_and_atvoss_sampler_complete_a_study():
    import optuna
    import atvoss.optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    def objective(trial):
        return (trial.suggest_int("x", 0, 9) - 6) ** 2 + trial.suggest_categorical("c", [0.5, 0.0])

    for sampler in (optuna.samplers.TPESampler(seed=1), atvoss.optuna.Sampler(seed=1)):
        study = optuna.create_study(sampler=sampler)
        study.optimize(objective, n_trials=12)
        assert len(study.trials) == 12 and study.best_value <= 1.0
