"""Shapes to time and verify on, including held-out shapes the spec does not list."""

from __future__ import annotations

import numpy as np

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.spec.model import KernelSpec, Shape


def _shape(d: dict, holdout: bool) -> Shape:
    d = dict(d)
    label = d.pop("label", "") or ""
    return Shape.of(d, label=str(label), holdout=holdout)


DEFAULT_SET = "default"


def shape_set_names(spec: KernelSpec) -> list[str]:
    return [DEFAULT_SET, *spec.shape_sets]


def spec_shapes(spec: KernelSpec, shape_set: str | None = None) -> list[Shape]:
    """The shapes of a named set (``default``: the spec's ``shapes``)."""
    if shape_set in (None, DEFAULT_SET):
        return [_shape(s, False) for s in spec.shapes]
    if shape_set not in spec.shape_sets:
        raise KerntuneError(ErrorCode.USAGE, f"the spec has no shape set {shape_set!r}",
                            hint=f"shape sets: {', '.join(shape_set_names(spec))}")
    return [_shape(s, False) for s in spec.shape_sets[shape_set]]


def _odd_size(base: int, multiple_of: int, lo: int, hi: int | None) -> int:
    """A size near ``base`` that is an odd multiple of ``multiple_of`` (so it is
    not a power of two, nor a multiple of any larger power of two) and differs
    from ``base``: it exercises the tail paths of vectorized or tiled code."""
    m = multiple_of
    k = max(base // m, lo // m if lo else 1, 1)
    cand = (k + 1) * m if k % 2 == 0 else (k + 2) * m
    if cand == base:
        cand += 2 * m
    if hi is not None and cand > hi:
        # walk down instead, staying odd in units of m
        k = hi // m
        if k % 2 == 0:
            k -= 1
        cand = k * m
        if cand < max(lo, m):
            cand = base
    return cand


def holdout_shapes(spec: KernelSpec, shape_set: str | None = None) -> list[Shape]:
    """Verification-only shapes, never one of the listed shapes: the spec's own
    ``holdout_shapes`` (those not listed), plus, when none is left, one made from
    the smallest shape of the set with every size moved to an odd value."""
    listed = spec_shapes(spec, shape_set)
    taken = {s.key for s in listed}
    if spec.holdout_shapes is not None:
        own = [sh for sh in (_shape(s, True) for s in spec.holdout_shapes) if sh.key not in taken]
        if own:
            return own
    smallest = min(listed, key=lambda s: _volume(s))
    sizes = {}
    for name, value in smallest.sizes:
        c = spec.sizes[name]
        sizes[name] = _odd_size(value, c.multiple_of, c.min, c.max)
    if Shape.of(sizes).key in taken:
        sizes = _nearest_free(spec, sizes, taken)
    return [Shape.of(sizes, label="holdout " + " ".join(f"{k}={v}" for k, v in sizes.items()), holdout=True)]


def _nearest_free(spec: KernelSpec, sizes: dict[str, int], taken: set[str]) -> dict[str, int]:
    """``sizes`` with one size moved by as few steps of its multiple as possible (within its
    bounds) so that the shape is not a listed one."""
    for dist in range(1, 4097):
        for name, value in sizes.items():
            c = spec.sizes[name]
            for cand in (value + dist * c.multiple_of, value - dist * c.multiple_of):
                if cand < max(c.min, 1) or (c.max is not None and cand > c.max):
                    continue
                trial = dict(sizes, **{name: cand})
                if Shape.of(trial).key not in taken:
                    return trial
    raise KerntuneError(ErrorCode.SPEC, "cannot make a held-out shape different from the listed shapes",
                        hint="every size is pinned by its min/max; list one under `holdout_shapes`")


def verification_shapes(spec: KernelSpec, shape_set: str | None = None) -> list[Shape]:
    return spec_shapes(spec, shape_set) + holdout_shapes(spec, shape_set)


def _volume(s: Shape) -> int:
    v = 1
    for _, x in s.sizes:
        v *= max(x, 1)
    return v


def extra_holdouts(spec: KernelSpec, shape_set: str | None, count: int, seed: int) -> list[Shape]:
    """More shapes the spec does not list, different on every seed: each size of
    one of the smallest shapes moved to a random multiple of its step within
    about 25% (the tester's "shapes the candidate never saw"): an odd multiple in
    the first, third, ... shape, twice an odd one in the second, fourth, ... (every
    other size kerntune checks is an odd multiple, so a vector_add dropping two
    elements whenever n % 4 == 2 passed them all: a tour)."""
    import random

    rng = random.Random(seed)
    listed = sorted(spec_shapes(spec, shape_set), key=_volume)
    taken = {s.key for s in listed} | {s.key for s in holdout_shapes(spec, shape_set)}
    out: list[Shape] = []
    for i in range(count * 4):
        if len(out) >= count:
            break
        base = listed[i % min(len(listed), 2)]
        sizes = {}
        for name, value in base.sizes:
            c = spec.sizes[name]
            m = c.multiple_of
            lo_k = max(1, (max(c.min, int(value * 0.75)) + m - 1) // m)
            hi_k = max(lo_k, int(value * 1.25) // m)
            if c.max is not None:
                hi_k = min(hi_k, c.max // m)
            residue = (1, 3) if len(out) % 2 == 0 else (2,)          # of the multiplier, mod 4
            ks = [k for k in range(lo_k, hi_k + 1) if k % 4 in residue] \
                or [k for k in range(lo_k, hi_k + 1) if k % 2 == 1] or [max(lo_k, 1)]
            sizes[name] = rng.choice(ks) * m
            if c.max is not None and sizes[name] > c.max:
                sizes[name] = value
        shape = Shape.of(sizes, label="fresh " + " ".join(f"{k}={v}" for k, v in sizes.items()), holdout=True)
        if shape.key not in taken:
            taken.add(shape.key)
            out.append(shape)
    return out


def evaluation_problems(spec: KernelSpec) -> list:
    """What goes wrong when the spec's expressions are evaluated on its shapes (every set, and the
    held-out shapes): a division by zero, an array extent below 0, a grid or block of 0, an integer
    scalar outside its dtype (``n + 4294967296`` for an int32). Found at load time, each once, as spec
    problems (exit 2), where they came back as a Python traceback or a kernel failure."""
    from kerntune.spec import expr
    from kerntune.spec.model import Problem

    problems: dict[tuple, Problem] = {}

    def note(path: tuple, shape: Shape, message: str) -> None:
        problems.setdefault(path, Problem(path, f"at shape {shape.label}: {message}"))

    def integer(path: tuple, shape: Shape, text, env: dict, low: int, high: int | None = None,
                what: str = "value") -> None:
        if path in problems:
            return
        try:
            v = expr.evaluate_int(text, env, what)
        except expr.ExprError as e:
            note(path, shape, str(e))
            return
        if v < low or (high is not None and v > high):
            bound = f"at least {low}" if high is None else f"between {low} and {high}"
            said = f"{what} is {v}" if isinstance(text, int) else f"{what} {text!r} is {v}"
            note(path, shape, f"{said}, expected {bound}")

    shapes: dict[str, Shape] = {}
    for name in shape_set_names(spec):
        try:
            for sh in spec_shapes(spec, name) + holdout_shapes(spec, name):
                shapes.setdefault(sh.key, sh)
        except (KerntuneError, ValueError):
            continue
    for sh in shapes.values():
        env = sh.as_dict()
        for i, a in enumerate(spec.args):
            for j, d in enumerate(a.shape or []):
                integer(("args", i, "shape", j), sh, d, env, low=0, what="extent")
            if a.value is None or a.dt.is_float:
                continue
            if isinstance(a.value, (str, int)):
                info = np.iinfo(a.dt.storage)
                integer(("args", i, "value"), sh, a.value, env, low=int(info.min), high=int(info.max),
                        what=f"{a.dtype} value")
        for where, launch in [(("launch",), spec.launch)] + [(("launches", k), v) for k, v in spec.launches.items()]:
            for field in ("grid", "block"):
                for j, d in enumerate(getattr(launch, field)):
                    integer((*where, field, j), sh, d, env, low=1, what=f"{field} dimension")
            integer((*where, "shared_mem"), sh, launch.shared_mem, env, low=0, what="shared memory")
        if spec.bytes_moved is not None:
            integer(("bytes_moved",), sh, spec.bytes_moved, env, low=0, what="bytes moved")
    return list(problems.values())
