"""Host-side arguments for one shape: fresh seeded random inputs, poisoned
outputs, scalar values, and what the user's reference function returns."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kerntune.dtypes import DType, decode, encode, poisoned
from kerntune.engine import distributions as dist
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.spec import expr
from kerntune.spec.model import ArgSpec, KernelSpec, Shape
from kerntune.engine.userfunc import call_user, load_function

DEFAULT_INT_RANGE = {True: (-64, 64), False: (0, 64)}


def array_shape(arg: ArgSpec, sizes: dict[str, int]) -> tuple[int, ...]:
    try:
        dims = tuple(expr.evaluate_int(d, sizes, f"shape of {arg.name}") for d in arg.shape or ())
    except expr.ExprError as e:
        raise KerntuneError(ErrorCode.SPEC, f"argument {arg.name}: {e}") from None
    if any(d < 0 for d in dims):
        raise KerntuneError(ErrorCode.SPEC, f"argument {arg.name}: shape {dims} has a negative dimension at {sizes}")
    return dims


def scalar_value(arg: ArgSpec, sizes: dict[str, int]) -> Any:
    try:
        v = expr.evaluate(arg.value, sizes)
    except expr.ExprError as e:
        raise KerntuneError(ErrorCode.SPEC, f"argument {arg.name}: {e}") from None
    return float(v) if arg.dt.is_float else int(v)


def bytes_moved(spec: KernelSpec, sizes: dict[str, int]) -> int:
    """Bytes a call must move: the spec's ``bytes_moved``, or the sum of array
    sizes with in/out counted once and inout twice (read and written)."""
    if spec.bytes_moved is not None:
        try:
            return expr.evaluate_int(spec.bytes_moved, sizes, "bytes_moved")
        except expr.ExprError as e:
            raise KerntuneError(ErrorCode.SPEC, f"bytes_moved: {e}") from None
    total = 0
    for a in spec.arrays:
        n = int(np.prod(array_shape(a, sizes))) * a.dt.itemsize
        total += 2 * n if a.intent == "inout" else n
    return total


@dataclass
class HostArgs:
    """Storage arrays for every array argument and values for every scalar."""

    arrays: dict[str, np.ndarray]
    scalars: dict[str, Any]
    seed: int
    generated: frozenset[str] = frozenset()    # arrays the spec's inputs function made (not drawn here)
    cache_key: tuple | None = None             # set when kept by a worker's DataCache (the arrays are read-only)


def _random(dt: DType, shape: tuple[int, ...], rng: np.random.Generator, rng_range: tuple[float, float] | None,
            distribution: str = dist.SPEC) -> np.ndarray:
    if dt.is_float:
        name = dist.SPEC if distribution in (dist.SPECIAL, dist.TIES) else distribution
        lo, hi = dist.float_range(dt.itemsize, rng_range, name)
        if distribution == dist.TIES:
            values = dist.tied_values(lo, hi, shape, rng)
        elif distribution == dist.WIDE and rng_range is None:
            values = dist.wide_values(dt.name, shape, rng)
        else:
            values = rng.uniform(lo, hi, size=shape)
        if distribution == dist.SPECIAL:
            values = dist.sprinkle_special(values, dt.storage, rng)
        return encode(dt, values.astype(np.float32 if dt.itemsize <= 4 else np.float64))
    lo, hi = rng_range or DEFAULT_INT_RANGE[np.issubdtype(dt.storage, np.signedinteger)]
    return rng.integers(int(lo), int(hi), size=shape, dtype=dt.storage, endpoint=False)


def make_host_args(spec: KernelSpec, base_dir: Path, shape: Shape, seed: int,
                   distribution: str = dist.SPEC) -> HostArgs:
    """Fresh inputs for one shape, drawn from ``distribution`` (see
    :mod:`kerntune.engine.distributions`); outputs hold the first poison pattern."""
    sizes = shape.as_dict()
    rng = np.random.default_rng(seed)
    generated: dict[str, Any] = {}
    if spec.inputs is not None:
        fn = load_function(spec.inputs, base_dir, "inputs")
        out = call_user(fn, "inputs", {}, {"sizes": sizes, "rng": rng, "seed": seed, "distribution": distribution})
        if not isinstance(out, dict):
            raise KerntuneError(ErrorCode.SPEC, f"the inputs function must return a dict of arrays by argument name, "
                                                f"got {type(out).__name__}")
        generated = out
        unknown = sorted(set(generated) - {a.name for a in spec.arrays})
        if unknown:
            raise KerntuneError(ErrorCode.SPEC, f"the inputs function returned unknown arrays: {', '.join(unknown)}")
    arrays: dict[str, np.ndarray] = {}
    for a in spec.arrays:
        dims = array_shape(a, sizes)
        if a.intent == "out":
            arrays[a.name] = poisoned(a.dt, dims)
        elif a.name in generated:
            values = np.asarray(generated[a.name])
            if values.shape != dims and values.size == int(np.prod(dims)):
                values = values.reshape(dims)
            if values.shape != dims:
                raise KerntuneError(ErrorCode.SPEC, f"the inputs function returned {a.name} with shape {values.shape}, "
                                                    f"the spec says {dims} at {shape.label}")
            arrays[a.name] = np.ascontiguousarray(encode(a.dt, values))
        else:
            arrays[a.name] = _random(a.dt, dims, rng, a.range, distribution)
    scalars = {a.name: scalar_value(a, sizes) for a in spec.args if not a.is_array}
    return HostArgs(arrays, scalars, seed, frozenset(generated))


def numpy_reference(spec: KernelSpec, base_dir: Path, shape: Shape, host: HostArgs) -> dict[str, np.ndarray]:
    """Expected output values from the spec's reference function."""
    assert spec.reference is not None
    fn = load_function(spec.reference, base_dir, "reference")
    kwargs: dict[str, Any] = dict(host.scalars)
    for a in spec.arrays:
        kwargs[a.name] = np.array(decode(a.dt, host.arrays[a.name]), copy=True)
    out = call_user(fn, "reference", kwargs, {"sizes": shape.as_dict(),
                                              "dtypes": {a.name: a.dtype for a in spec.args}})
    outputs = spec.outputs
    if not isinstance(out, dict):
        if len(outputs) != 1:
            raise KerntuneError(ErrorCode.SPEC, f"the reference function must return a dict with "
                                                f"{', '.join(a.name for a in outputs)}, got {type(out).__name__}")
        out = {outputs[0].name: out}
    result = {}
    for a in outputs:
        if a.name not in out:
            raise KerntuneError(ErrorCode.SPEC, f"the reference function did not return {a.name!r} "
                                                f"(it returned {', '.join(map(str, out)) or 'nothing'})")
        v = np.asarray(out[a.name])
        dims = array_shape(a, shape.as_dict())
        if v.shape != dims:
            if v.size != int(np.prod(dims)):
                raise KerntuneError(ErrorCode.SPEC, f"the reference function returned {a.name} with shape {v.shape}, "
                                                    f"the spec says {dims} at {shape.label}")
            v = v.reshape(dims)
        result[a.name] = _exact_integers(a, v, shape)
    return result


def _exact_integers(a, v: np.ndarray, shape: Shape) -> np.ndarray:
    """A 64-bit integer output that the reference returned as floats: as integers when each is one
    a float64 holds exactly (|v| <= 2**53), so that the comparison stays exact. Above that the float
    has already rounded (a * b of int64 values through float64 is off by up to hundreds), and a
    candidate rounding the same way would pass: a spec error."""
    if a.dt.is_float or a.dt.itemsize != 8 or v.dtype.kind != "f" or not v.size:
        return v
    with np.errstate(invalid="ignore"):
        big = ~(np.abs(v) <= 2.0 ** 53)
    if big.any():
        i = int(np.flatnonzero(big.reshape(-1))[0])
        raise KerntuneError(ErrorCode.SPEC, f"the reference function returned {a.name} ({a.dtype}) as floating-point "
                                            f"values, {v.reshape(-1)[i]:.17g} among them at {shape.label}: above 2**53 "
                                            "a float64 cannot hold every integer, so the check would not be exact",
                            hint=f"return {a.name} as integers (NumPy integer arithmetic on the {a.dtype} inputs, "
                                 f"e.g. a * b, not a.astype(float) * b)")
    if np.array_equal(v, np.trunc(v)):
        return v.astype(a.dt.storage)
    return v
