"""Everything the CLI prints: one console per stream, the one ``fail()``,
JSON output of pydantic records, and number formatting."""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any, NoReturn

from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape

from kerntune import fmt
from kerntune.errors import ErrorCode, KerntuneError

def _width(stream) -> int | None:
    # pipes and CI logs get a fixed, generous width instead of Rich's 80 columns
    return None if stream.isatty() else int(os.environ.get("COLUMNS", "120"))


out = Console(highlight=False, width=_width(sys.stdout))
err = Console(stderr=True, highlight=False, soft_wrap=True)


class State:
    debug = False
    json = False


def set_json(on: bool) -> None:
    State.json = on


def print_json(value: Any) -> None:
    if isinstance(value, BaseModel):
        text = value.model_dump_json(indent=2)
    else:
        text = json.dumps(value, indent=2, default=lambda o: o.model_dump(mode="json") if isinstance(o, BaseModel) else str(o))
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def fail(e: KerntuneError) -> NoReturn:
    """Report an error (as JSON under --json) and exit with its status."""
    if State.json:
        print_json({"error": {"code": e.code.value, "message": e.message, "hint": e.hint, "detail": e.detail}})
    else:
        err.print(f"[bold red]error:[/] {escape(e.message)}")
        if e.detail:
            detail = e.detail if State.debug or len(e.detail) < 4000 else e.detail[:4000] + "\n... (truncated)"
            err.print(escape(detail.rstrip()), style="dim")
        if e.hint:
            err.print(f"[bold]hint:[/] {escape(e.hint)}")
    raise SystemExit(e.exit_status)


def internal(e: BaseException) -> NoReturn:
    if State.debug:
        traceback.print_exception(e)
    fail(KerntuneError(ErrorCode.INTERNAL, f"unexpected {type(e).__name__}: {e}",
                       hint="this is a bug in kerntune; rerun with --debug for the traceback and report it"))


fmt_ms = fmt.ms
fmt_bytes = fmt.nbytes
fmt_pct = fmt.pct


def fmt_x(x: float | None) -> str:
    return fmt.times(x, 2)


fmt_interval = fmt.interval
