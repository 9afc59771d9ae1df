"""Workload, Target, Schedule and ScheduleSpace: canonical JSON, equality, repr, round
trips, and ValueError/TypeError naming the field on bad input."""
import json
import os

import pytest

import atvoss
from conftest import MATMUL


def test_workload_is_canonical_and_round_trips():
    w = atvoss.Workload(MATMUL)
    j = w.to_json()
    assert j["dtype"] == "float16"  # default filled in by core
    assert atvoss.Workload.from_json(json.dumps(j)) == w
    assert atvoss.Workload(op="matmul", dims={"M": 256, "N": 256, "K": 256}) == w
    assert atvoss.Workload(op="matmul", dims={"M": 256, "N": 256, "K": 512}) != w
    assert len({w, atvoss.Workload(j)}) == 1
    assert "matmul" in repr(w) and w.op == "matmul" and w.dims["K"] == 256


def test_workload_bad_input_names_the_field():
    with pytest.raises(ValueError, match="dtype"):
        atvoss.Workload(op="matmul", dims={"M": 1, "N": 1, "K": 1}, dtype="float7")
    with pytest.raises(ValueError, match="op"):
        atvoss.Workload({"dims": {"M": 1}})
    with pytest.raises(TypeError):
        atvoss.Workload(42)


def test_inputs_that_hung_wrapped_or_recursed_are_value_errors(tmp_path):
    # A FIFO blocked for good; 2**200 failed in a cast; deep nesting raised RecursionError.
    fifo = tmp_path / "w.fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="is not a regular file"):
        atvoss.Workload(str(fifo))
    with pytest.raises(ValueError, match="knob 'tile_m' must fit in a 64-bit integer"):
        atvoss.Schedule(tile_m=2**200)
    with pytest.raises(ValueError, match="workload: JSON nested too deeply"):
        atvoss.Workload("[" * 100000 + "]" * 100000)
    deep = {}
    cursor = deep
    for _ in range(5000):
        cursor["a"] = {}
        cursor = cursor["a"]
    with pytest.raises(ValueError, match="nested too deeply"):
        atvoss.Workload(deep)
    (tmp_path / "latin1.json").write_bytes(b'{"op": "\xff"}')
    with pytest.raises(ValueError, match="not UTF-8"):
        atvoss.Workload(str(tmp_path / "latin1.json"))


def test_target_presets_inline_json_and_files(tmp_path):
    assert "ascend910b" in atvoss.Target.presets()
    t = atvoss.Target("ascend910b")
    assert t.name == "ascend910b"
    assert atvoss.Target.from_json(t.to_json()) == t
    bigger = atvoss.Target({"preset": "ascend910b", "ai_cores": 40})
    assert bigger != t and bigger.to_json()["ai_cores"] == 40
    f = tmp_path / "chip.json"
    f.write_text(json.dumps(bigger.to_json()))
    assert atvoss.Target(str(f)) == bigger
    assert "ascend910b" in repr(t)


def test_target_bad_input():
    with pytest.raises(ValueError, match="ascend910"):  # the message lists the presets
        atvoss.Target("no-such-chip")
    with pytest.raises(TypeError):
        atvoss.Target(3)


def test_schedule_mapping_equality_and_json():
    s = atvoss.Schedule(tile_m=64, tile_n=128)
    assert s == {"tile_m": 64, "tile_n": 128}
    assert s == atvoss.Schedule.from_json('{"tile_n":128,"tile_m":64}')
    assert s != atvoss.Schedule(tile_m=64, tile_n=64)
    assert s["tile_m"] == 64 and len(s) == 2 and s.key == atvoss.Schedule(dict(s)).key
    assert repr(s) == "Schedule(tile_m=64, tile_n=128)"
    with pytest.raises(TypeError, match="tile_m"):
        atvoss.Schedule(tile_m="64")


def test_space_check_default_and_json(matmul):
    space = atvoss.ScheduleSpace.of(matmul, "ascend910b")
    assert space.backend == "npu-sim" and space.size > 1
    default = space.default()
    assert default is not None and space.check(default) == (True, "")
    huge = dict(default)
    huge.update({k: max(v) for k, v in space.knobs.items() if k.startswith("tile")})
    ok, reason = space.check(huge)
    assert not ok and reason  # too large for the on-chip buffers, and says which
    with pytest.raises(ValueError, match="no_such_knob"):
        space.check({**dict(default), "no_such_knob": 1})
    assert atvoss.ScheduleSpace.from_json(space.to_json()) == space
    assert "size=" in repr(space)


def test_zoo_model_at_a_batch_and_as_its_training_step():
    plain = atvoss.zoo_model("mlp")
    assert plain[0]["name"] == "fc1" and plain[0]["workload"].dims["M"] == 64
    assert atvoss.zoo_model("mlp", 8)[0]["workload"].dims["M"] == 8
    names = [t["name"] for t in atvoss.zoo_model("mlp", 8, training=True)]
    assert "fc1.wgrad" in names and "fc1.update" in names and "fc1.wgrad" not in [t["name"] for t in plain]
    large = {t["name"]: t for t in atvoss.zoo_model("bert-large")}
    assert large["encoder.0.attention.query"]["weight"] == 72
    with pytest.raises(ValueError, match="batch"):
        atvoss.zoo_model("mlp", -1)
    with pytest.raises(TypeError, match="training"):
        atvoss.zoo_model("mlp", 8, training="yes")  # type: ignore[arg-type]
