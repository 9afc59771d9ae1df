"""atvoss.measure (profiles, failures as statuses, seeds) and atvoss.Profiler (per-op
breakdown, bottlenecks, atvoss-analyze's hints), and tune_kernel_cache."""
import pytest

import atvoss


def test_measure_default_and_given_schedules(matmul):
    space = atvoss.ScheduleSpace.of(matmul, "ascend910b")
    default = space.default()
    [m] = atvoss.measure(matmul, "ascend910b", repeat=3, noise=0)
    assert m.ok and m.schedule == default and len(m.repeats) == 3 and m.time_us > 0
    p = m.profile
    assert p.compute_us > 0 and 0 <= p.cube_utilisation <= 1 and p.kernels >= 1
    # Same seed derivation as the tuner: measure() agrees with what tune stored for the default.
    r = atvoss.tune(matmul, "ascend910b", trials=1, strategy="random", repeat=3)
    assert r.default_us == pytest.approx(atvoss.measure(matmul, "ascend910b", noise=0.02)[0].time_us)


def test_measure_reports_invalid_schedules_as_statuses(matmul):
    space = atvoss.ScheduleSpace.of(matmul, "ascend910b")
    default = dict(space.default())
    huge = {**default, **{k: max(v) for k, v in space.knobs.items() if k.startswith("tile")}}
    good, bad = atvoss.measure(matmul, "ascend910b", [default, huge])
    assert good.ok and not bad.ok and bad.status == "invalid" and bad.message and bad.profile is None
    with pytest.raises(ValueError, match="no_such_knob"):
        atvoss.measure(matmul, "ascend910b", [{**default, "no_such_knob": 2}])
    with pytest.raises(ValueError, match="repeat"):
        atvoss.measure(matmul, "ascend910b", repeat=0)


def test_profiler_collects_inside_the_block_only(matmul):
    atvoss.measure(matmul, "ascend910b")
    with atvoss.Profiler() as p:
        atvoss.measure(matmul, "ascend910b", noise=0)
        atvoss.measure({"op": "matmul", "dims": {"M": 2048, "N": 2048, "K": 2048}}, "ascend910b", noise=0)
    atvoss.measure(matmul, "ascend910b")
    assert len(p.measurements) == 2
    report = p.report(top=1)
    ops = report["ops"]
    assert [o.time_us for o in ops] == sorted((o.time_us for o in ops), reverse=True)
    assert report["total_us"] == pytest.approx(sum(o.time_us for o in ops))
    assert sum(o.share for o in ops) == pytest.approx(1.0)
    assert len(report["bottlenecks"]) == 1 and report["bottlenecks"][0].workload.dims["M"] == 2048
    for o in ops:
        parts = {"compute": o.compute_us, "dma": o.dma_us, "sync-wait": o.sync_wait_us, "launch": o.launch_us}
        assert o.bottleneck == max(parts, key=parts.get)  # analyze(): the largest share bounds it
        assert o.hint
    assert "hint:" in p.summary()
    with pytest.raises(ValueError, match="top"):
        p.report(top=0)


def test_tune_kernel_cache_compares_strategies(small_cache):
    results = atvoss.tune_kernel_cache(small_cache, strategies=["random", "grid"], trials=11, seed=1)
    assert set(results) == {"random", "grid"}
    for r in results.values():
        # 11 recorded configurations: every strategy finds the optimum (1 ms) and runs out.
        assert r.trials == 11 and r.best_us == pytest.approx(1000.0) and r.default_us == float("inf")
        assert r.best_schedule == {"block_size_x": 128, "tile": 2}
    short = atvoss.tune_kernel_cache(small_cache, strategies="random", trials=3, seed=1)["random"]
    assert short.trials == 3 and short.stop_reason == "budget"
    with pytest.raises(ValueError, match="path"):
        atvoss.tune_kernel_cache("/no/such/cache.json.gz")
