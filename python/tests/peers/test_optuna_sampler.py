"""atvoss.optuna.Sampler drives real Optuna studies (the peers' environment's optuna,
scripts/peers-requirements.txt): it finds the optimum of a small discrete objective,
repeats its trials for a seed, never evaluates a point twice (enqueued trials included),
maximises, and refuses what it cannot search naming the parameter."""
import optuna
import pytest

import atvoss.optuna

optuna.logging.set_verbosity(optuna.logging.WARNING)

COLOUR = {"red": 0.7, "green": 0.0, "blue": 1.3}


def objective(trial):
    """105 points (7 x 5 x 3); the one optimum is x=2, y=1.5, colour green (value 0)."""
    x = trial.suggest_int("x", -3, 3)
    y = trial.suggest_float("y", 0.0, 2.0, step=0.5)
    colour = trial.suggest_categorical("colour", list(COLOUR))
    return (x - 2) ** 2 + 2 * (y - 1.5) ** 2 + COLOUR[colour]


def run(seed, trials, enqueue=()):
    study = optuna.create_study(sampler=atvoss.optuna.Sampler(seed=seed))
    for params in enqueue:
        study.enqueue_trial(params)
    study.optimize(objective, n_trials=trials)
    return study


def points(study):
    return [(t.params["x"], t.params["y"], t.params["colour"]) for t in study.trials]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_finds_the_optimum_of_a_small_discrete_objective(seed):
    study = run(seed, 40)
    assert study.best_value == 0.0
    assert study.best_params == {"x": 2, "y": 1.5, "colour": "green"}


def test_the_same_seed_gives_the_same_trials():
    first, again, other = run(7, 20), run(7, 20), run(8, 20)
    assert points(first) == points(again)
    assert [t.value for t in first.trials] == [t.value for t in again.trials]
    assert points(first) != points(other)


def test_no_point_is_evaluated_twice_enqueued_ones_included():
    enqueued = [{"x": -3, "y": 0.0, "colour": "red"}, {"x": 0, "y": 1.0, "colour": "blue"}]
    study = run(4, 60, enqueue=enqueued)
    seen = points(study)
    assert seen[:2] == [tuple(p.values()) for p in enqueued]
    assert len(set(seen)) == len(seen)


def test_maximises_when_the_study_does():
    study = optuna.create_study(direction="maximize", sampler=atvoss.optuna.Sampler(seed=5))
    study.optimize(lambda t: -objective(t), n_trials=40)
    assert study.best_value == 0.0


def test_a_failed_trial_is_kept_and_the_search_goes_on():
    def sometimes_fails(trial):
        value = objective(trial)
        if trial.params["colour"] == "blue":
            raise RuntimeError("blue does not compile")
        return value

    study = optuna.create_study(sampler=atvoss.optuna.Sampler(seed=6))
    study.optimize(sometimes_fails, n_trials=40, catch=(RuntimeError,))
    assert study.best_value == 0.0
    assert any(t.state == optuna.trial.TrialState.FAIL for t in study.trials)


def test_a_continuous_float_is_refused_naming_the_parameter():
    def continuous(trial):
        return trial.suggest_float("learning_rate", 1e-4, 1e-1, log=True)

    study = optuna.create_study(sampler=atvoss.optuna.Sampler(seed=1))
    with pytest.raises(ValueError, match="'learning_rate' is a continuous float"):
        study.optimize(continuous, n_trials=2)


def test_a_parameter_with_too_many_values_is_refused_naming_it():
    study = optuna.create_study(sampler=atvoss.optuna.Sampler(seed=1))
    with pytest.raises(ValueError, match="'n' has 1000001 values"):
        study.optimize(lambda t: t.suggest_int("n", 0, 1_000_000), n_trials=1)


def test_a_multi_objective_study_is_refused():
    study = optuna.create_study(directions=["minimize", "minimize"], sampler=atvoss.optuna.Sampler(seed=1))
    with pytest.raises(ValueError, match="one objective"):
        study.optimize(lambda t: (objective(t), 1.0), n_trials=1)


def test_values_of_maps_the_distributions_optuna_users_use():
    d = optuna.distributions
    assert atvoss.optuna.values_of("c", d.CategoricalDistribution(["a", None, 3])) == ["a", None, 3]
    assert atvoss.optuna.values_of("i", d.IntDistribution(2, 10, step=4)) == [2, 6, 10]
    assert atvoss.optuna.values_of("l", d.IntDistribution(1, 4, log=True)) == [1, 2, 3, 4]
    assert atvoss.optuna.values_of("f", d.FloatDistribution(0.0, 1.0, step=0.25)) == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_one_sampler_serves_two_studies_one_after_the_other():
    sampler = atvoss.optuna.Sampler(seed=9)
    for _ in range(2):
        study = optuna.create_study(sampler=sampler)
        study.optimize(objective, n_trials=40)
        assert study.best_value == 0.0 and len(set(points(study))) == 40
