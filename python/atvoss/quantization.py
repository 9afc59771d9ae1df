"""int8 and bf16 on this CPU: calibration, the codes the host kernels read, and what each layer
loses in them, measured (docs/host-backend.md "int8 and bf16"; runtime/sensitivity.hpp).

    import numpy as np, atvoss
    from atvoss import quantization as q
    lo, hi = q.calibrate(calibration_batch, "entropy")
    ops = q.quantize_int8(b, (lo, hi))                       # b: float32 weights (K, N)
    c = atvoss.runtime.runtime().matmul_int8(q.quantize_activations(a, ops.code), ops.weights,
                                             ops.scale, ops.comp)
    s = q.Sensitivity([("fc1", w1), ("fc2", w2)], method="percentile")
    plan = s.plan(1e-2)                                      # plan.precision: the job spec's "precision"

The arithmetic is the kernels' own (the C++ code does it): activations u8 per tensor with a
zero point, weights s8 per output channel (max |w| / 127, never clipped), the zero point
compensated per column, bf16 rounded to nearest even. Accuracy on a labelled dataset is not
measured here: the errors are relative RMS against fp32 on seeded data.
"""
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _atvoss
from ._json import dumps, loads
from .runtime import Runtime, runtime
from .vocabulary import Workload, as_workload


def _pair(values: Sequence[float]) -> Tuple[float, float]:
    return float(values[0]), float(values[1])


def calibrate(samples: Any, method: str = "min_max", *, percentile: float = 99.99, bins: int = 2048,
              symmetric: bool = False) -> Tuple[float, float]:
    """The clipping range (lo, hi), lo <= 0 <= hi, of float32 samples: "min_max", "percentile"
    or "entropy" (TensorRT's KL method). ValueError naming the option on a bad one."""
    lo, hi = _atvoss.calibrate(samples, method, percentile, bins, symmetric)
    return float(lo), float(hi)


@dataclass(frozen=True)
class AffineCode:
    """The u8 code of a range: x ~ scale * (q - zero_point), 0.0 exact."""
    scale: float
    zero_point: int

    @staticmethod
    def of(lo: float, hi: float) -> "AffineCode":
        scale, zero_point = _atvoss.affine_code(lo, hi)
        return AffineCode(float(scale), int(zero_point))


def quantize_activations(x: Any, code: AffineCode) -> Any:
    """x (float32) as uint8 codes of `code`, saturating outside its range."""
    return _atvoss.quantize_activations(x, code.scale, code.zero_point)


def to_bf16(x: Any) -> Any:
    """x (float32) as bf16 bit patterns (uint16), rounded to nearest even."""
    return _atvoss.to_bf16(x)


@dataclass(frozen=True)
class Int8Operands:
    """What an int8 kernel reads besides its input: the weights' int8 codes (shaped like the
    float32 weights), the input's code, and per output channel the dequantisation scale
    (float32) and the zero-point compensation (int32)."""
    weights: Any
    code: AffineCode
    scale: Any
    comp: Any


def quantize_int8(weights: Any, activation_range: Tuple[float, float]) -> Int8Operands:
    """The int8 operands of a matmul's weights (K, N) or a conv's filter (R, S, C, K) for
    activations calibrated to activation_range."""
    q, w_scale, column_sum = _atvoss.quantize_weights(weights)
    code = AffineCode.of(*activation_range)
    return Int8Operands(q, code, (w_scale * code.scale).astype("float32"),
                        (column_sum * code.zero_point).astype("int32"))


@dataclass(frozen=True)
class LayerSensitivity:
    """One layer's measured loss: relative RMS error of its output against fp32 in int8 and
    bf16 (None where the CPU has no BF16), its calibrated input range and the share of the
    evaluation input outside it, and its kernel times."""
    name: str
    workload: Workload
    chained: bool
    act_range: Tuple[float, float]
    saturation: float
    int8_error: float
    bf16_error: Optional[float]
    fp32_us: float
    int8_us: float
    bf16_us: Optional[float]


@dataclass(frozen=True)
class PlannedLayer:
    name: str
    dtype: str
    error: float
    time_us: float
    act_range: Tuple[float, float]


@dataclass(frozen=True)
class PrecisionPlan:
    """Each layer as cheap as the threshold allows. chained: the layers run as a chain, and
    measured_error is the chain's output error run end to end in these precisions (layers moved
    up until it is within the threshold); else None, and each layer is within it on its own.
    precision: the job spec's per-layer "precision" object."""
    threshold: float
    layers: List[PlannedLayer]
    time_us: float
    fp32_time_us: float
    speedup: float
    chained: bool
    measured_error: Optional[float]
    precision: Dict[str, Any]


class Sensitivity:
    """A model's fp32 matmul layers, each run in int8 and bf16 on seeded real numbers with the
    real kernels and compared with fp32 (runtime/sensitivity.hpp): measured once, then planned
    for any threshold. layers: (name, workload) pairs; a layer whose K is the previous N (and M
    the same) reads the previous layer's output when chain is true."""

    def __init__(self, layers: Sequence[Tuple[str, Any]], *, seed: int = 1, method: str = "min_max",
                 percentile: float = 99.99, bins: int = 2048, calibration_rows: int = 256, timed_calls: int = 5,
                 chain: bool = True, runtime_: Optional[Runtime] = None) -> None:
        rt = runtime_ if runtime_ is not None else runtime()
        pairs = [(name, dumps(as_workload(w).to_json())) for name, w in layers]
        self._s = _atvoss.Sensitivity(rt._rt, pairs, seed, method, percentile, bins, calibration_rows,
                                      timed_calls, chain)

    @property
    def layers(self) -> List[LayerSensitivity]:
        return [LayerSensitivity(j["name"], Workload(j["workload"]), j["chained"], _pair(j["act_range"]),
                                 j["saturation"], j["int8_error"], j["bf16_error"], j["fp32_us"], j["int8_us"],
                                 j["bf16_us"]) for j in loads(self._s.layers())]

    def plan(self, threshold: float) -> PrecisionPlan:
        """ValueError naming 'threshold' when it is negative or not finite."""
        j = loads(self._s.plan(threshold))
        layers = [PlannedLayer(x["name"], x["dtype"], x["error"], x["time_us"], _pair(x["act_range"]))
                  for x in j["layers"]]
        return PrecisionPlan(j["threshold"], layers, j["time_us"], j["fp32_time_us"], j["speedup"], j["chained"],
                             j["measured_error"], j["precision"])
