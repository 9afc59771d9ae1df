"""atvoss.measure (profiles, failures as statuses, seeds), atvoss.Profiler (per-op
breakdown, bottlenecks, hints that fit the backend, sources, sampling, collected metrics,
trace.json and summary.json: docs/profiler.md), and tune_kernel_cache."""
import json
import statistics

import pytest

import atvoss
from atvoss import profiler as _profiling

NPU = "ascend910b"
HOST_MATMUL = {"op": "matmul", "dims": {"M": 64, "N": 64, "K": 64}, "dtype": "float32"}


def fake(time_us, compute=0.0, dma=0.0, launch=0.0, util=0.0, repeats=None, status="ok"):
    """A Measurement as a tune trial hands it over (any Schedule will do)."""
    if status != "ok":
        return atvoss.Measurement(atvoss.Schedule(tile_m=16), status, 0.0, [], None, "too big")
    profile = atvoss.Profile(compute_us=compute, dma_us=dma, launch_us=launch, cube_utilisation=util)
    return atvoss.Measurement(atvoss.Schedule(tile_m=64), "ok", time_us, repeats or [time_us] * 3, profile)


def op(name):
    return atvoss.Workload({"op": "matmul", "dims": {"M": name, "N": 64, "K": 64}})


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


def test_profiler_records_the_source_of_each_measurement(matmul):
    t = atvoss.Target(NPU)
    with atvoss.Profiler() as p:
        atvoss.measure(matmul, NPU, noise=0)               # tuning.py's call: the default source
        _profiling.collect(matmul, t, [fake(10.0, compute=10.0)], source="tune")
        _profiling.collect(matmul, t, [fake(20.0, dma=20.0)], source="job")
    _profiling.collect(matmul, t, [fake(30.0)], source="tune")  # after the block: not collected
    assert [r.source for r in p.records] == ["measure", "tune", "job"]
    assert [(w, t2, m) for w, t2, m in p.measurements] == [(r.workload, r.target, r.measurement) for r in p.records]
    with pytest.raises(ValueError, match="source"):
        _profiling.collect(matmul, t, [fake(1.0)], source="")


def test_profiler_writes_a_chrome_trace_and_a_summary(tmp_path, matmul):
    space = atvoss.ScheduleSpace.of(matmul, NPU)
    default = dict(space.default())
    huge = {**default, **{k: max(v) for k, v in space.knobs.items() if k.startswith("tile")}}
    big = {"op": "matmul", "dims": {"M": 1024, "N": 1024, "K": 1024}}
    out = tmp_path / "profile"                              # created on exit: its parent exists
    with atvoss.Profiler(output_dir=out) as p:
        atvoss.measure(matmul, NPU, [default, huge], noise=0)
        atvoss.measure(big, NPU, noise=0)
        atvoss.measure(matmul, NPU, noise=0.05, seed=3)
        _profiling.collect(matmul, atvoss.Target(NPU), [fake(40.0, launch=40.0), fake(2.0, dma=2.0)], source="tune")
    trace = json.loads((out / "trace.json").read_text())
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    tracks = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "thread_name"}
    assert len(events) == len(p.records) == 6 and sorted(tracks.values()) == ["measure", "tune"]
    for e, r in zip(events, p.records):
        m = r.measurement
        assert e["dur"] == pytest.approx(m.time_us) and e["args"]["status"] == m.status
        assert tracks[e["tid"]] == r.source and e["name"] == r.workload.label
        assert e["args"]["schedule"] == dict(m.schedule) and e["args"]["label"] == r.workload.label
    for tid in tracks:
        mine = [e for e in events if e["tid"] == tid]
        assert mine[0]["ts"] == 0
        for a, b in zip(mine, mine[1:]):  # end to end on each track
            assert b["ts"] == pytest.approx(a["ts"] + a["dur"]) and b["ts"] >= a["ts"]
    summary = json.loads((out / "summary.json").read_text())
    ok = [m for _w, _t, m in p.measurements if m.ok]
    for name in _profiling.METRICS:
        values = [m.time_us if name == "time_us" else getattr(m.profile, name) for m in ok]
        assert summary["overall"]["mean"][name] == pytest.approx(statistics.fmean(values)), name
    small = [m.time_us for w, _t, m in p.measurements if m.ok and w == matmul]
    assert summary["ops"][matmul.label]["mean"]["time_us"] == pytest.approx(statistics.fmean(small))
    assert summary["ops"][matmul.label]["count"] == 5 and summary["ops"][matmul.label]["failed"] == 1
    assert summary["overall"] == {**summary["overall"], "count": 6, "ok": 5, "failed": 1}
    assert [f["status"] for f in summary["failures"]] == ["invalid"]
    assert summary["sources"]["measure"]["failed_by_status"] == {"invalid": 1}
    assert summary["top_bottleneck_ops"][0]["label"] == matmul.label  # 3 runs and 40 us of trials


def test_profiler_collect_keeps_only_the_named_metrics(tmp_path, matmul):
    with atvoss.Profiler(collect=["time_us", "dma_us"], output_dir=tmp_path) as p:
        atvoss.measure(matmul, NPU)
    [r] = p.records
    assert set(r.metrics) == {"time_us", "dma_us"} and r.metrics["dma_us"] == r.measurement.profile.dma_us
    [event] = [e for e in json.loads((tmp_path / "trace.json").read_text())["traceEvents"] if e["ph"] == "X"]
    assert "dma_us" in event["args"] and "compute_us" not in event["args"]
    assert set(json.loads((tmp_path / "summary.json").read_text())["overall"]["mean"]) == {"time_us", "dma_us"}
    assert p.report()["ops"][0].compute_us > 0  # the report keeps the whole Profile


def test_profiler_checks_its_arguments(tmp_path):
    with pytest.raises(ValueError, match="collect.*cube_utilisation"):  # names the allowed ones
        atvoss.Profiler(collect=["time_us", "flops"])
    with pytest.raises(TypeError, match="collect"):
        atvoss.Profiler(collect="time_us")
    with pytest.raises(ValueError, match="interval_us"):
        atvoss.Profiler(interval_us=-1)
    with pytest.raises(TypeError, match="interval_us"):
        atvoss.Profiler(interval_us=0.5)
    a_file = tmp_path / "file"
    a_file.write_text("")
    with pytest.raises(ValueError, match="output_dir"):
        atvoss.Profiler(output_dir=a_file)
    with pytest.raises(FileNotFoundError, match="output_dir"):
        atvoss.Profiler(output_dir=tmp_path / "missing" / "out")
    with pytest.raises(ValueError, match="'k'"):
        atvoss.Profiler().top_bottleneck_ops(0)


def test_profiler_interval_keeps_one_measurement_per_interval_of_measured_time(matmul):
    t = atvoss.Target(NPU)
    with atvoss.Profiler(interval_us=10) as p:
        # Starts on the "tune" clock: 0, 4, 8, 12 (failed: 0 us), 12, 16, 20, 24; kept when
        # 10 us or more after the last kept start: 0, 12 (the failure), 24.
        trials = [fake(4.0, compute=4.0) for _ in range(3)] + [fake(0, status="invalid")]
        _profiling.collect(matmul, t, trials + [fake(4.0, compute=4.0) for _ in range(4)], source="tune")
        _profiling.collect(matmul, t, [fake(4.0, compute=4.0)], source="job")  # its own clock
    assert [(r.source, r.start_us) for r in p.records] == [("tune", 0), ("tune", 12), ("tune", 24), ("job", 0)]
    assert p.records[1].measurement.status == "invalid"
    tune = p.stats()["sources"]["tune"]
    assert (tune["seen"], tune["kept"], tune["measured_us"], tune["failed"]) == (8, 3, 28, 1)
    ts = [e["ts"] for e in p.trace_events()["traceEvents"] if e["ph"] == "X" and e["cat"] == "tune"]
    assert ts == [0, 12, 24]  # the gaps are the dropped measurements' time


def test_top_bottleneck_ops_groups_by_label_by_total_time():
    t = atvoss.Target(NPU)
    a, b, c = op(128), op(256), op(512)
    with atvoss.Profiler() as p:
        # a: 30 us in 3 measurements, 20 of them DMA-bound (not the first); b: one of 25 us;
        # c: 5 us measured.
        _profiling.collect(a, t, [fake(10.0, compute=9, dma=1), fake(10.0, compute=1, dma=8, launch=1)], source="tune")
        _profiling.collect(b, t, [fake(25.0, compute=25.0)], source="tune")
        _profiling.collect(a, t, [fake(10.0, compute=1, dma=9)], source="tune")
        _profiling.collect(c, t, [fake(5.0, launch=5.0), fake(0, status="invalid")])
    top = p.top_bottleneck_ops(2)
    assert [o.label for o in top] == [a.label, b.label]
    assert (top[0].count, top[0].total_us, top[0].mean_us) == (3, 30.0, 10.0)
    assert [o.share for o in top] == pytest.approx([30 / 60, 25 / 60])
    assert top[0].bottleneck == "dma" and top[1].bottleneck == "compute" and top[0].hint
    assert top[0].hint == next(o.hint for o in p.report()["ops"] if o.bottleneck == "dma")
    [only_c] = p.top_bottleneck_ops(5, source="measure")
    assert (only_c.label, only_c.count, only_c.share, only_c.bottleneck) == (c.label, 1, 1.0, "launch")


def test_host_measurements_get_cpu_hints_npu_ones_atvoss_analyze(matmul):
    host = atvoss.Target("host")
    with atvoss.Profiler() as p:
        [real] = atvoss.measure(HOST_MATMUL, host)          # one real host kernel (compiled once, cached)
        atvoss.measure(matmul, NPU)
        _profiling.collect(op(8), host, [fake(50.0, compute=50.0, util=0.9)], source="tune")
        _profiling.collect(op(16), host, [fake(40.0, compute=40.0, util=0.1, repeats=[30.0, 40.0, 50.0])],
                           source="tune")
    assert real.ok, real.message
    ops = {o.label: o for o in p.report()["ops"]}
    host_op = ops[atvoss.Workload(HOST_MATMUL).label]
    assert host_op.bottleneck == ("compute" if real.profile.cube_utilisation >= 0.5 else "memory")
    assert "peak FLOP/s" in host_op.hint and "cube" not in host_op.hint
    fast, slow = ops[op(8).label], ops[op(16).label]
    assert fast.bottleneck == "compute" and "90% of the peak" in fast.hint and "vary" not in fast.hint
    assert slow.bottleneck == "memory" and "vary by 20%" in slow.hint and "cube" not in slow.hint
    npu_op = ops[matmul.label]
    m = next(m for _w, _t, m in p.measurements if _t.name == NPU)
    expected = json.loads(atvoss._atvoss.analyze(json.dumps(m.to_json()), json.dumps(dict(m.schedule))))
    assert (npu_op.bottleneck, npu_op.hint) == (expected["bottleneck"], expected["hint"])

    # The host backend gives the CPU reading in C++, for any caller that holds a host measurement.
    cpu = json.loads(atvoss._atvoss.analyze(json.dumps(real.to_json()), json.dumps(dict(real.schedule)),
                                            json.dumps(atvoss.Workload(HOST_MATMUL).to_json()),
                                            json.dumps(host.to_json())))
    assert (cpu["bottleneck"], cpu["hint"]) == (host_op.bottleneck, host_op.hint)


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


def test_the_profiler_collects_an_optimizers_results():
    def objective(x, layout):
        if x == 3:
            raise RuntimeError("no such kernel")
        return 10.0 * x + (1 if layout == "b" else 0)

    with atvoss.Profiler() as p:
        atvoss.minimize(objective, {"x": [1, 2, 3], "layout": ["a", "b"]}, trials=6, seed=1)
    kept = [r for r in p.records if r.source == "objective"]
    assert len(kept) == 6
    assert sum(not r.measurement.ok for r in kept) == 2
    assert {r.measurement.time_us for r in kept if r.measurement.ok} == {10.0, 11.0, 20.0, 21.0}
    assert all(str(r.workload.to_json()["name"]) == "objective" for r in kept)
    assert "no such kernel" in p.summary()


@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory"])
def test_the_profiler_refuses_to_replace_what_is_not_a_regular_file(tmp_path, kind):
    import os

    out = tmp_path / "prof"
    out.mkdir()
    victim = tmp_path / "victim.json"
    victim.write_text("keep")
    where = out / "summary.json"
    {"symlink": lambda: where.symlink_to(victim), "fifo": lambda: os.mkfifo(where),
     "directory": lambda: where.mkdir()}[kind]()
    p = atvoss.Profiler()
    with pytest.raises(ValueError, match="summary.json' is"):
        p.write(out)
    assert victim.read_text() == "keep"
    assert os.path.islink(where) if kind == "symlink" else not os.path.isfile(where)
