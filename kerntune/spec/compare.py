"""How far a written spec is from a correct one: the hand edits it needs.

Two specs are compared by meaning, not text: array shapes by their element
counts, launches and scalar values by their values, all evaluated at the
correct spec's shapes (and held-out shapes). A size the two name
differently (the written spec's ``grid_x`` for the correct ``num_rows``) is
matched through the launch grid. Each field that must change counts as one
edit; a TODO counts as one. ``free_grid`` / ``free_block`` accept any grid
(a grid-stride loop covers the work with any) or any block that is a
multiple of 32 up to 1024 (a block-stride loop with warp reductions).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kerntune.source.names import KernelNameError, parse_kernel_name
from kerntune.spec import expr
from kerntune.spec.model import KernelSpec
from kerntune.spec.shapes import holdout_shapes, spec_shapes

TODO = "TODO"
_ALIASES = {"half": "__half", "nv_bfloat16": "__nv_bfloat16", "uint": "unsigned int", "unsigned": "unsigned int",
            "int32_t": "int", "int64_t": "long", "true": "1", "false": "0"}


@dataclass(frozen=True)
class Edit:
    field: str
    why: str


def _norm_args(name: str) -> tuple[str, tuple[str, ...]]:
    try:
        kn = parse_kernel_name(name)
    except KernelNameError:
        return name, ()
    args = tuple(_ALIASES.get(a.replace(" ", ""), a.replace(" ", "")) for a in kn.template_args or ())
    return kn.base, args


def _is_todo(v: Any) -> bool:
    return isinstance(v, str) and TODO in v or isinstance(v, list) and any(_is_todo(x) for x in v)


def compare(written: dict, truth: KernelSpec, free_grid: bool = False, free_block: bool = False,
            ranges: dict[str, str] | None = None, requires: list[str] = ()) -> list[Edit]:
    """The edits that turn ``written`` (a spec as parsed YAML, TODOs allowed) into ``truth``.
    ``ranges``: index arrays whose value range is free as long as it stays below a size (in
    every shape of the written spec, held-out ones included); ``requires``: conditions on the
    sizes that every shape of the written spec must meet."""
    ranges = ranges or {}
    edits: list[Edit] = []
    w_grid = list((written.get("launch") or {}).get("grid") or [])
    t_grid = list(truth.launch.grid)
    w_sizes = set((written.get("sizes") or {}))
    for sh in written.get("shapes") or []:
        w_sizes |= {k for k in sh if k != "label"}
    rename: dict[str, str] = {}
    for wg, tg in zip(w_grid, t_grid):
        if isinstance(wg, str) and isinstance(tg, str) and wg.isidentifier() and tg.isidentifier() \
                and wg in w_sizes and tg in truth.sizes and wg not in truth.sizes:
            rename[wg] = tg

    def ren(e: Any) -> Any:
        if isinstance(e, str) and e != TODO:
            for a, b in rename.items():
                e = re.sub(rf"\b{a}\b", b, e)
        return e

    w_kernel = written.get("kernel", "")
    if _norm_args(str(w_kernel)) != _norm_args(truth.kernel):
        edits.append(Edit("kernel", f"{w_kernel} -> {truth.kernel}"))
    # evaluation points: the correct spec's shapes and held-out shapes, with every scalar argument
    # of the correct spec bound too (a written spec may treat it as a size)
    points = []
    for s in spec_shapes(truth) + holdout_shapes(truth):
        env = dict(s.as_dict())
        for a in truth.args:
            if not a.is_array and not a.dt.is_float:
                try:
                    env.setdefault(a.name, expr.evaluate_int(a.value, env, a.name))
                except expr.ExprError:
                    pass
        points.append(env)

    def values(e: Any) -> list[int] | None:
        if _is_todo(e):
            return None
        try:
            return [expr.evaluate_int(ren(e), p, "expression") for p in points]
        except expr.ExprError:
            return None

    def count(shape: list | None) -> list[int] | None:
        if shape is None or _is_todo(shape):
            return None
        out = [1] * len(points)
        for d in shape:
            v = values(d)
            if v is None:
                return None
            out = [a * b for a, b in zip(out, v)]
        return out

    w_args = list(written.get("args") or [])
    # strides `kerntune init` padded on purpose (infer.STRIDE_PAD: a kernel using the row length instead
    # of the stride is caught): stride -> the correct spec's values; an array laid out with padded rows
    # (want + PAD * (rows - 1) elements, rows = want / stride) is no edit either
    from kerntune.spec.infer import STRIDE_NAME, STRIDE_PAD

    padded: dict[str, list[int]] = {}
    for wa, ta in zip(w_args, truth.args):
        if not ta.is_array and not ta.dt.is_float and STRIDE_NAME.search(ta.name) and wa.get("name") == ta.name:
            w, t = values(wa.get("value")), values(ta.value)
            if w is not None and t is not None and all(x == y + STRIDE_PAD for x, y in zip(w, t)):
                padded[ta.name] = t

    def padded_rows(got: list[int], want: list[int]) -> bool:
        return any(all(s > 0 and n % s == 0 and g == n + STRIDE_PAD * (n // s - 1) for g, n, s in zip(got, want, st))
                   for st in padded.values())

    if len(w_args) != len(truth.args):
        edits.append(Edit("args", f"{len(w_args)} arguments, the kernel takes {len(truth.args)}"))
    for i, (wa, ta) in enumerate(zip(w_args, truth.args)):
        where = f"args.{ta.name}"
        if wa.get("name") != ta.name:
            edits.append(Edit(where + ".name", f"{wa.get('name')} -> {ta.name}"))
        if wa.get("dtype") != ta.dtype:
            edits.append(Edit(where + ".dtype", f"{wa.get('dtype')} -> {ta.dtype}"))
        if ta.is_array:
            if wa.get("shape") is None:
                edits.append(Edit(where, "a scalar in the written spec, an array in the kernel"))
                continue
            if (wa.get("intent") or "in") != ta.intent:
                edits.append(Edit(where + ".intent", f"{wa.get('intent') or 'in'} -> {ta.intent}"))
            want = count(list(ta.shape or []))
            got = count(wa.get("shape"))
            if got is None or (got != want and not padded_rows(got, want)):
                edits.append(Edit(where + ".shape", "TODO" if _is_todo(wa.get("shape")) else
                                  f"{wa.get('shape')} -> {list(ta.shape or [])}"))
            if ta.name in ranges:
                why = _range_problem(wa.get("range"), ranges[ta.name], written, rename)
                if why:
                    edits.append(Edit(where + ".range", why))
            elif ta.range is not None and list(wa.get("range") or []) != list(ta.range):
                edits.append(Edit(where + ".range", f"{wa.get('range')} -> {list(ta.range)}"))
        else:
            if ta.dt.is_float:
                if _is_todo(wa.get("value")):
                    edits.append(Edit(where + ".value", "TODO"))
                continue
            if ta.name not in padded and values(wa.get("value")) != values(ta.value):
                edits.append(Edit(where + ".value", f"{wa.get('value')} -> {ta.value}"))
    # sizes: the correct spec's constraints must hold for every shape the written spec makes
    w_sizes_spec = written.get("sizes") or {}
    missing = sorted(set(truth.sizes) - {rename.get(s, s) for s in w_sizes}
                     - {a.name for a in truth.args if not a.is_array})
    for name, c in truth.sizes.items():
        if name in missing:
            continue
        w_name = next((a for a, b in rename.items() if b == name), name)
        wc = w_sizes_spec.get(w_name) or {}
        if c.multiple_of > 1 and int(wc.get("multiple_of", 1)) % c.multiple_of:
            edits.append(Edit(f"sizes.{name}.multiple_of", f"{wc.get('multiple_of', 1)} -> {c.multiple_of}"))
        if c.min > 1 and int(wc.get("min", 1)) < c.min:
            edits.append(Edit(f"sizes.{name}.min", f"{wc.get('min', 1)} -> {c.min}"))
    for name in missing:
        edits.append(Edit(f"sizes.{name}", "a size the written spec lacks (shapes must bind it)"))
    # launch
    w_launch = written.get("launch") or {}
    w_block = list(w_launch.get("block") or [])
    if free_block:
        b = values(" * ".join(f"({x})" for x in w_block)) if w_block else None
        if b is None or any(v % 32 or v > 1024 for v in b):
            edits.append(Edit("launch.block", f"{w_block}: any multiple of 32 up to 1024 works"))
    elif [values(x) for x in w_block] != [values(x) for x in truth.launch.block]:
        edits.append(Edit("launch.block", f"{w_block} -> {list(truth.launch.block)}"))
    if free_grid:
        g = [values(x) for x in w_grid]
        if not w_grid or any(v is None or min(v) < 1 for v in g):
            edits.append(Edit("launch.grid", f"{w_grid}: any positive grid works"))
    elif len(w_grid) != len(t_grid) or [values(x) for x in w_grid] != [values(x) for x in t_grid]:
        edits.append(Edit("launch.grid", f"{w_grid} -> {t_grid}"))
    if values(w_launch.get("shared_mem", 0)) != values(truth.launch.shared_mem):
        edits.append(Edit("launch.shared_mem", f"{w_launch.get('shared_mem', 0)} -> {truth.launch.shared_mem}"))
    if truth.inputs is not None and not written.get("inputs"):
        edits.append(Edit("inputs", f"an input generator is needed ({truth.inputs.function})"))
    for cond in requires:
        bad = [s for s in _written_shapes(written) if not _holds(ren_back(cond, rename), s)]
        if bad:
            edits.append(Edit("shapes", f"{cond} fails at {bad[0]}"))
    return edits


def ren_back(text: str, rename: dict[str, str]) -> str:
    for a, b in rename.items():
        text = re.sub(rf"\b{b}\b", a, text)
    return text


def _written_shapes(written: dict) -> list[dict[str, int]]:
    """The written spec's shapes and, when it loads, its held-out shapes."""
    from pydantic import ValidationError

    out = [{k: v for k, v in s.items() if k != "label"} for s in written.get("shapes") or []]
    try:
        spec = KernelSpec.model_validate(written)
        out += [h.as_dict() for h in holdout_shapes(spec)]
    except (ValidationError, ValueError):
        pass
    return out


def _holds(cond: str, shape: dict[str, int]) -> bool:
    try:
        return bool(expr.evaluate(cond, shape))
    except expr.ExprError:
        return False


def _range_problem(rng: Any, size: str, written: dict, rename: dict[str, str]) -> str:
    if not rng or _is_todo(rng):
        return f"no range: the values index rows of {size}"
    lo, hi = rng
    name = next((a for a, b in rename.items() if b == size), size)
    shapes = _written_shapes(written)
    if lo < 0 or not shapes or any(name not in s or hi > s[name] for s in shapes):
        return f"range {rng} must stay within [0, {size}) in every shape"
    return ""
