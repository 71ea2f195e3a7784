"""Drop-in kernel files from template instances: the rendered source under a
comment header that says how to launch it (grid, block and dynamic shared
memory as expressions of the sizes, the parameter values written in) and
which compile options it needs. `kerntune tune` writes the general
configuration and each shape's best this way; `kerntune optimize` too."""

from __future__ import annotations

import ast
import json
import re
import shlex
from pathlib import Path
from typing import Any, Callable, Optional

from pydantic import ValidationError

from kerntune.fmt import interval as fmt_interval
from kerntune.fsutil import write_atomic
from kerntune.source.normalize import HEADER, strip_header
from kerntune.spec.model import ImplementationLaunch, KernelSpec, LaunchSpec

EXT = {"cuda": ".cu", "opencl": ".cl"}

_HEADER = ("// {what}\n// launch: grid {grid}, block {block}, dynamic shared memory {shared} B (expressions of the "
           "sizes)\n// compile options: {options}\n")


def _constant(node: ast.AST):
    """The truth of a comparison (or boolean combination) of constants, else None."""
    if isinstance(node, ast.Constant):
        return bool(node.value)
    if isinstance(node, ast.BoolOp):
        values = [_constant(v) for v in node.values]
        if None in values:
            return None
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        v = _constant(node.operand)
        return None if v is None else not v
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.left, ast.Constant) \
            and isinstance(node.comparators[0], ast.Constant):
        a, b = node.left.value, node.comparators[0].value
        ops = {ast.Eq: lambda: a == b, ast.NotEq: lambda: a != b, ast.Lt: lambda: a < b, ast.LtE: lambda: a <= b,
               ast.Gt: lambda: a > b, ast.GtE: lambda: a >= b}
        f = ops.get(type(node.ops[0]))
        try:
            return None if f is None else bool(f())
        except TypeError:
            return None
    return None


def resolve_launch_params(launch: LaunchSpec, config: dict[str, Any]) -> LaunchSpec:
    """The template's launch with parameter values written in (sizes stay symbolic)."""

    def sub(e):
        if isinstance(e, (int, float)):
            return e
        tree = ast.parse(str(e), mode="eval")

        class S(ast.NodeTransformer):
            def visit_Name(self, node):
                if node.id in config:
                    return ast.copy_location(ast.Constant(config[node.id]), node)
                return node

            def visit_IfExp(self, node):
                # a choice between launches by a parameter (grid = A if ROWS == 'thread' else B) keeps
                # only the chosen side once the parameter is known
                self.generic_visit(node)
                test = _constant(node.test)
                if test is not None:
                    return node.body if test else node.orelse
                return node

        out = ast.unparse(S().visit(tree))
        return int(out) if out.lstrip("-").isdigit() else out

    return LaunchSpec(grid=[sub(g) for g in launch.grid], block=[sub(b) for b in launch.block],
                      shared_mem=sub(launch.shared_mem))


def with_header(source: str, what: str, launch: LaunchSpec, options: tuple[str, ...]) -> str:
    """``source`` under a header of its own (a header it already has, from an earlier run, is replaced)."""
    return _HEADER.format(what=what, grid=list(launch.grid), block=list(launch.block), shared=launch.shared_mem,
                          options=" ".join(options) or "none") + strip_header(source)


_LAUNCH_LINE = re.compile(r"// launch: grid (\[[^\]]*\]), block (\[[^\]]*\]), dynamic shared memory (.+?) B"
                          r"(?: \(expressions of the sizes\))?$")
_HEADER_LINES = ("// launch: ", "// compile options: ", "// entry point: ")


def read_header(text: str) -> ImplementationLaunch | None:
    """The launch, compile options and entry point that :func:`with_header` wrote above a kernel, or None
    when the file does not start with kerntune's header. Raises ValueError when the header is there but
    cannot be read (edited by hand)."""
    header = HEADER.match(text)
    if header is None:
        if text.startswith(_HEADER_LINES):
            # a header's lines copied without its first: read as a comment it would be silently ignored
            raise ValueError("the file starts with a header's lines but not with its first line, "
                             "'// kerntune: ...' (add that line above them, or make them ordinary comments)")
        return None
    fields: dict[str, Any] = {}
    for line in header.group(0).splitlines()[1:]:
        if line.startswith("// launch: "):
            m = _LAUNCH_LINE.match(line)
            try:
                grid, block = ast.literal_eval(m.group(1)), ast.literal_eval(m.group(2))
            except (AttributeError, ValueError, SyntaxError):
                raise ValueError(f"its launch line cannot be read: {line}") from None
            shared = m.group(3).strip()
            fields.update(grid=grid, block=block, shared_mem=int(shared) if shared.isdigit() else shared)
        elif line.startswith("// compile options: "):
            options = line[len("// compile options: "):].strip()
            fields["compile_options"] = [] if options == "none" else shlex.split(options)
        elif line.startswith("// entry point: "):
            fields["kernel"] = line[len("// entry point: "):].strip()
    if "grid" not in fields:
        return None
    try:
        return ImplementationLaunch(**fields)
    except ValidationError as e:
        raise ValueError(f"its launch is not valid: {e.errors()[0]['msg']}") from None


def launch_dict(launch: LaunchSpec, options: tuple[str, ...] = (), kernel: str | None = None) -> dict[str, Any]:
    """A spec ``launches`` entry; ``kernel`` when the file's entry point differs from the spec's
    (a templated kernel whose instantiation is a tuned parameter)."""
    out: dict[str, Any] = {"grid": list(launch.grid), "block": list(launch.block), "shared_mem": launch.shared_mem}
    if options:
        out["compile_options"] = list(options)
    if kernel:
        out["kernel"] = kernel
    return out


def own_kernel(template, config: dict[str, Any], spec: KernelSpec) -> str | None:
    """The instance's entry point when it is not the spec's own."""
    name = template.kernel_name(spec, config)
    return name if name != spec.kernel else None


def file_stem(label: str) -> str:
    """A shape label as a file name."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", label).strip("_") or "shape"


def instance_file(template, config: dict[str, Any], spec: KernelSpec, what: str,
                  finish: Optional[Callable[[str], str]] = None) -> tuple[str, LaunchSpec, tuple[str, ...]]:
    """(file text, launch, compile options) of one template instance; `finish` post-processes the
    rendered source (the optimizer bakes its macros in)."""
    launch = resolve_launch_params(template.decl.launch, config)
    src = template.render(config, spec)
    options = template.options(config, spec)
    name = own_kernel(template, config, spec)
    what += f"\n// entry point: {name}" if name else ""
    return with_header(finish(src) if finish else src, what, launch, options), launch, options


def write_tuned_kernels(run_path: Path, template, spec: KernelSpec, summary, original=None) -> list[str]:
    """best<ext> (the general configuration) and per_shape/<label><ext> (each shape's best) for a
    finished `kerntune tune` run, with kernels.json giving every file's launch; the files written
    (none for a run over an imported Kernel Tuner cache: its template holds no kernel).

    After a confirmation (``summary.test``) the files are what it picked, so that each file is the kernel
    its claim is about: best<ext> the configuration the tester names general (with its confirmed
    interval, faster or not), and each shape's file its confirmed winner, or the baseline (``original``,
    else the template's baseline configuration) where no candidate was confirmed faster on that shape.
    Without one (a replay, or a run with no baseline), the search's own picks."""
    from kerntune.tuner.kerneltuner import REPLAY_ONLY
    from kerntune.tuner.space import Space

    if template.decl.description == REPLAY_ONLY:
        return []
    ext = EXT[template.lang]
    written: list[str] = []
    launches: dict[str, Any] = {}

    def put(rel: str, config: dict[str, Any], what: str) -> None:
        text, launch, options = instance_file(template, config, spec, what)
        record(rel, text, launch_dict(launch, options, own_kernel(template, config, spec)) | {"config": config})

    def record(rel: str, text: str, launch: dict[str, Any]) -> None:
        dest = run_path / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(dest, text)
        launches[rel] = launch
        written.append(rel)

    def put_baseline(rel: str, what: str) -> None:
        if original is None:
            config = Space.of(template).baseline()
            put(rel, config, what + " (the template's baseline configuration)")
            return
        launch = original.launch or spec.launch
        record(rel, with_header(original.source, what + f" ({original.label})", launch, original.options),
               launch_dict(launch, original.options, original.name))

    test = summary.test
    b = summary.best          # the one rule for which configuration best<ext> is, and its claim
    if b is not None and b.confirmed:
        verdict = "faster" if b.faster else "not a verified speedup"
        put("best" + ext, b.config, f"kerntune tune: general configuration {b.key}, {fmt_interval(b.speedup)} "
                                    f"geomean over the baseline (95% confidence interval, confirmed: {verdict})")
    elif b is not None:
        how = f", {b.estimate:.3f}x geomean over the baseline (the search's estimate)" if b.estimate else ""
        put("best" + ext, b.config, f"kerntune tune: general configuration {b.key}{how}")
    if test is not None and test.per_shape:
        for w in test.per_shape:
            rel = f"per_shape/{file_stem(w.label)}{ext}"
            where = f"kerntune tune: shape {w.label} {w.shape}"
            cand = test.candidate(w.round, w.winner) if w.winner != "original" else None
            if cand is not None:
                put(rel, cand.config, f"{where}: best configuration {cand.key}, {fmt_interval(w.interval)} over the "
                                      "baseline (95% confidence interval, confirmed)")
            else:
                put_baseline(rel, f"{where}: no configuration was confirmed faster than the baseline; this is the "
                                  "baseline")
    else:
        for s in summary.shapes:
            if s.best_key:
                how = f", {s.speedup:.3f}x over the baseline (the search's estimate)" if s.speedup else ""
                put(f"per_shape/{file_stem(s.label)}{ext}", s.best_config,
                    f"kerntune tune: shape {s.label} {s.shape}: best configuration {s.best_key}{how}")
    if written:
        write_atomic(run_path / "kernels.json", json.dumps(launches, indent=1) + "\n")
    return written
