"""What makes two kernels the same kernel: the same source once comments and
whitespace are set aside (and the header kerntune writes above drop-in
kernels), the same compile options, and the same launch on every shape."""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from kerntune.engine.evaluate import KernelInstance
    from kerntune.spec.model import KernelSpec, Shape

# the comment lines kerntune puts at the top of best.* and per_shape/* (tuner/kernel_files.py writes them)
HEADER = re.compile(r"\A// kerntune[^\n]*\n(?:// (?:entry point|launch|compile options): [^\n]*\n)*")
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_SPACE_AROUND = re.compile(r"\s*([^\w\s])\s*")


def strip_header(text: str) -> str:
    return HEADER.sub("", text, count=1)


def normalize(source: str) -> str:
    """The source without comments and with whitespace collapsed: what deduplication compares."""
    text = _COMMENTS.sub(" ", strip_header(source))
    return " ".join(text.split())


def source_hash(source: str) -> str:
    return hashlib.sha256(normalize(source).encode()).hexdigest()[:16]


def tokens(source: str) -> str:
    """The source as its tokens: comments gone, no whitespace where it does not separate words."""
    return _SPACE_AROUND.sub(r"\1", normalize(source))


def same_kernel(a: "KernelInstance", b: "KernelInstance", spec: "KernelSpec", shapes: Sequence["Shape"]) -> bool:
    """Whether ``a`` and ``b`` are the same kernel: same tokens, entry point, options (a flag
    given twice counts once), and launch on every shape."""
    from kerntune.engine.evaluate import resolve_launch

    if (a.name, a.lang, tuple(dict.fromkeys(a.options))) != (b.name, b.lang, tuple(dict.fromkeys(b.options))):
        return False
    if tokens(a.source) != tokens(b.source):
        return False
    return all(resolve_launch(spec, a, s) == resolve_launch(spec, b, s) for s in shapes)
