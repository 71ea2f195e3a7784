"""Find, parse and validate a kernel spec.

A spec lives either in a block comment at the top of the kernel file::

    /* kerntune
    kernel: vector_add
    ...
    */

or in a sidecar YAML file with the kernel's stem (``vector_add.cu`` ->
``vector_add.yaml``), or in ``spec.yaml`` in the kernel's folder, or wherever
``--spec`` points. Every mistake is reported
as ``file:line: path: what was expected, what was found``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.spec.model import (
    ArgSpec, CompileOptions, FunctionRef, ImplementationLaunch, KernelSpec, LaunchSpec, Problem, SizeSpec,
    ToleranceSpec,
    format_path, semantic_problems,
)

INLINE_OPEN = re.compile(r"/\*\s*kerntune\s*\n")
SPEC_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class LoadedSpec:
    spec: KernelSpec
    origin: Path          # the file the spec text came from
    base_dir: Path        # relative paths in the spec resolve here
    inline: bool
    text: str

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:16]


def read_text(path: Path, what: str = "file") -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KerntuneError(ErrorCode.FILE, f"{what} not found: {path}",
                            hint="check the path; relative paths are resolved from the current directory") from None
    except IsADirectoryError:
        raise KerntuneError(ErrorCode.FILE, f"{what} is a directory, expected a file: {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise KerntuneError(ErrorCode.FILE, f"cannot read {what} {path}: {e}") from None


def inline_block(source: str) -> tuple[str, int] | None:
    """The YAML text of a leading ``/* kerntune ... */`` block and the line it starts on."""
    m = INLINE_OPEN.search(source)
    if not m:
        return None
    before = source[: m.start()]
    if before.strip() and not all(line.strip().startswith("//") or not line.strip() for line in before.splitlines()):
        return None  # the block must come before any code
    end = source.find("*/", m.end())
    if end < 0:
        raise KerntuneError(ErrorCode.SPEC, "the '/* kerntune' spec block is never closed with '*/'")
    first_line = source.count("\n", 0, m.end()) + 1
    return source[m.end():end], first_line


def sidecar_for(kernel: Path) -> Path | None:
    """``<stem>.yaml`` beside the kernel, else ``spec.yaml`` in its folder (one
    spec shared by several implementations, e.g. naive.cu and tiled.cu)."""
    stem = kernel.name.split(".")[0]
    for name in (stem, "spec"):
        for suffix in SPEC_SUFFIXES:
            cand = kernel.with_name(name + suffix)
            if cand.exists():
                return cand
    return None


def load_for_kernel(kernel: Path, spec_path: Path | None = None) -> LoadedSpec:
    """The spec that belongs to ``kernel``: explicit, inline, or sidecar."""
    if spec_path is not None:
        return load_file(spec_path)
    source = read_text(kernel, "kernel file")
    block = inline_block(source)
    side = sidecar_for(kernel)
    if block is not None and side is not None:
        raise KerntuneError(ErrorCode.SPEC, f"{kernel} has both an inline spec block and a sidecar spec {side}",
                            hint="keep one of them, or name the one to use with --spec")
    if block is not None:
        text, line = block
        return parse(text, origin=kernel, base_dir=kernel.parent, inline=True, line_offset=line - 1)
    if side is not None:
        return load_file(side)
    stem = kernel.name.split(".")[0]
    raise KerntuneError(ErrorCode.SPEC, f"no spec found for {kernel}",
                        hint=f"write one with `kerntune init {kernel}` (creates {kernel.with_name(stem + '.yaml')}), "
                             "or pass --spec FILE")


def load_file(path: Path) -> LoadedSpec:
    text = read_text(path, "spec file")
    if path.suffix not in SPEC_SUFFIXES:
        block = inline_block(text)
        if block is not None:
            return parse(block[0], origin=path, base_dir=path.parent, inline=True, line_offset=block[1] - 1)
    return parse(text, origin=path, base_dir=path.parent, inline=False)


def parse(text: str, origin: Path, base_dir: Path, inline: bool = False, line_offset: int = 0) -> LoadedSpec:
    where = str(origin)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1 + line_offset}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        raise KerntuneError(ErrorCode.SPEC, f"{where}{line}: the spec is not valid YAML: {problem}",
                            hint="look for an unclosed bracket or quote, a tab in the indentation or a missing space "
                                 "after a colon at or above that line; the format is in the README, section "
                                 "'The kernel spec'") from None
    if not isinstance(data, dict):
        raise KerntuneError(ErrorCode.SPEC, f"{where}: the spec must be a YAML mapping (kernel:, args:, launch:, "
                                            f"shapes:, ...), found {type(data).__name__}",
                            hint="see the spec example in the README")
    lines = _line_map(text)
    try:
        spec = KernelSpec.model_validate(data)
    except ValidationError as e:
        problems = _pydantic_problems(e, lines)
        raise _spec_error(where, problems + _problems_beyond(data, e, problems), lines, line_offset) from None
    problems = semantic_problems(spec)
    if not problems:     # the names are right: evaluate the expressions on every shape
        from kerntune.spec.shapes import evaluation_problems

        problems = evaluation_problems(spec)
    if problems:
        raise _spec_error(where, problems, lines, line_offset)
    return LoadedSpec(spec=spec, origin=origin, base_dir=base_dir, inline=inline, text=text)


# an argument's field whose value is wrong, and a value in its place that lets the rest of the spec be
# checked: `kerntune init` writes `dtype: TODO` and `shape: [TODO]`, and the second was reported only once
# the first was fixed (a spec's problems came in stages); "inout" so that no "nothing to verify" follows
_STAND_INS = {"dtype": "fp32", "intent": "inout"}


def _problems_beyond(data: dict, err: ValidationError, found: list[Problem]) -> list[Problem]:
    """The problems the semantic checks find once each wrong argument dtype or intent is given a stand-in
    (none unless those were the only field errors), less those already ``found`` at the same place."""
    import copy

    patched = copy.deepcopy(data)
    for e in err.errors(include_url=False):
        loc = tuple(e["loc"])
        if len(loc) == 3 and loc[0] == "args" and isinstance(loc[1], int) and loc[2] in _STAND_INS and \
                isinstance(patched.get("args"), list) and isinstance(patched["args"][loc[1]], dict):
            patched["args"][loc[1]][loc[2]] = _STAND_INS[loc[2]]
        else:
            return []
    try:
        spec = KernelSpec.model_validate(patched)
    except ValidationError:
        return []
    seen = {p.path for p in found}
    return [p for p in semantic_problems(spec) if p.path not in seen]


def problems_error(loaded: LoadedSpec, problems: list[Problem], head: str, hint: str) -> KerntuneError:
    """A SPEC error for problems found after loading (e.g. against the kernel's signature), each
    with the spec file's line."""
    offset = 0
    if loaded.inline:
        try:
            block = inline_block(loaded.origin.read_text(encoding="utf-8"))
            offset = block[1] - 1 if block else 0
        except OSError:
            pass
    return _spec_error(str(loaded.origin), problems, _line_map(loaded.text), offset, head=head, hint=hint)


def _spec_error(where: str, problems: list[Problem], lines: dict[tuple, int], offset: int,
                head: str = "invalid kernel spec",
                hint: str = "the spec format is documented in the README (section 'The kernel spec')") -> KerntuneError:
    from kerntune.spec.model import STILL_TODO

    todos = sum(STILL_TODO in p.message for p in problems)
    if todos:
        if todos == len(problems) and head == "invalid kernel spec":
            head = "the spec still has " + ("a TODO" if todos == 1 else f"{todos} TODOs") + " to fill in"
        hint = ("`kerntune init` marks TODO what it could not infer (the comment on the line says why): replace "
                "each TODO, then run `kerntune check`")
    rows = []
    for p in problems:
        line = _line_for(p.path, lines)
        loc = f"{where}:{line + offset}" if line else where
        rows.append(f"{loc}: {format_path(p.path)}: {p.message}")
    if not head.startswith("the spec still has"):
        head = head + (f" ({len(rows)} problems)" if len(rows) > 1 else "")
    return KerntuneError(ErrorCode.SPEC, head + "\n  " + "\n  ".join(rows), hint=hint)


def _line_map(text: str) -> dict[tuple, int]:
    """Map every YAML path (keys and list indices) to its 1-based line."""
    out: dict[tuple, int] = {}
    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        return out

    def walk(node: Any, path: tuple) -> None:
        out[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                key = k.value
                out[path + (key,)] = k.start_mark.line + 1
                walk(v, path + (key,))
                out[path + (key,)] = k.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                walk(v, path + (i,))

    if root is not None:
        walk(root, ())
    return out


def _line_for(path: tuple, lines: dict[tuple, int]) -> int | None:
    for n in range(len(path), -1, -1):
        if path[:n] in lines and (n > 0 or not path):
            return lines[path[:n]]
    return None


_MODEL_AT = {
    (): KernelSpec, ("args", int): ArgSpec, ("launch",): LaunchSpec, ("launches", str): ImplementationLaunch,
    ("sizes", str): SizeSpec,
    ("tolerance",): ToleranceSpec, ("args", int, "tolerance"): ToleranceSpec,
    ("reference",): FunctionRef, ("inputs",): FunctionRef, ("compile_options",): CompileOptions,
}


def _allowed_fields(parent: tuple) -> list[str] | None:
    shape = tuple(int if isinstance(p, int) else (str if i == 1 and parent[0] in ("sizes", "launches") else p)
                  for i, p in enumerate(parent))
    model = _MODEL_AT.get(shape)
    return list(model.model_fields) if model else None


def _pydantic_problems(err: ValidationError, lines: dict[tuple, int]) -> list[Problem]:
    merged: dict[tuple, list[str]] = {}
    for e in err.errors(include_url=False):
        loc = tuple(e["loc"])
        kind = e["type"]
        msg = e["msg"].removeprefix("Value error, ")
        if kind == "missing":
            path, msg = loc, "required field is missing"
        elif kind == "extra_forbidden":
            path = loc
            allowed = _allowed_fields(loc[:-1])
            msg = f"unknown field {loc[-1]!r}" + (f"; allowed: {', '.join(allowed)}" if allowed else "")
        else:
            n = len(loc)
            while n > 0 and loc[:n] not in lines:
                n -= 1
            path = loc[:n] if n else loc
            found = e.get("input")
            if kind not in ("value_error", "assertion_error") and not isinstance(found, (dict, list)):
                msg = f"{_expected(msg)}, found {found!r}"
        bucket = merged.setdefault(path, [])
        if msg not in bucket:
            bucket.append(msg)
    return [Problem(p, " | ".join(m)) for p, m in merged.items()]


def _expected(msg: str) -> str:
    msg = msg.removeprefix("Input should be ")
    return "expected " + msg
