"""Verification in place: an output passed as the buffer of one of its kernel's inputs.

A spec without ``noalias: true`` lets callers pass the same buffer as an output and an input
(``out = f(x)`` computed into ``x``). Every other verification run gives each array its own
buffer, so a candidate that reads an input again after writing its output (``out[i] = x[i];
out[i] += x[i];`` for ``out = 2 * x``: 4x in place) was called correct (hostile tour, 2026-12-05).
Here, on each shape verified on every distribution, on the spec's own inputs, each output of
intent ``out`` is passed as the buffer of an input of its dtype and element count (one input per
output, all in one run), and the candidate's outputs must match the original kernel's run the same
way. An original whose results in place differ from its results apart promises nothing in place:
that shape is then not checked in place, and the check says so. One run of the candidate more per
shape, and one of the original (kept with its inputs, like its outputs apart).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kerntune.backends.base import LaunchFailed
from kerntune.engine import distributions as dist
from kerntune.engine.datacache import freeze
from kerntune.engine.inputs import array_shape
from kerntune.engine.judge import Expected, judge_runs
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.results import ShapeCheck
from kerntune.spec.model import KernelSpec, Shape

if TYPE_CHECKING:
    from kerntune.engine.evaluate import EvalRequest, Evaluator

# the message of a failing check: what the spec's author can do when no caller ever passes one buffer twice
HINT = ("if no caller passes one buffer as both, say so in the spec with `noalias: true` (arrays never overlap), "
        "and this check is not made")


def in_place_pairs(spec: KernelSpec, shape: Shape) -> dict[str, str]:
    """Output name -> the input it is passed in place over at ``shape``: for each float output of intent
    ``out``, in the spec's order, the first input of intent ``in`` with the same dtype and element count
    not taken by an earlier output. Empty for a spec with ``noalias: true``. Not integer arrays: they are
    mostly indices and counts, and an original reading indices that another work-item has overwritten
    with its outputs writes wherever they point, past its canaries, which can take its worker down."""
    if spec.noalias:
        return {}
    sizes = shape.as_dict()
    count = {a.name: int(np.prod(array_shape(a, sizes))) for a in spec.arrays}
    inputs = [a for a in spec.arrays if a.intent == "in"]
    pairs: dict[str, str] = {}
    for o in (a for a in spec.arrays if a.intent == "out" and a.dt.is_float):
        match = next((i for i in inputs if i.dtype == o.dtype and count[i.name] == count[o.name]
                      and i.name not in pairs.values()), None)
        if match is not None:
            pairs[o.name] = match.name
    return pairs


def stage_of(pairs: dict[str, str]) -> str:
    """How an in-place check is labelled: "output c in place over input a" (one phrase per pair)."""
    return ", ".join(f"output {o} in place over input {i}" for o, i in pairs.items())


def is_in_place(check: ShapeCheck) -> bool:
    """Whether ``check`` is an in-place check (made here)."""
    return check.stage.startswith("output ") and " in place over input " in check.stage


def summary(checks: list[ShapeCheck]) -> str | None:
    """What the in-place checks among ``checks`` did, in one phrase (None: there were none): on how many
    shapes each way of aliasing was checked, and where not, why."""
    mine = [c for c in checks if is_in_place(c)]
    if not mine:
        return None
    parts = []
    for stage in dict.fromkeys(c.stage for c in mine):      # the pairs can differ from shape to shape
        done = [c for c in mine if c.stage == stage and not c.message.startswith("not checked: ")]
        skipped = [c for c in mine if c.stage == stage and c.message.startswith("not checked: ")]
        if done:
            parts.append(f"also with {stage} on {_shapes(len(done))}")
        if skipped:
            parts.append(f"not with {stage} on {_shapes(len(skipped))}: "
                         f"{skipped[0].message.removeprefix('not checked: ')}")
    return "; ".join(parts)


def _shapes(n: int) -> str:
    return f"{n} shape{'s' if n != 1 else ''}"


def verify_in_place(ev: "Evaluator", req: "EvalRequest", kernel: Any, ref_kernel: Any) -> list[ShapeCheck]:
    """The in-place checks of a request (none without an original kernel, or where no output has an
    input to alias)."""
    from kerntune.engine.evaluate import resolve_launch, shape_seed

    if ref_kernel is None or req.reference is None:
        return []
    spec = req.spec
    checks = []
    for shape in (s for s in req.verify_shapes if req.on_every_distribution(s)):
        pairs = in_place_pairs(spec, shape)
        if not pairs:
            continue
        seed = shape_seed(req.seed, shape, dist.SPEC)
        host = ev.host_args(spec, Path(req.base_dir), shape, seed, dist.SPEC)
        apart = ev.expected(req, shape, host, ref_kernel)
        overwritten = frozenset(pairs.values())
        stage = stage_of(pairs)
        base = dict(shape=shape.as_dict(), label=shape.label, holdout=shape.holdout, seed=seed, stage=stage)
        original, why = _original_in_place(ev, req, shape, host, ref_kernel, pairs, apart, overwritten)
        if original is None:
            checks.append(ShapeCheck(ok=True, message=f"not checked: {why}", **base))
            continue
        got = ev.run_once(spec, kernel, resolve_launch(spec, req.candidate, shape), host, alias=pairs)
        args = judge_runs(spec, host.arrays, [(got, {})], Expected(original, True, apart.truth),
                          overwritten=overwritten)
        ok = all(c.ok for c in args)
        checks.append(ShapeCheck(ok=ok, args=args, message="" if ok else HINT, **base))
    return checks


def _original_in_place(ev: "Evaluator", req: "EvalRequest", shape: Shape, host, ref_kernel: Any,
                       pairs: dict[str, str], apart: Expected,
                       overwritten: frozenset[str]) -> tuple[dict[str, np.ndarray] | None, str]:
    """The original kernel's outputs run in place (``pairs``), or None and why when they are not what
    it gives apart (``apart``): kept with the inputs, as its outputs apart are."""
    from kerntune.engine.evaluate import resolve_launch

    spec = req.spec

    def make() -> tuple[dict[str, np.ndarray] | None, str]:
        try:
            out = ev.run_once(spec, ref_kernel, resolve_launch(spec, req.reference, shape), host, alias=pairs)
        except LaunchFailed as e:
            if e.fatal:
                raise KerntuneError(ErrorCode.VERIFY, f"the reference kernel {req.reference.label!r} crashed at "
                                                      f"{shape.label} in place ({stage_of(pairs)}): {e.message}",
                                    hint="give the spec `noalias: true` if no caller passes one buffer as both"
                                    ) from None
            return None, f"the original kernel fails in place: {e.message}"
        if apart.values is None:
            return None, "no outputs of the original kernel apart to compare with"
        differs = [c for c in judge_runs(spec, host.arrays, [(out, {})], Expected(apart.values, True),
                                         overwritten=overwritten) if not c.ok]
        if differs:
            return None, (f"the original kernel gives other results in place than apart ({differs[0].name}: "
                          f"{differs[0].reason}), so it promises nothing in place")
        return {a.name: out[a.name] for a in spec.outputs}, ""

    if host.cache_key is None:
        return make()
    key = ("in place", *ev._reference_key(req, host), tuple(sorted(pairs.items())))
    return ev.data.get(key, make, lambda v: freeze((v[0] or {}).values()))


__all__ = ["HINT", "in_place_pairs", "is_in_place", "stage_of", "summary", "verify_in_place"]
