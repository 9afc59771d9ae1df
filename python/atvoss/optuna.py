"""atvoss's search as an Optuna sampler: ``optuna.create_study(sampler=atvoss.optuna.Sampler(seed=1))``
keeps an Optuna user's objective, study, storage and pruners and searches with an atvoss
strategy (the model-guided default, or any name in ``atvoss.strategy_names()``) through
``atvoss.Optimizer``.

Optuna is imported here only (``import atvoss`` never needs it). What maps
(docs/decisions/peers-kernel-tuner-optuna.md):

- ``suggest_categorical``: the choices, as they are;
- ``suggest_int`` (with ``step``, or ``log=True``): every integer of the range, searched by value;
- ``suggest_float(..., step=s)``: the grid low, low + s, ..., high;
- a continuous ``suggest_float`` (no step) does not map: atvoss searches discrete spaces, and
  the first suggest raises ValueError naming the parameter;
- a distribution with one value is Optuna's to fill (it never reaches a sampler).

Optuna's search space is define-by-run: until a trial has completed, the sampler does not
know it, so the first trial's values are drawn uniformly (seeded) and then told to the
strategy. Trials the strategy did not choose (enqueued ones, the first, trials of other
processes sharing the storage, a study resumed from storage) reach it through
``Optimizer.observe``. Failed and pruned trials are failures to the strategy. One objective
only.
"""
import random
import threading
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

try:
    import optuna
except ImportError as e:  # said plainly: atvoss itself never needs the peer
    raise ImportError("atvoss.optuna needs Optuna (pip install optuna; the tested version is "
                      "pinned in scripts/peers-requirements.txt)") from e
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.study import Study, StudyDirection
from optuna.trial import FrozenTrial, TrialState

from .optimizer import Config, Optimizer
from .tuning import _UINT64_MAX, _check_int

# Values one parameter may have: beyond, the space is better given a step (or log grid).
MAX_VALUES = 100_000

_FINISHED = (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)


def values_of(name: str, distribution: BaseDistribution) -> List[Any]:
    """The values atvoss searches for one Optuna distribution, in order; ValueError naming the
    parameter when it has none that map (a continuous float, too many values)."""
    if isinstance(distribution, CategoricalDistribution):
        return list(distribution.choices)
    if isinstance(distribution, IntDistribution):
        count = (distribution.high - distribution.low) // distribution.step + 1
        _check_count(name, count, "suggest_int")
        return list(range(distribution.low, distribution.high + 1, distribution.step))
    if isinstance(distribution, FloatDistribution):
        if distribution.step is None:
            raise ValueError(f"atvoss.optuna.Sampler: parameter '{name}' is a continuous float "
                             f"(suggest_float without step); atvoss searches discrete spaces: give it a step "
                             f"(suggest_float('{name}', {distribution.low}, {distribution.high}, step=...)) "
                             f"or its values with suggest_categorical")
        count = int(round((distribution.high - distribution.low) / distribution.step)) + 1
        _check_count(name, count, "suggest_float")
        return [distribution.low + i * distribution.step for i in range(count)]
    raise ValueError(f"atvoss.optuna.Sampler: parameter '{name}' has a distribution atvoss cannot search "
                     f"({type(distribution).__name__})")


def _check_count(name: str, count: int, call: str) -> None:
    if count > MAX_VALUES:
        raise ValueError(f"atvoss.optuna.Sampler: parameter '{name}' has {count} values, more than the "
                         f"{MAX_VALUES} atvoss searches per parameter; give {call} a larger step")


class _Param:
    """One parameter of the current space: its distribution and the values searched."""

    def __init__(self, name: str, distribution: BaseDistribution) -> None:
        self.name, self.distribution = name, distribution
        self.values = values_of(name, distribution)

    def point(self, value: Any) -> Optional[Any]:
        """The searched value an Optuna value stands for (a float matched to its grid step),
        or None if it is not one of them."""
        d = self.distribution
        if isinstance(d, FloatDistribution) and d.step is not None:
            i = int(round((float(value) - d.low) / d.step))
            return self.values[i] if 0 <= i < len(self.values) and d._contains(float(value)) else None
        return value if any(v == value and type(v) is type(value) for v in self.values) else None


class Sampler(optuna.samplers.BaseSampler):
    """An Optuna sampler searching with an atvoss strategy (``atvoss.Optimizer``).

    seed: the same seed, objective and study give the same trials (one process, n_jobs=1).
    strategy / strategy_config: as for atvoss.Optimizer (default: model-guided). The study's
    direction is the Optimizer's; multi-objective studies are refused."""

    def __init__(self, *, seed: int = 0, strategy: str = "model-guided",
                 strategy_config: Optional[Mapping[str, Any]] = None) -> None:
        _check_int(seed, "seed", 0, _UINT64_MAX)
        self._seed, self._strategy, self._strategy_config = seed, strategy, dict(strategy_config or {})
        self._rng = random.Random(seed)  # the first trial's values (before the space is known)
        self._lock = threading.RLock()
        self._space = optuna.search_space.IntersectionSearchSpace()
        self._params: List[_Param] = []
        self._opt: Optional[Optimizer] = None
        self._study = ""  # the study the Optimizer serves: trial numbers are per study
        self._known: Set[int] = set()  # trial numbers the current Optimizer was told or observed
        self._asked: Dict[int, Config] = {}  # trial number -> the Optimizer's pending config
        self._spare: List[Config] = []  # asked configs a trial did not use (its params were fixed)

    def reseed_rng(self) -> None:
        """Optuna calls this in each worker of n_jobs > 1 or a forked process: a fresh seed, so
        workers do not propose the same points (such runs are not reproducible)."""
        with self._lock:
            self._seed = random.SystemRandom().randrange(_UINT64_MAX)
            self._rng = random.Random(self._seed)
            self._opt = None  # rebuilt with the new seed, observing the finished trials

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        """Refuses a multi-objective study before its first trial runs."""
        self._check_single_objective(study)

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> Dict[str, BaseDistribution]:
        """The parameters every finished trial suggested (Optuna's intersection), but those
        with a single value."""
        return {n: d for n, d in self._space.calculate(study).items() if not d.single()}

    def sample_relative(self, study: Study, trial: FrozenTrial,
                        search_space: Dict[str, BaseDistribution]) -> Dict[str, Any]:
        """The strategy's next configuration for the parameters of search_space."""
        if not search_space or self._fully_fixed(trial, search_space):
            return {}
        with self._lock:
            opt = self._optimizer(study, search_space)
            self._observe_finished(study, opt)
            config = self._spare.pop(0) if self._spare else None
            if config is None:
                asked = opt.ask(1)
                if not asked:
                    return {}  # every point was evaluated: Optuna falls back to sample_independent
                config = asked[0]
            self._asked[trial.number] = config
            return dict(config)

    def sample_independent(self, study: Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        """A value drawn uniformly (seeded) from the parameter's searched values: the first
        trial, and parameters outside the relative space (conditional ones)."""
        values = values_of(param_name, param_distribution)
        with self._lock:
            return values[self._rng.randrange(len(values))]

    def after_trial(self, study: Study, trial: FrozenTrial, state: TrialState,
                    values: Optional[Sequence[float]]) -> None:
        """Tells the strategy the result of the configuration it proposed for this trial."""
        with self._lock:
            config = self._asked.pop(trial.number, None)
            if config is None or self._opt is None:
                return  # not the strategy's: observed at the next sample_relative
            if any(n in trial.params and trial.params[n] != v for n, v in config.items()):
                self._spare.append(config)  # the trial ran fixed values (enqueued): observed later
                return
            result = values[0] if state == TrialState.COMPLETE and values else None
            self._opt.tell(config, result)
            self._known.add(trial.number)

    @staticmethod
    def _check_single_objective(study: Study) -> None:
        if len(study.directions) != 1:
            raise ValueError(f"atvoss.optuna.Sampler optimises one objective; this study has "
                             f"{len(study.directions)} directions")

    @staticmethod
    def _fully_fixed(trial: FrozenTrial, search_space: Mapping[str, BaseDistribution]) -> bool:
        fixed = trial.system_attrs.get("fixed_params", {})
        return all(n in fixed for n in search_space)

    def _optimizer(self, study: Study, search_space: Mapping[str, BaseDistribution]) -> Optimizer:
        """The Optimizer over search_space: rebuilt (observing every finished trial) when the
        space or the study changed, or after reseed_rng."""
        same_space = [(p.name, p.distribution) for p in self._params] == list(search_space.items())
        if self._opt is not None and same_space and self._study == study.study_name:
            return self._opt
        self._study = study.study_name
        self._params = [_Param(n, d) for n, d in search_space.items()]
        direction = "maximize" if study.direction == StudyDirection.MAXIMIZE else "minimize"
        # Pending configs of the old Optimizer are dropped; their trials are observed when done.
        self._asked.clear()
        self._spare.clear()
        self._known.clear()
        self._opt = Optimizer({p.name: p.values for p in self._params}, direction=direction,
                              strategy=self._strategy, seed=self._seed, name="optuna",
                              strategy_config=self._strategy_config)
        return self._opt

    def _observe_finished(self, study: Study, opt: Optimizer) -> None:
        """Tells the strategy the finished trials it has not seen (not proposed by it)."""
        configs, results = [], []
        for t in study.get_trials(deepcopy=False, states=_FINISHED):
            if t.number in self._known or t.number in self._asked:
                continue
            self._known.add(t.number)
            config = self._config_of(t)
            if config is not None:
                configs.append(config)
                results.append(t.values[0] if t.state == TrialState.COMPLETE and t.values else None)
        if configs:
            opt.observe(configs, results)

    def _config_of(self, trial: FrozenTrial) -> Optional[Config]:
        """The trial's values as a point of the current space (None if it is not one)."""
        config = {}
        for p in self._params:
            if p.name not in trial.params:
                return None
            value = p.point(trial.params[p.name])
            if value is None:
                return None
            config[p.name] = value
        return config


__all__ = ["MAX_VALUES", "Sampler", "values_of"]
