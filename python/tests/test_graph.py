"""atvoss.Graph, atvoss.FusionScheduler and graph policies (atvoss.register_policy,
atvoss.tune_graph): fusion by user rules with depth and memory limits, the built-in pass on a
real ONNX graph, and policies that take nodes with the tuner handling the rest."""
import pytest

import atvoss

CONV = {"op": "conv2d", "dims": {"N": 1, "C": 64, "H": 56, "W": 56, "K": 64, "R": 3, "S": 3,
                                 "stride": 1, "pad": 1}}
OUT = (1, 64, 56, 56)  # 401408 bytes in float16


def conv_bn_relu(location="global", fusible=True):
    g = atvoss.Graph("block")
    g.tensor("x", OUT)
    g.op("conv", CONV, inputs=["x"])
    g.op("bn", "batchnorm")
    g.op("relu", "relu", outputs=["y"])
    g.tensor("y", OUT, output=True)
    g.connect("conv", "bn", shape=OUT, location=location)
    g.connect("bn", "relu", shape=OUT, fusible=fusible)
    return g


def test_a_rule_fuses_the_chain_it_matches_and_counts_the_traffic_saved():
    g = conv_bn_relu()
    f = atvoss.FusionScheduler()
    f.add_rule(["conv2d", "batchnorm", "relu"])
    r = f.schedule(g)
    assert (r.original_ops, r.fused_ops, r.groups) == (3, 1, [["conv", "bn", "relu"]])
    assert r.bandwidth_saved_bytes == 2 * 2 * 401408  # conv:out and bn:out, each written and read once
    assert r.graph.nodes["conv"].kernel.to_json()["epilogue"] == ["batchnorm", "relu"]
    assert g.nodes["bn"].fused_into is None  # the graph given is left as it was


def test_depth_budget_location_and_constraints_stop_a_chain():
    def groups(g, **rule):
        f = atvoss.FusionScheduler()
        f.add_rule(["conv2d", "batchnorm", "relu"], **rule)
        return f.schedule(g)

    assert groups(conv_bn_relu(), max_fusion_depth=2).groups == [["conv", "bn"]]
    assert groups(conv_bn_relu(), memory_budget=400000).groups == []  # conv:out is 401408 bytes
    assert groups(conv_bn_relu(fusible=False)).groups == [["conv", "bn"]]
    on_chip = groups(conv_bn_relu(location="l1"))
    assert on_chip.groups == [["conv", "bn", "relu"]] and on_chip.bandwidth_saved_bytes == 2 * 401408
    shared = conv_bn_relu()
    shared.op("probe", "Identity", inputs=["conv:out"])  # a second reader: conv:out must be written
    assert groups(shared).groups == []
    with pytest.raises(ValueError, match="pattern"):
        atvoss.FusionScheduler().add_rule(["conv2d"])
    with pytest.raises(ValueError, match="max_fusion_depth"):
        atvoss.FusionScheduler().add_rule(["conv2d", "relu"], max_fusion_depth=1)
    with pytest.raises(ValueError, match="memory_budget"):
        atvoss.FusionScheduler().add_rule(["conv2d", "relu"], memory_budget=0)
    with pytest.raises(ValueError, match="dst"):
        conv_bn_relu().connect("conv", "nowhere")
    with pytest.raises(ValueError, match="count"):
        conv_bn_relu().op("again", "relu", count=0)


def test_a_rule_takes_the_grammar_of_the_fusion_rules_a_job_declares():
    # One grammar for Python's rules and C++'s (lowering/fusion_rules.hpp): "a|b", "*", "a+".
    def fused(pattern, **rule):
        f = atvoss.FusionScheduler()
        f.add_rule(pattern, **rule)
        return f.schedule(conv_bn_relu()).groups

    assert fused(["conv2d", "layernorm|batchnorm", "gelu|relu"]) == [["conv", "bn", "relu"]]
    assert fused(["*", "*+"]) == [["conv", "bn", "relu"]]  # a repeating step: no depth limit by default
    assert fused(["conv2d", "batchnorm|relu+"], max_fusion_depth=2) == [["conv", "bn"]]
    assert fused(["conv2d", "gelu|layernorm+"]) == []
    with pytest.raises(ValueError, match=r"add_rule: field 'pattern\[1\]': 'relu\|\|gelu' has an empty op name"):
        atvoss.FusionScheduler().add_rule(["conv2d", "relu||gelu"])
    with pytest.raises(ValueError, match=r"field 'pattern\[0\]': the main op cannot repeat"):
        atvoss.FusionScheduler().add_rule(["conv2d+", "relu"])


def test_the_builtin_pass_on_an_onnx_graph(tmp_path):
    onnx = pytest.importorskip("onnx")  # python3-onnx, installed by scripts/setup.sh for the tests
    from onnx import TensorProto, helper

    w = helper.make_tensor("w", TensorProto.FLOAT, [64, 64, 3, 3], [0.0] * (64 * 64 * 9))
    bn = [helper.make_tensor(n, TensorProto.FLOAT, [64], [1.0] * 64) for n in ("s", "b", "m", "v")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], name="bn"),
             helper.make_node("Relu", ["n"], ["r"], name="relu"),
             helper.make_node("Add", ["r", "x"], ["y"], name="residual")]
    graph = helper.make_graph(nodes, "resblock", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 56, 56])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 56, 56])], [w, *bn])
    path = tmp_path / "resblock.onnx"
    onnx.save(helper.make_model(graph), str(path))
    g = atvoss.Graph.from_onnx(path)
    assert list(g.nodes) == ["conv", "bn", "relu", "residual"] and g.nodes["conv"].kernel.op == "conv2d"
    assert all(n.fused_into is None for n in g.nodes.values())  # read before any fusion
    b = atvoss.FusionScheduler.builtin(g)
    assert b.groups == [["conv", "bn", "relu", "residual"]] and b.fused_ops == 1
    assert b.rules == ["fold-into-weights"]  # the first member's rule names the group
    assert b.graph.nodes["conv"].kernel.to_json()["epilogue"] == ["bias", "relu", "add"]
    # User rules read the same graph by the model's op names or the steps.
    f = atvoss.FusionScheduler()
    f.add_rule(["Conv", "BatchNormalization", "relu"])
    assert f.schedule(g).groups == [["conv", "bn", "relu"]]
    by_kernel = atvoss.FusionScheduler()  # the Conv node by its kernel's op, the Relu by its step
    by_kernel.add_rule(["conv2d", "BatchNormalization", "relu|gelu"])
    assert by_kernel.schedule(g).groups == [["conv", "bn", "relu"]]
    with pytest.raises(FileNotFoundError):
        atvoss.Graph.from_onnx(tmp_path / "missing.onnx")


MATMUL = {"op": "matmul", "dims": {"M": 256, "N": 256, "K": 256}}


def two_matmuls():
    g = atvoss.Graph("mlp")
    g.tensor("x", (256, 256))
    g.op("fc1", MATMUL, inputs=["x"])
    g.op("act", "relu")
    g.connect("fc1", "act", shape=(256, 256))
    g.op("fc2", MATMUL, inputs=["act:out"], outputs=["y"])
    g.tensor("y", (256, 256), output=True)
    return g


@pytest.fixture
def policies():
    yield
    for name in atvoss.policy_names():
        atvoss.unregister_policy(name)


def test_a_policy_takes_its_nodes_and_the_tuner_the_rest(policies, tmp_path):
    space = atvoss.ScheduleSpace.of({**MATMUL, "epilogue": ["relu"]}, "ascend910b")
    chosen = dict(space.default())
    asked = []

    @atvoss.register_policy("first-layer", priority=5)
    class FirstLayer:
        def can_apply(self, subgraph):
            asked.append(sorted(subgraph.nodes))
            return "fc1" in subgraph.nodes

        def evaluate(self, subgraph):
            return {"fuse": [["fc1", "act"]], "schedules": {"fc1": chosen}}

    @atvoss.register_policy("never", priority=1)
    class Never:
        def can_apply(self, subgraph):
            asked.append(sorted(subgraph.nodes))
            return False

        def evaluate(self, subgraph):
            raise AssertionError("not asked: can_apply said no")

    assert atvoss.policy_names() == ["first-layer", "never"]
    r = atvoss.tune_graph(two_matmuls(), "ascend910b", trials=6, strategy="random", fusion=None,
                          db=str(tmp_path / "g.db"))
    assert asked[0] == ["act", "fc1", "fc2"] and asked[1] == ["fc2"]  # the second sees only what is left
    assert r.policies == ["first-layer"] and set(r.nodes) == {"fc1", "fc2"}
    fc1, fc2 = r.nodes["fc1"], r.nodes["fc2"]
    assert fc1.chosen_by == "policy:first-layer" and fc1.schedule == chosen and fc1.fused == ["act"]
    assert fc1.workload.to_json()["epilogue"] == ["relu"]
    assert fc1.time_us == atvoss.measure(fc1.workload, "ascend910b", chosen)[0].time_us
    assert fc2.chosen_by == "tuner" and fc2.time_us > 0
    # The six trials all went to fc2, the only kernel left; its schedule is one of them.
    stored = atvoss.Database(str(tmp_path / "g.db")).best(MATMUL, "ascend910b", k=10)
    assert len(stored) == 6 and fc2.schedule in [atvoss.Schedule(s["schedule"]) for s in stored]
    assert r.total_us == pytest.approx(fc1.time_us + fc2.time_us) and r.not_tuned == []


def test_policies_are_checked(policies):
    with pytest.raises(TypeError, match="evaluate"):
        @atvoss.register_policy("half")
        class Half:
            def can_apply(self, subgraph):
                return True

    @atvoss.register_policy("bad-tiles")
    class BadTiles:
        def can_apply(self, subgraph):
            return True

        def evaluate(self, subgraph):
            return {"schedules": {"fc2": {"tile_m": 7}}}

    with pytest.raises(ValueError, match="bad-tiles.*fc2"):
        atvoss.tune_graph(two_matmuls(), "ascend910b", trials=2, strategy="random")
    atvoss.unregister_policy("bad-tiles")

    @atvoss.register_policy("bad-group")
    class BadGroup:
        def can_apply(self, subgraph):
            return True

        def evaluate(self, subgraph):
            return {"fuse": [["fc1", "fc2"]]}  # fc2 has a kernel of its own

    with pytest.raises(ValueError, match="bad-group.*fc2"):
        atvoss.tune_graph(two_matmuls(), "ascend910b", trials=2, strategy="random", fusion=None)
    with pytest.raises(ValueError, match="policies"):
        atvoss.tune_graph(two_matmuls(), "ascend910b", policies=["nope"])


def test_a_tuned_graph_runs_on_its_device_and_the_profiler_keeps_the_run(tmp_path):
    # Two independent matmuls and a third reading both. Kernels this small are bound by their
    # launches, which the host issues one after another; the join waits for both branches.
    g = atvoss.Graph("branches")
    small = {"op": "matmul", "dims": {"M": 64, "N": 64, "K": 64}}
    g.tensor("x", (64, 64))
    g.op("left", small, inputs=["x"], outputs=["l"])
    g.op("right", small, inputs=["x"], outputs=["r"])
    g.op("join", {"op": "elementwise", "dims": {"M": 64, "N": 64}}, inputs=["l", "r"], outputs=["y"])
    g.tensor("y", (64, 64), output=True)
    r = atvoss.tune_graph(g, "ascend910b", trials=4, strategy="random", fusion=None)
    with atvoss.Profiler(output_dir=tmp_path / "prof") as p:
        t = r.simulate()
        serial_plain = r.simulate(policy="topological")
    assert {n.name for n in t.nodes} == {"left", "right", "join"} and t.policy == "critical_path"
    runs = {n.name: n for n in t.nodes}
    assert runs["join"].start_us >= max(runs["left"].end_us, runs["right"].end_us)  # it waits for both
    assert all(n.start_us >= n.launched_us and n.end_us > n.start_us for n in t.nodes)
    assert all(n.unit in ("cube", "vector") and n.device == 0 for n in t.nodes)  # one device, compute kernels
    assert t.makespan_us == max(n.end_us for n in t.nodes) <= t.serial_us and 0 < t.utilisation <= 1
    assert t.serial_us == pytest.approx(sum(node.time_us for node in r.nodes.values()))
    assert t.critical_path[-1] == "join" and serial_plain.policy == "topological"
    with pytest.raises(ValueError, match="choices"):
        g.simulate("ascend910b", {"lefty": ({}, 1.0)})  # a typo must not pass for the fallback
    assert p.timelines == [t, serial_plain]
    import json

    trace = json.loads((tmp_path / "prof" / "trace.json").read_text())["traceEvents"]
    simulated = [e for e in trace if e.get("cat") == "graph" and e["pid"] == 2]
    assert sorted(e["name"] for e in simulated) == ["join", "left", "right"]
    assert all(e["ts"] == runs[e["name"]].start_us and e["dur"] == pytest.approx(
        runs[e["name"]].end_us - runs[e["name"]].start_us) for e in simulated)
    summary = json.loads((tmp_path / "prof" / "summary.json").read_text())
    assert summary["graphs"][0]["makespan_us"] == t.makespan_us


def test_naming_the_edge_in_connect_keeps_one_output_and_the_chain_fuses():
    g = atvoss.Graph("named")
    g.tensor("x", OUT)
    g.op("conv", CONV, inputs=["x"])
    g.op("relu", "relu", outputs=["y"])
    g.tensor("y", OUT, output=True)
    assert g.connect("conv", "relu", "h", shape=OUT) == "h"  # the edge named, as the articles do
    assert g.nodes["conv"].outputs == ["h"] and "conv:out" not in g.tensors
    f = atvoss.FusionScheduler()
    f.add_rule(["conv2d", "relu"])
    assert f.schedule(g).groups == [["conv", "relu"]]


def test_simulate_without_choices_runs_each_kernel_at_its_default_schedule():
    g = atvoss.Graph("defaults")
    g.tensor("x", (1024, 1024))
    g.op("fc", {"op": "matmul", "dims": {"M": 1024, "N": 1024, "K": 1024}}, inputs=["x"], outputs=["y"])
    g.tensor("y", (1024, 1024), output=True)
    t = g.simulate("ascend910b")
    default = atvoss.measure({"op": "matmul", "dims": {"M": 1024, "N": 1024, "K": 1024}}, "ascend910b", noise=0)[0]
    # Not the bytes-only fallback: the default's time, its launch issued by the host apart.
    assert t.nodes[0].end_us - t.nodes[0].start_us == pytest.approx(default.time_us - default.profile.launch_us)


def test_the_graph_track_of_the_trace_is_in_time_order(tmp_path):
    # The critical path goes first: "side", listed first, starts after "big".
    g = atvoss.Graph("order")
    g.tensor("x", (1024, 1024))
    g.op("side", {"op": "elementwise", "dims": {"M": 64, "N": 64}}, inputs=["x"], outputs=["s"])
    g.op("big", {"op": "matmul", "dims": {"M": 1024, "N": 1024, "K": 1024}}, inputs=["x"], outputs=["b"])
    g.op("after", {"op": "elementwise", "dims": {"M": 1024, "N": 1024}}, inputs=["b"], outputs=["y"])
    with atvoss.Profiler() as p:
        t = g.simulate("ascend910b")
    assert [n.name for n in t.nodes][0] == "side" and min(t.nodes, key=lambda n: n.start_us).name == "big"
    ts = [e["ts"] for e in p.trace_events()["traceEvents"] if e.get("cat") == "graph"]
    assert len(ts) == 3 and ts == sorted(ts)


def test_the_articles_forms_build_and_fuse_the_same_graph_as_the_native_api():
    # The forms the ATVOSS articles show, as thin aliases of the native calls.
    g = atvoss.Graph("article")
    x = atvoss.Tensor("x", OUT, location="global")
    mid = atvoss.Tensor("mid", OUT, location="global")
    y = atvoss.Tensor("y", OUT, output=True)
    conv = g.create_op("conv", CONV)
    relu = g.create_op("relu", "relu")
    g.connect(conv, [x], mid, constraints={"location": "global"})
    g.connect(relu, [mid], y)
    assert g.nodes["conv"].outputs == ["mid"] and g.tensors["mid"].bytes == 401408
    f = atvoss.FusionScheduler(g)
    f.add_rule(["conv2d", "relu"], {"l1_preference": True, "tile_size": 16 * 1024})
    r = f.schedule()
    assert r.groups == [["conv", "relu"]] and r.bandwidth_saved_bytes == 2 * 401408
    # The unified buffer (256 KiB) cannot hold the whole 392 KiB intermediate; a tile of it fits.
    ub_whole = atvoss.FusionScheduler(g)
    ub_whole.add_rule(["conv2d", "relu"], {"l1_preference": False})
    assert ub_whole.schedule().groups == []
    ub_tiled = atvoss.FusionScheduler(g)
    ub_tiled.add_rule(["conv2d", "relu"], {"l1_preference": False, "tile_size": 16 * 1024})
    assert ub_tiled.schedule().groups == [["conv", "relu"]]
    with pytest.raises(ValueError, match="unknown key"):
        atvoss.FusionScheduler(g).add_rule(["conv2d", "relu"], {"tile": 4})
    no_fuse = atvoss.Graph("article")
    no_fuse.create_op("conv", CONV)
    no_fuse.create_op("relu", "relu")
    no_fuse.connect("conv", [x], mid)
    no_fuse.connect("relu", [mid], y, constraints={"fusible": False})
    only = atvoss.FusionScheduler(no_fuse)
    only.add_rule(["conv2d", "relu"], {})
    assert only.schedule().groups == []


def test_an_abstract_schedule_policy_must_implement_both_methods():
    class Half(atvoss.AbstractSchedulePolicy):
        def can_apply(self, subgraph):
            return False

    with pytest.raises(TypeError):
        Half()

    class Whole(Half):
        def evaluate(self, subgraph):
            return {}

    assert Whole().evaluate(atvoss.Graph("g")) == {}
