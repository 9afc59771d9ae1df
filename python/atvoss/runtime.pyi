import os
from typing import Any, Dict, Literal, Optional, Sequence, Tuple, Union, overload

import numpy as np

from .vocabulary import Schedule, Workload

_PathLike = Union[str, os.PathLike[str]]
_Array = np.ndarray

class Choice:
    kind: str
    schedule: Schedule
    reason: str
    entry: Optional[Workload]
    distance: float
    table_time_us: float

class PreparedConv2d:
    """A conv2d filter prepared once (Runtime.prepare_conv2d)."""
    @property
    def nbytes(self) -> int: ...
    @property
    def packed(self) -> bool: ...
    @property
    def dtype(self) -> str: ...
    @property
    def filter_shape(self) -> Tuple[int, int, int, int]: ...

_Filter = Union[_Array, PreparedConv2d]

class Runtime:
    table: Optional[str]
    _rt: Any
    def __init__(self, table: Optional[_PathLike] = ..., *, cache_dir: Optional[_PathLike] = ...,
                 foreign_table: str = ...) -> None: ...
    @property
    def no_table_reason(self) -> str: ...
    def choose(self, workload: Any) -> Choice: ...
    def prepare_conv2d(self, filter: _Array, input_shape: Sequence[int], stride: int = ..., pad: int = ...,
                       epilogue: Sequence[str] = ..., dtype: str = ...) -> PreparedConv2d: ...
    @overload
    def matmul(self, a: _Array, b: _Array, epilogue: Sequence[str] = ..., *, bias: Optional[_Array] = ...,
               scale: Optional[_Array] = ..., shift: Optional[_Array] = ..., residual: Optional[_Array] = ...,
               qout: Optional[Tuple[float, int]] = ..., codes: bool = ...,
               return_choice: Literal[False] = ...) -> _Array: ...
    @overload
    def matmul(self, a: _Array, b: _Array, epilogue: Sequence[str] = ..., *, bias: Optional[_Array] = ...,
               scale: Optional[_Array] = ..., shift: Optional[_Array] = ..., residual: Optional[_Array] = ...,
               qout: Optional[Tuple[float, int]] = ..., codes: bool = ...,
               return_choice: Literal[True]) -> Tuple[_Array, Choice]: ...
    @overload
    def conv2d(self, input: _Array, filter: _Filter, stride: int = ..., pad: int = ..., epilogue: Sequence[str] = ...,
               *, bias: Optional[_Array] = ..., scale: Optional[_Array] = ..., shift: Optional[_Array] = ...,
               residual: Optional[_Array] = ..., qout: Optional[Tuple[float, int]] = ..., codes: bool = ...,
               return_choice: Literal[False] = ...) -> _Array: ...
    @overload
    def conv2d(self, input: _Array, filter: _Filter, stride: int = ..., pad: int = ..., epilogue: Sequence[str] = ...,
               *, bias: Optional[_Array] = ..., scale: Optional[_Array] = ..., shift: Optional[_Array] = ...,
               residual: Optional[_Array] = ..., qout: Optional[Tuple[float, int]] = ..., codes: bool = ...,
               return_choice: Literal[True]) -> Tuple[_Array, Choice]: ...
    def matmul_int8(self, a: _Array, b: _Array, scale: _Array, comp: _Array, epilogue: Sequence[str] = ..., *,
                    bias: Optional[_Array] = ..., batchnorm_scale: Optional[_Array] = ...,
                    shift: Optional[_Array] = ..., residual: Optional[_Array] = ...,
                    qout: Optional[Tuple[float, int]] = ..., codes: bool = ...,
                    return_choice: bool = ...) -> Any: ...
    def matmul_bf16(self, a: _Array, b: _Array, epilogue: Sequence[str] = ..., *, bias: Optional[_Array] = ...,
                    batchnorm_scale: Optional[_Array] = ..., shift: Optional[_Array] = ...,
                    residual: Optional[_Array] = ..., qout: Optional[Tuple[float, int]] = ..., codes: bool = ...,
                    return_choice: bool = ...) -> Any: ...
    def conv2d_int8(self, input: _Array, zero_point: int, filter: _Filter, scale: _Array, comp: _Array,
                    stride: int = ..., pad: int = ..., epilogue: Sequence[str] = ..., *,
                    bias: Optional[_Array] = ..., batchnorm_scale: Optional[_Array] = ...,
                    shift: Optional[_Array] = ..., residual: Optional[_Array] = ...,
                    qout: Optional[Tuple[float, int]] = ..., codes: bool = ...,
                    return_choice: bool = ...) -> Any: ...
    def conv2d_bf16(self, input: _Array, filter: _Filter, stride: int = ..., pad: int = ...,
                    epilogue: Sequence[str] = ..., *, bias: Optional[_Array] = ...,
                    batchnorm_scale: Optional[_Array] = ..., shift: Optional[_Array] = ...,
                    residual: Optional[_Array] = ..., qout: Optional[Tuple[float, int]] = ..., codes: bool = ...,
                    return_choice: bool = ...) -> Any: ...

class Model:
    path: str
    def __init__(self, path: _PathLike, *, plan: Optional[_PathLike] = ..., batch: int = ..., threads: int = ...,
                 cache_dir: Optional[_PathLike] = ...) -> None: ...
    @property
    def inputs(self) -> Sequence[Tuple[str, Tuple[int, ...]]]: ...
    @property
    def outputs(self) -> Sequence[Tuple[str, Tuple[int, ...]]]: ...
    def run(self, inputs: Sequence[_Array]) -> Sequence[_Array]: ...
    def describe(self) -> Dict[str, Any]: ...

def runtime(table: Optional[_PathLike] = ..., cache_dir: Optional[_PathLike] = ...) -> Runtime: ...
@overload
def matmul(a: _Array, b: _Array, epilogue: Sequence[str] = ..., *, table: Optional[_PathLike] = ...,
           bias: Optional[_Array] = ..., scale: Optional[_Array] = ..., shift: Optional[_Array] = ...,
           residual: Optional[_Array] = ..., return_choice: Literal[False] = ...) -> _Array: ...
@overload
def matmul(a: _Array, b: _Array, epilogue: Sequence[str] = ..., *, table: Optional[_PathLike] = ...,
           bias: Optional[_Array] = ..., scale: Optional[_Array] = ..., shift: Optional[_Array] = ...,
           residual: Optional[_Array] = ..., return_choice: Literal[True]) -> Tuple[_Array, Choice]: ...
@overload
def conv2d(input: _Array, filter: _Array, stride: int = ..., pad: int = ..., epilogue: Sequence[str] = ..., *,
           table: Optional[_PathLike] = ..., bias: Optional[_Array] = ..., scale: Optional[_Array] = ...,
           shift: Optional[_Array] = ..., residual: Optional[_Array] = ...,
           return_choice: Literal[False] = ...) -> _Array: ...
@overload
def conv2d(input: _Array, filter: _Array, stride: int = ..., pad: int = ..., epilogue: Sequence[str] = ..., *,
           table: Optional[_PathLike] = ..., bias: Optional[_Array] = ..., scale: Optional[_Array] = ...,
           shift: Optional[_Array] = ..., residual: Optional[_Array] = ...,
           return_choice: Literal[True]) -> Tuple[_Array, Choice]: ...
