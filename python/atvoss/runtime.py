"""Run matmul and conv2d on this CPU with the schedules tuned for it (docs/runtime.md).

The table is one exported for the host target (``atvoss-db export-table --target host-...``,
``Database.export_table`` or a job's ``"export"``). Each shape runs the table's tuned kernel
(``exact``), the schedule of the nearest tuned shape (``nearest``) or the host default
(``default``), and the returned ``Choice`` says which and why. Kernels come from the host
compile cache the tuner filled, or are generated and compiled on first use (about a second).

    import numpy as np, atvoss.runtime as rt
    c = rt.matmul(a, b, table="out/mlp-host-table.json")             # a (M, K), b (K, N), float32
    c, choice = rt.matmul(a, b, ["bias", "relu"], bias=bias, table=..., return_choice=True)

Arrays must be float32 (TypeError otherwise; strided ones are copied); shapes are checked
(ValueError naming the argument). The GIL is released while a kernel runs.

int8 and bf16 kernels (CPUs with AVX-512 VNNI / BF16; ValueError naming the flag elsewhere)
take their inputs already in code: ``matmul_int8``, ``conv2d_int8``, ``matmul_bf16`` and
``conv2d_bf16``; ``atvoss.quantization`` makes the codes from float32 arrays and measures
what each layer loses.

``Model`` runs a whole ONNX model on this CPU (docs/engine.md), with the schedules of a model
plan tuned for it on this machine (a host job's ``"model_plan"``), or the defaults:

    m = rt.Model("resnet50.onnx", plan="out/r50-host-model-plan.json")
    (logits,) = m.run([image])                                    # float32, the model's shapes
"""
import numbers
import os
import threading
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

from . import _atvoss
from ._json import dumps, loads
from .vocabulary import Schedule, Workload, as_workload

# The ONNX element types whose outputs run converts from the engine's floats (numpy's names).
_INTEGER_TYPES = {"int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8", "bool"}

# A conv2d filter prepared once by Runtime.prepare_conv2d (runtime/runtime.hpp's PackedConv2dWeights).
PreparedConv2d = _atvoss.PreparedConv2d

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Choice:
    """The schedule a call ran and why: kind is "exact", "nearest" or "default"."""
    kind: str
    schedule: Schedule
    reason: str
    entry: Optional[Workload]  # the table entry's workload (exact and nearest)
    distance: float            # shape distance of a nearest entry
    table_time_us: float       # the tuner's time for the entry

    @staticmethod
    def _from_json(text: str) -> "Choice":
        j = loads(text)
        entry = Workload(j["entry"]) if j.get("entry") else None
        return Choice(j["kind"], Schedule(j["schedule"]), j["reason"], entry, float(j["distance"]),
                      float(j["table_time_us"]))


class Runtime:
    """A loaded table plus the kernels run so far; share one between threads.

    table: the exported table, or None for default schedules everywhere. foreign_table:
    "refuse" (a table tuned on another CPU raises ValueError naming both CPUs) or "defaults"
    (it is ignored; every choice is "default" and its reason says why). cache_dir: the host
    compile cache's root (None: the tuner's, $XDG_CACHE_HOME/atvoss).
    """

    def __init__(self, table: Optional[PathLike] = None, *, cache_dir: Optional[PathLike] = None,
                 foreign_table: str = "refuse") -> None:
        self.table = os.fspath(table) if table is not None else None
        self._rt = _atvoss.Runtime(self.table, os.fspath(cache_dir) if cache_dir else "", foreign_table)

    @property
    def no_table_reason(self) -> str:
        """Why no table is used ("" when one is)."""
        return self._rt.no_table_reason()

    def choose(self, workload: Any) -> Choice:
        """The choice a call of workload runs, without running (or compiling) anything."""
        return Choice._from_json(self._rt.choose(dumps(as_workload(workload).to_json())))

    def matmul(self, a: Any, b: Any, epilogue: Sequence[str] = (), *, bias: Any = None, scale: Any = None,
               shift: Any = None, residual: Any = None, qout: Optional[Tuple[float, int]] = None,
               codes: bool = False, return_choice: bool = False, slope: Any = None) -> Union[Any, Tuple[Any, Choice]]:
        """a @ b then the epilogue ops in order (bias, batchnorm, relu, gelu, add, quantize, ...).

        a (M, K) and b (K, N), or batched (B, M, K) and (B, K, N); float32, row-major.
        bias/scale/shift/slope: (N,); residual: the output's shape ("add"). leaky_relu reads
        slope, each column's negative slope (a PRelu's; a LeakyRelu's alpha repeated). batchnorm reads scale and
        shift; quantize reads qout, the (scale, zero point) of the output's u8 grid. Returns the
        float32 result, or with ``codes`` (the epilogue ending in quantize) its uint8 codes, the
        next int8 layer's input; and the Choice if return_choice.
        """
        c, choice = self._rt.matmul(a, b, _epilogue(epilogue, bias, scale, shift, residual, qout, codes, slope),
                                    return_choice)
        return (c, Choice._from_json(choice)) if return_choice else c

    def conv2d(self, input: Any, filter: Any, stride: int = 1, pad: int = 0, epilogue: Sequence[str] = (), *,
               bias: Any = None, scale: Any = None, shift: Any = None, residual: Any = None,
               qout: Optional[Tuple[float, int]] = None, codes: bool = False,
               return_choice: bool = False, slope: Any = None) -> Union[Any, Tuple[Any, Choice]]:
        """conv2d of input (N, H, W, C) with filter (R, S, C, K) -> (N, OH, OW, K) (NHWC, HWIO), then the
        epilogue (bias/scale/shift/slope: (K,); qout and codes as in ``matmul``). ValueError naming the
        op where the host code generator does not serve conv2d."""
        e = _epilogue(epilogue, bias, scale, shift, residual, qout, codes, slope)
        if isinstance(filter, _atvoss.PreparedConv2d):
            out, choice = self._rt.conv2d_prepared("float32", input, 0, filter, None, None, stride, pad, e,
                                                   return_choice)
        else:
            out, choice = self._rt.conv2d(input, filter, stride, pad, e, return_choice)
        return (out, Choice._from_json(choice)) if return_choice else out

    def prepare_conv2d(self, filter: Any, input_shape: Sequence[int], stride: int = 1, pad: int = 0,
                       epilogue: Sequence[str] = (), dtype: str = "float32") -> Any:
        """The filter (R, S, C, K) of a conv2d prepared once for the kernel this runtime runs for
        inputs of input_shape (N, H, W, C), stride, pad, epilogue and dtype ("float32", "int8"
        or "bfloat16"): packed as that kernel lays its weights out, as an inference runtime
        packs constant weights at load. Pass it as the filter of ``conv2d`` / ``conv2d_int8`` /
        ``conv2d_bf16``: those calls then pack nothing and never read the array again. A call
        of another shape, epilogue or dtype raises ValueError naming 'filter'."""
        return self._rt.prepare_conv2d(dtype, filter, list(input_shape), stride, pad,
                                       _epilogue(epilogue, None, None, None, None))

    def matmul_int8(self, a: Any, b: Any, scale: Any, comp: Any, epilogue: Sequence[str] = (), *,
                    bias: Any = None, batchnorm_scale: Any = None, shift: Any = None, residual: Any = None,
                    qout: Optional[Tuple[float, int]] = None, codes: bool = False,
                    return_choice: bool = False) -> Union[Any, Tuple[Any, Choice]]:
        """int8 a @ b, float32 out: a uint8 (M, K) with zero point z, b int8 (K, N);
        c[i, j] = scale[j] * (sum_k a[i, k] b[k, j] - comp[j]) then the epilogue, where
        scale[j] = scale_a * scale_b[j] and comp[j] = z * sum_k b[k, j] (float32 and int32, (N,);
        ``atvoss.quantization.quantize_int8`` computes them). With a ``requantize`` last and
        ``codes``, the uint8 codes of c on the grid qout = (scale, zero point) instead: the
        next int8 layer's input, with zero point qout[1]."""
        c, choice = self._rt.matmul_low("int8", a, b, scale, comp,
                                        _epilogue(epilogue, bias, batchnorm_scale, shift, residual, qout, codes),
                                        return_choice)
        return (c, Choice._from_json(choice)) if return_choice else c

    def matmul_bf16(self, a: Any, b: Any, epilogue: Sequence[str] = (), *, bias: Any = None,
                    batchnorm_scale: Any = None, shift: Any = None, residual: Any = None,
                    qout: Optional[Tuple[float, int]] = None, codes: bool = False,
                    return_choice: bool = False) -> Union[Any, Tuple[Any, Choice]]:
        """bf16 a @ b, float32 accumulation and output: a (M, K) and b (K, N) uint16 bf16 bit
        patterns (``atvoss.quantization.to_bf16``). qout and codes as in ``matmul``."""
        c, choice = self._rt.matmul_low("bfloat16", a, b, None, None,
                                        _epilogue(epilogue, bias, batchnorm_scale, shift, residual, qout, codes),
                                        return_choice)
        return (c, Choice._from_json(choice)) if return_choice else c

    def conv2d_int8(self, input: Any, zero_point: int, filter: Any, scale: Any, comp: Any, stride: int = 1,
                    pad: int = 0, epilogue: Sequence[str] = (), *, bias: Any = None, batchnorm_scale: Any = None,
                    shift: Any = None, residual: Any = None, qout: Optional[Tuple[float, int]] = None,
                    codes: bool = False, return_choice: bool = False) -> Union[Any, Tuple[Any, Choice]]:
        """int8 conv2d, float32 out: input uint8 (N, H, W, C) with zero_point (padding is the
        zero point, i.e. 0.0), filter int8 (R, S, C, K); the int8 matmul of its implicit GEMM,
        comp[k] = zero_point * sum over r, s, c of filter[r, s, c, k]. qout and codes as in
        ``matmul_int8``."""
        e = _epilogue(epilogue, bias, batchnorm_scale, shift, residual, qout, codes)
        if isinstance(filter, _atvoss.PreparedConv2d):
            out, choice = self._rt.conv2d_prepared("int8", input, zero_point, filter, scale, comp, stride, pad, e,
                                                   return_choice)
        else:
            out, choice = self._rt.conv2d_low("int8", input, zero_point, filter, scale, comp, stride, pad, e,
                                              return_choice)
        return (out, Choice._from_json(choice)) if return_choice else out

    def conv2d_bf16(self, input: Any, filter: Any, stride: int = 1, pad: int = 0, epilogue: Sequence[str] = (), *,
                    bias: Any = None, batchnorm_scale: Any = None, shift: Any = None, residual: Any = None,
                    qout: Optional[Tuple[float, int]] = None, codes: bool = False,
                    return_choice: bool = False) -> Union[Any, Tuple[Any, Choice]]:
        """bf16 conv2d on uint16 bit patterns (NHWC input, HWIO filter), float32 out; qout and
        codes as in ``matmul``."""
        e = _epilogue(epilogue, bias, batchnorm_scale, shift, residual, qout, codes)
        if isinstance(filter, _atvoss.PreparedConv2d):
            out, choice = self._rt.conv2d_prepared("bfloat16", input, 0, filter, None, None, stride, pad, e,
                                                   return_choice)
        else:
            out, choice = self._rt.conv2d_low("bfloat16", input, 0, filter, None, None, stride, pad, e, return_choice)
        return (out, Choice._from_json(choice)) if return_choice else out

    def __repr__(self) -> str:
        return f"Runtime(table={self.table!r})"


def _epilogue(ops: Sequence[str], bias: Any, scale: Any, shift: Any, residual: Any,
              qout: Optional[Tuple[float, int]] = None, codes: bool = False, slope: Any = None) -> Any:
    if isinstance(ops, str):
        raise TypeError("epilogue must be a sequence of op names, e.g. ['bias', 'relu'], not a string")
    return _atvoss.RuntimeEpilogue(list(ops), bias, scale, shift, residual, qout, codes, slope)


_runtimes: Dict[Tuple[Optional[str], Optional[str]], Runtime] = {}
_runtimes_lock = threading.Lock()


class Model:
    """A whole ONNX model loaded for this CPU: weights packed and kernels compiled once, one
    activation arena. plan: a model plan tuned for this model on this CPU (ValueError naming the
    fingerprints for another CPU's, or what differs for another model's); None: the default
    schedules. batch: bound to the inputs' symbolic dims; dims: values for named ones (a
    transformer's {"sequence_length": 128}), ValueError naming a dim no input has; input_shapes:
    the shapes inputs will be fed at, by name, whose symbolic dims take those sizes (as ONNX
    Runtime binds them from the arrays; ValueError naming a dim given two sizes). threads: the
    cores the kernels run on (0: every physical core). One run at a time per Model (it holds
    the arena)."""

    def __init__(self, path: PathLike, *, plan: Optional[PathLike] = None, batch: int = 1, threads: int = 0,
                 cache_dir: Optional[PathLike] = None, dims: Optional[Mapping[str, int]] = None,
                 input_shapes: Optional[Mapping[str, Sequence[int]]] = None) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        shapes = {}
        for name, shape in (input_shapes or {}).items():
            if isinstance(shape, (str, bytes)) or not all(isinstance(d, numbers.Integral) for d in shape):
                raise ValueError("input_shapes[%r]: expected a sequence of whole numbers, got %r" % (name, shape))
            shapes[name] = [int(d) for d in shape]
        self._m = _atvoss.Model(self.path, os.fspath(plan) if plan is not None else "", batch, threads,
                                os.fspath(cache_dir) if cache_dir else "", dict(dims or {}), shapes)

    @property
    def inputs(self) -> Sequence[Tuple[str, Tuple[int, ...]]]:
        """(name, shape) of each input, in the order run takes them."""
        return [(n, tuple(s)) for n, s in self._m.inputs()]

    @property
    def input_dtypes(self) -> Sequence[Tuple[str, str]]:
        """(name, ONNX element type) of each input: "float", or "int64", "int32", "bool" (token ids,
        masks), which run takes as integer arrays."""
        return list(self._m.input_dtypes())

    @property
    def outputs(self) -> Sequence[Tuple[str, Tuple[int, ...]]]:
        """(name, shape) of each output, in the order run returns them."""
        return [(n, tuple(s)) for n, s in self._m.outputs()]

    @property
    def output_dtypes(self) -> Sequence[Tuple[str, str]]:
        """(name, ONNX element type) of each output: "float", or an integer type or "bool"."""
        return list(self._m.output_dtypes())

    def run(self, inputs: Sequence[Any]) -> Sequence[Any]:
        """The outputs for inputs (arrays of the inputs' shapes: float32, or integers for an integer
        input), as new arrays: float32, or of the output's integer or bool type, as ONNX Runtime
        gives them."""
        with self._lock:
            outputs = list(self._m.run(list(inputs)))
        return [o if t not in _INTEGER_TYPES else o.astype(t) for o, (_, t) in zip(outputs, self.output_dtypes)]

    def describe(self) -> Dict[str, Any]:
        """How each step runs (kernel, plain, layout), the arena's bytes, the kernels from the plan."""
        return loads(self._m.describe())

    def __repr__(self) -> str:
        return "Model(%r)" % self.path


def runtime(table: Optional[PathLike] = None, cache_dir: Optional[PathLike] = None) -> Runtime:
    """The Runtime of (table, cache_dir), loaded once per process and shared."""
    key = (os.fspath(table) if table is not None else None, os.fspath(cache_dir) if cache_dir else None)
    with _runtimes_lock:
        if key not in _runtimes:
            _runtimes[key] = Runtime(key[0], cache_dir=key[1])
        return _runtimes[key]


def matmul(a: Any, b: Any, epilogue: Sequence[str] = (), *, table: Optional[PathLike] = None,
           bias: Any = None, scale: Any = None, shift: Any = None, residual: Any = None,
           return_choice: bool = False, slope: Any = None) -> Union[Any, Tuple[Any, Choice]]:
    """Runtime.matmul on the shared Runtime of table (None: default schedules)."""
    return runtime(table).matmul(a, b, epilogue, bias=bias, scale=scale, shift=shift, residual=residual,
                                 return_choice=return_choice, slope=slope)


def conv2d(input: Any, filter: Any, stride: int = 1, pad: int = 0, epilogue: Sequence[str] = (), *,
           table: Optional[PathLike] = None, bias: Any = None, scale: Any = None, shift: Any = None,
           residual: Any = None, return_choice: bool = False, slope: Any = None) -> Union[Any, Tuple[Any, Choice]]:
    """Runtime.conv2d on the shared Runtime of table (None: default schedules)."""
    return runtime(table).conv2d(input, filter, stride, pad, epilogue, bias=bias, scale=scale, shift=shift,
                                 residual=residual, return_choice=return_choice, slope=slope)
