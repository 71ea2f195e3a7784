"""The winning kernel beside the original (difflib): side-by-side rows for the
HTML report, with long unchanged stretches folded and changed characters
marked, and a unified diff for the Markdown report."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Optional

CONTEXT = 3          # unchanged lines kept around each change
INTRALINE = 200      # longer lines are not compared character by character


@dataclass(frozen=True)
class Row:
    kind: str                      # equal, replace, delete, insert, fold
    left_no: Optional[int] = None
    left: str = ""
    right_no: Optional[int] = None
    right: str = ""
    folded: int = 0                # for kind == "fold": how many unchanged lines are hidden


def _lines(text: str) -> list[str]:
    return text.expandtabs(4).splitlines()


def side_by_side(a: str, b: str, context: int = CONTEXT) -> list[Row]:
    left, right = _lines(a), _lines(b)
    rows: list[Row] = []
    ops = difflib.SequenceMatcher(None, left, right, autojunk=False).get_opcodes()
    for idx, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag == "equal":
            n = i2 - i1
            head = 0 if idx == 0 else context            # context after the change before it
            tail = 0 if idx == len(ops) - 1 else context  # context before the change after it
            if len(ops) == 1 or n <= head + tail + 1:
                keep = list(range(n))
            else:
                keep = [*range(head), None, *range(n - tail, n)]
            for k in keep:
                if k is None:
                    rows.append(Row("fold", folded=n - head - tail))
                else:
                    rows.append(Row("equal", i1 + k + 1, left[i1 + k], j1 + k + 1, right[j1 + k]))
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            li, rj = i1 + k, j1 + k
            has_l, has_r = li < i2, rj < j2
            kind = "replace" if has_l and has_r else "delete" if has_l else "insert"
            rows.append(Row(kind, li + 1 if has_l else None, left[li] if has_l else "",
                            rj + 1 if has_r else None, right[rj] if has_r else ""))
    return rows


def segments(old: str, new: str) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
    """Both lines cut into (text, changed) pieces."""
    if len(old) > INTRALINE or len(new) > INTRALINE:
        return [(old, True)], [(new, True)]
    sm = difflib.SequenceMatcher(None, old, new, autojunk=False)
    a, b = [], []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if i2 > i1:
            a.append((old[i1:i2], tag != "equal"))
        if j2 > j1:
            b.append((new[j1:j2], tag != "equal"))
    return a, b


def unified(a: str, b: str, a_name: str, b_name: str, context: int = CONTEXT) -> str:
    return "\n".join(difflib.unified_diff(_lines(a), _lines(b), a_name, b_name, n=context, lineterm=""))


def counts(a: str, b: str) -> tuple[int, int]:
    """(lines removed, lines added)."""
    removed = added = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, _lines(a), _lines(b), autojunk=False).get_opcodes():
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return removed, added


__all__ = ["Row", "counts", "segments", "side_by_side", "unified"]
