"""Python search policies: registered by name, used by tune and by a job spec, checked by
the C++ adapter (invalid, duplicate and re-proposed schedules refused), and a policy that
raises is its own error (StrategyError with the traceback) while the database stays intact."""
import pytest

import atvoss
from conftest import MATMUL


class Shuffled(atvoss.SearchStrategy):
    """Valid schedules in a seeded random order; remembers what it proposed and was told."""

    proposed = []
    updated = []

    def propose(self, n):
        out = []
        knobs = self.space.knobs
        tries = 0
        while len(out) < n and tries < 2000:
            tries += 1
            s = {k: self.rng.choice(v) for k, v in knobs.items()}
            key = tuple(sorted(s.items()))
            if key in self.seen or not self.space.check(s)[0]:
                continue
            self.seen.add(key)
            out.append(atvoss.Schedule(s))
        type(self).proposed.extend(out)
        return out

    def update(self, trials):
        type(self).updated.extend(trials)

    def observe(self, trials):
        for t in trials:
            self.seen.add(tuple(sorted(t.schedule.items())))

    def __init__(self, *args):
        super().__init__(*args)
        self.seen = set()


@pytest.fixture
def shuffled():
    Shuffled.proposed, Shuffled.updated = [], []
    atvoss.register_strategy(name="py-shuffled", priority=5)(Shuffled)
    yield Shuffled
    atvoss.unregister_strategy("py-shuffled")


def test_registered_policy_drives_tune(shuffled, matmul, db_path):
    assert "py-shuffled" in atvoss.strategy_names()
    r = atvoss.tune(matmul, "ascend910b", trials=13, strategy="py-shuffled", db=db_path, seed=3, batch_size=4)
    assert r.trials == 13
    history = atvoss.Database(db_path).history(matmul)
    default = atvoss.ScheduleSpace.of(matmul, "ascend910b").default()
    measured = [atvoss.Schedule(h["schedule"]) for h in history if atvoss.Schedule(h["schedule"]) != default]
    assert sorted(s.key for s in measured) == sorted(s.key for s in shuffled.proposed)
    assert {t.schedule.key for t in shuffled.updated} == {s.key for s in shuffled.proposed}
    assert all(t.ok == (t.status == "ok") for t in shuffled.updated)
    # The class itself names the strategy too.
    again = atvoss.tune(matmul, "ascend910b", trials=17, strategy=Shuffled, db=db_path, seed=3, batch_size=4)
    assert again.resumed == 13 and again.measured == 4


def test_policy_runs_in_a_job_spec(shuffled, tmp_path):
    spec = {"name": "pyjob", "target": "ascend910b", "workloads": [{"workload": MATMUL}], "trials": 9,
            "strategy": "py-shuffled", "batch_size": 4, "database": str(tmp_path / "j.db"),
            "export": str(tmp_path / "t.json"), "report": str(tmp_path / "r.html")}
    summary = atvoss.run_job(spec)
    # The job measures the default and the task's zero-shot pick first; the policy proposes the rest.
    assert summary["trials"] == 9 and len(shuffled.proposed) >= 7
    resumed = atvoss.run_job({**spec, "trials": 13})  # a fresh policy, shown the stored history
    assert resumed["resumed"] == 9 and resumed["measured"] == 4


class Exploding(atvoss.SearchStrategy):
    """Proposes one good batch, then fails inside a helper."""

    rounds = 0

    def propose(self, n):
        type(self).rounds += 1
        if type(self).rounds > 1:
            self._broken_helper()
        return self._one_valid(n)

    def _one_valid(self, n):
        out = []
        for m in self.space.knobs["tile_m"]:
            s = dict(self.space.default())
            s["tile_m"] = m
            if self.space.check(s)[0] and s != dict(self.space.default()):
                out.append(s)
        return out[:n]

    def _broken_helper(self):
        raise KeyError("policy-bug-42")


def test_a_failing_policy_is_its_own_error_and_harms_nothing(matmul, db_path):
    Exploding.rounds = 0
    atvoss.register_strategy(name="py-exploding")(Exploding)
    try:
        with pytest.raises(atvoss.StrategyError) as info:
            atvoss.tune(matmul, "ascend910b", trials=40, strategy="py-exploding", db=db_path, batch_size=2)
    finally:
        atvoss.unregister_strategy("py-exploding")
    text = str(info.value)
    assert "py-exploding" in text and "policy-bug-42" in text and "_broken_helper" in text  # traceback
    assert isinstance(info.value, RuntimeError)
    db = atvoss.Database(db_path)
    assert db.check() == "ok"
    stored = db.stats()["records"]
    assert stored == 3  # the default and the first round, committed before the failure
    r = atvoss.tune(matmul, "ascend910b", trials=stored + 4, strategy="random", db=db_path, batch_size=2)
    assert r.resumed == stored and r.measured == 4


def another_valid(space):
    """A valid schedule other than the default: the default with another tile_m."""
    for m in space.knobs["tile_m"]:
        s = {**dict(space.default()), "tile_m": m}
        if space.check(s)[0] and s != dict(space.default()):
            return s


@pytest.mark.parametrize("bad, words", [
    (lambda self, n: [{"tile_m": 3}], "outside the space"),
    (lambda self, n: [dict(self.space.default())], "measured already"),
    (lambda self, n: [self._valid(), self._valid()], "twice"),
    (lambda self, n: ["tile_m"], "dicts"),
    (lambda self, n: [{"tile_m": 2**200}], "knob 'tile_m' = 1606938044258990275541962092341162602522 does not fit"),
])
def test_the_adapter_refuses_bad_proposals(matmul, bad, words):
    class Bad(atvoss.SearchStrategy):
        propose = bad

        def _valid(self):
            return another_valid(self.space)

    atvoss.register_strategy(name="py-bad")(Bad)
    try:
        with pytest.raises(atvoss.StrategyError, match=words):
            atvoss.tune(matmul, "ascend910b", trials=8, strategy="py-bad", batch_size=4)
    finally:
        atvoss.unregister_strategy("py-bad")


# update() also serves observe() (the default schedule measured first is observed).
@pytest.mark.parametrize("stuck_in, call", [("propose", "propose"), ("update", "(observe|update)")])
def test_a_policy_call_that_never_returns_ends_at_its_deadline(matmul, db_path, stuck_in, call):
    class Stuck(atvoss.SearchStrategy):
        call_timeout_s = 0.3

        def propose(self, n):
            while stuck_in == "propose":
                pass
            return [another_valid(self.space)]

        def update(self, trials):
            while stuck_in == "update":
                pass

    atvoss.register_strategy(name="py-stuck")(Stuck)
    try:
        with pytest.raises(atvoss.StrategyError, match=rf"{call}\(\) did not return within 0.3 s"):
            atvoss.tune(matmul, "ascend910b", trials=8, strategy="py-stuck", batch_size=4, db=db_path)
        # Nothing was left pending: the interpreter and the database carry on.
        assert sum(range(10)) == 45
        assert atvoss.tune(matmul, "ascend910b", trials=3, strategy="random", db=db_path).trials >= 3
    finally:
        atvoss.unregister_strategy("py-stuck")


def test_keyboard_interrupt_in_a_policy_stays_keyboard_interrupt(matmul):
    class Interrupted(atvoss.SearchStrategy):
        def propose(self, n):
            raise KeyboardInterrupt

    atvoss.register_strategy(name="py-int")(Interrupted)
    try:
        with pytest.raises(KeyboardInterrupt):
            atvoss.tune(matmul, "ascend910b", trials=8, strategy="py-int", batch_size=4)
    finally:
        atvoss.unregister_strategy("py-int")


def test_can_apply_priority_and_auto(shuffled, matmul):
    class MatmulOnly(Shuffled):
        @classmethod
        def can_apply(cls, workload, target):
            return workload.op == "conv2d"

    atvoss.register_strategy(name="py-conv-only", priority=9)(MatmulOnly)
    try:
        with pytest.raises(ValueError, match="does not apply"):
            atvoss.tune(matmul, "ascend910b", trials=4, strategy="py-conv-only")
        from atvoss.strategy import resolve_strategy

        # py-conv-only outranks py-shuffled but does not apply to a matmul.
        assert resolve_strategy("auto", matmul, atvoss.Target("ascend910b")) == "py-shuffled"
    finally:
        atvoss.unregister_strategy("py-conv-only")


def test_registration_errors():
    with pytest.raises(ValueError, match="built-in"):
        atvoss.register_strategy(name="random")(Shuffled)
    with pytest.raises(TypeError):
        atvoss.register_strategy(name="x")(object)
    with pytest.raises(ValueError, match="not registered"):
        class Unregistered(atvoss.SearchStrategy):
            pass

        atvoss.tune(MATMUL, "ascend910b", trials=4, strategy=Unregistered)
    assert not atvoss.unregister_strategy("never-registered")
    # A class without propose failed only when tune called it.
    class NoPropose(atvoss.SearchStrategy):
        pass

    with pytest.raises(TypeError, match="NoPropose does not define propose"):
        atvoss.register_strategy(name="py-no-propose")(NoPropose)
    assert "py-no-propose" not in atvoss.strategy_names()


def test_a_policy_that_runs_out_warns(matmul):
    class One(atvoss.SearchStrategy):
        done = False

        def propose(self, n):
            if self.done:
                return []
            self.done = True
            return [another_valid(self.space)]

    atvoss.register_strategy(name="py-one")(One)
    try:
        with pytest.warns(RuntimeWarning, match=r"stopped after 2 of 8 trials: strategy 'py-one' proposed no new"):
            r = atvoss.tune(matmul, "ascend910b", trials=8, strategy="py-one")
        assert r.stop_reason == "exhausted"
    finally:
        atvoss.unregister_strategy("py-one")
