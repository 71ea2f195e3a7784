"""Which kernels a ``regress PATH...`` means: files as named, and in folders
(recursively) every ``.cu``/``.cl`` file that has a spec (an inline
``/* kerntune`` block, a sidecar ``NAME.yaml`` or a ``spec.yaml`` beside it).
Folders that hold kerntune runs (``run.json``, ``tuning.db``) and hidden
folders are not searched."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.kernelfile import language_of
from kerntune.spec.load import inline_block, sidecar_for

KERNEL_SUFFIXES = (".cu", ".cl")
RUN_MARKERS = ("run.json", "tuning.db")


@dataclass(frozen=True)
class Found:
    path: Path
    explicit: bool       # named on the command line (not found in a folder)


def has_spec(path: Path) -> bool:
    if sidecar_for(path) is not None:
        return True
    try:
        head = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    try:
        return inline_block(head) is not None
    except KerntuneError:
        return True      # an unclosed block: loading it reports the problem


def _walk(folder: Path) -> list[Path]:
    if any((folder / m).exists() for m in RUN_MARKERS):
        return []
    out: list[Path] = []
    for child in sorted(folder.iterdir()):
        if child.name.startswith(".") or child.name == "__pycache__":
            continue
        if child.is_dir():
            out += _walk(child)
        elif child.suffix in KERNEL_SUFFIXES and has_spec(child):
            out.append(child)
    return out


def find_kernels(paths: list[Path]) -> list[Found]:
    found: dict[Path, Found] = {}
    for p in paths:
        if not p.exists():
            raise KerntuneError(ErrorCode.FILE, f"no such file or folder: {p}",
                                hint="pass kernel files (.cu, .cl) or folders that hold them")
        if p.is_dir():
            hits = _walk(p)
            if not hits:
                raise KerntuneError(ErrorCode.USAGE, f"no kernel with a spec under {p}",
                                    hint="a kernel is a .cu or .cl file with a spec: an inline '/* kerntune' block, "
                                         "a sidecar NAME.yaml, or spec.yaml in its folder")
            for h in hits:
                found.setdefault(h.resolve(), Found(h, explicit=False))
        else:
            language_of(p)      # a clear error for anything that is not a kernel file
            found[p.resolve()] = Found(p, explicit=True)
    return list(found.values())
