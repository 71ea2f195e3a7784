"""Local headers of an extension source, inlined into one text.

``#include "x.cuh"`` is looked up beside the including file, then in the
include folders (the ones given, then ``include/`` folders of the file's
ancestors, as extension trees lay them out); ``#include <x.h>`` only in the
include folders. A header found is inlined once (``#pragma once`` semantics);
everything else stays an include line for the extractor to judge. A quoted
include that is found nowhere is an error naming where it was looked for.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from kerntune.errors import ErrorCode, KerntuneError

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"].*$', re.M)
PRAGMA_ONCE = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+once\b.*$", re.M)
AUTO_LEVELS = 3            # how many ancestors of the kernel file are searched for an include/ folder


@dataclass
class Flattened:
    text: str
    origins: list[tuple[str, int]]                         # per line of text: (file, line) it came from
    inlined: list[str] = field(default_factory=list)       # headers inlined, in order
    search: list[Path] = field(default_factory=list)       # include folders searched

    def origin(self, offset: int) -> str:
        line = self.text.count("\n", 0, offset)
        f, n = self.origins[min(line, len(self.origins) - 1)]
        return f"{f}:{n}"


def search_dirs(path: Path, include_dirs: list[Path]) -> list[Path]:
    dirs = [d for d in include_dirs]
    here = path.resolve().parent
    for anc in [here, *list(here.parents)[:AUTO_LEVELS]]:
        cand = anc / "include"
        if cand.is_dir() and cand not in dirs:
            dirs.append(cand)
    return dirs


def _display(p: Path, root: Path) -> str:
    return os.path.relpath(p.resolve(), root)


def flatten(path: Path, text: str, include_dirs: list[Path] = ()) -> Flattened:
    """``text`` (the contents of ``path``) with its local headers inlined."""
    dirs = search_dirs(path, list(include_dirs))
    root = path.resolve().parent
    seen: set[Path] = set()
    out_lines: list[str] = []
    origins: list[tuple[str, int]] = []
    inlined: list[str] = []

    def emit(line: str, where: tuple[str, int]) -> None:
        out_lines.append(line)
        origins.append(where)

    def walk(file: Path, body: str, depth: int) -> None:
        name = _display(file, root) if file != path else path.name
        for i, line in enumerate(body.split("\n"), 1):
            if PRAGMA_ONCE.match(line):
                continue
            m = INCLUDE.match(line)
            if m is None:
                emit(line, (name, i))
                continue
            quoted, target = m.group(1) == '"', m.group(2).strip()
            places = ([file.parent] if quoted else []) + dirs
            found = next((d / target for d in places if (d / target).is_file()), None)
            if found is None:
                if quoted:
                    looked = ", ".join(str(d) for d in places)
                    raise KerntuneError(ErrorCode.FILE, f"{name}:{i}: local header {target!r} not found "
                                                        f"(looked in {looked})",
                                        hint="pass the folder that holds it with --include-dir DIR "
                                             "(or list it under include_dirs: in the spec)")
                emit(line, (name, i))
                continue
            real = found.resolve()
            if real in seen:
                continue
            if depth > 32:
                raise KerntuneError(ErrorCode.FILE, f"{name}:{i}: headers nested more than 32 deep")
            seen.add(real)
            try:
                header = real.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise KerntuneError(ErrorCode.FILE, f"cannot read header {found}: {e}") from None
            shown = _display(real, root)
            inlined.append(shown)
            emit(f"// >>> kerntune: inlined {shown}", (name, i))
            walk(real, header, depth + 1)
            emit(f"// <<< kerntune: end of {shown}", (name, i))

    walk(path, text, 0)
    return Flattened("\n".join(out_lines), origins, inlined, dirs)
