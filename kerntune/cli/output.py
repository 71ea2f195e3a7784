"""Everything the CLI prints: one console per stream, the one ``fail()``,
JSON output of pydantic records, progress, tables, and number formatting.

Output is correct wherever it goes:

* results go to stdout, progress and errors to stderr, and every line ends
  with a newline (nothing is ever glued to the next line);
* text is never cut or wrapped into the middle of a path: the terminal wraps
  long lines itself (``soft_wrap``); only tables are laid out to a width,
  the terminal's, or ``$COLUMNS`` (default 120) when the output is a pipe or
  a file, and columns holding things people type (device ids, shape labels,
  configurations) fold onto more lines instead of being cut with an ellipsis;
* live progress is drawn only on a terminal, and erased when the command
  ends or is interrupted; elsewhere each step is one plain line.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from dataclasses import dataclass
from typing import Any, NoReturn, Optional, Union

from pydantic import BaseModel
from rich import box
from rich.console import Console, Group
from rich.measure import Measurement
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from kerntune import fmt
from kerntune.errors import ErrorCode, KerntuneError

PIPE_WIDTH = 120


def _width(stream) -> int | None:
    """The terminal's width on a terminal (None: Rich asks it); $COLUMNS or 120 elsewhere."""
    try:
        if stream.isatty():
            return None
    except (AttributeError, ValueError):
        pass
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else PIPE_WIDTH


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """The reader of our output went away (`kerntune ... | head`): stop as a program killed by
        SIGPIPE does (141), not with rich's 1, which kerntune's exit codes read as 'the kernel is wrong'."""
        self.quiet = True
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), (sys.stderr if self.stderr else sys.stdout).fileno())
        except OSError:
            pass
        raise SystemExit(141)


out = _Console(highlight=False, soft_wrap=True, width=_width(sys.stdout))
err = _Console(stderr=True, highlight=False, soft_wrap=True, width=_width(sys.stderr))


class State:
    debug = False
    json = False


def set_json(on: bool) -> None:
    State.json = on


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value


def print_json(value: Any, error: KerntuneError | None = None) -> None:
    """One JSON document on stdout; with ``error``, the document carries it (``"error": {...}``)."""
    if error is not None:
        data = _jsonable(value)
        data = {**data, "error": error_dict(error)} if isinstance(data, dict) else {"result": data,
                                                                                 "error": error_dict(error)}
        text = json.dumps(data, indent=2, default=str)
    elif isinstance(value, BaseModel):
        text = value.model_dump_json(indent=2)
    else:
        text = json.dumps(value, indent=2, default=lambda o: _jsonable(o) if isinstance(o, BaseModel) else str(o))
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def error_dict(e: KerntuneError) -> dict[str, Any]:
    return {"code": e.code.value, "message": e.message, "hint": e.hint, "detail": e.detail}


def fail(e: KerntuneError) -> NoReturn:
    """Report an error (as JSON under --json) and exit with its status."""
    if State.json:
        print_json({"error": error_dict(e)})
    else:
        err.print(f"[bold red]error:[/] {escape(e.message)}")
        if e.detail:
            detail = e.detail if State.debug or len(e.detail) < 4000 else e.detail[:4000] + "\n... (truncated)"
            err.print(escape(detail.rstrip()), style="dim")
        if e.hint:
            err.print(f"[bold]hint:[/] {escape(e.hint)}")
    raise SystemExit(e.exit_status)


def finish(value: BaseModel, error: KerntuneError | None) -> None:
    """The end of a command that has a result and may also have failed (a kernel that does not
    verify): under --json one document, the result with the error in it; then the error's exit status."""
    if State.json:
        print_json(value, error)
        if error is not None:
            raise SystemExit(error.exit_status)
    elif error is not None:
        fail(error)


def internal(e: BaseException) -> NoReturn:
    if State.debug:
        traceback.print_exception(e)
    fail(KerntuneError(ErrorCode.INTERNAL, f"unexpected {type(e).__name__}: {e}",
                       hint="this is a bug in kerntune; rerun with --debug for the traceback and report it"))


# --- tables ---------------------------------------------------------------------------------------
Cell = Union[str, Text]


@dataclass
class Grid:
    """A table of results in kerntune's one style (see :func:`grid`)."""

    headers: list[str]
    rows: list[list[Cell]]
    title: str = ""
    right: frozenset[int] = frozenset()
    show_header: bool = True

    def table(self) -> Table:
        t = Table(title=self.title or None, title_justify="left", box=box.SIMPLE_HEAD if self.show_header else None,
                  show_header=self.show_header, show_edge=False, pad_edge=False)
        for i, h in enumerate(self.headers):
            t.add_column(h, justify="right" if i in self.right else "left", overflow="fold")
        for row in self.rows:
            t.add_row(*(_text(c) for c in row))
        return t

    def records(self, width: Optional[int] = None) -> Group:
        """One record per row: the first cell, then every other column as 'header value'. Given a
        ``width``, a record longer than it breaks between values (continued, indented, on the next
        line), never inside one: a value wider than the whole width alone is folded."""
        lines: list[Text] = [Text(self.title, style="italic")] if self.title else []
        for row in self.rows:
            line = Text("  ").append_text(_text(row[0]))
            parts = [(" ".join(self.headers[i].split()).replace("/ ", "/").replace(" /", "/")
                      .replace("- ", "-"), _text(c))
                     for i, c in enumerate(row) if i and _text(c).plain]
            for j, (h, v) in enumerate(parts):
                piece = Text(h + " " if self.show_header else "", style="dim").append_text(v)
                sep = ": " if j == 0 else ", "
                if width is not None and j and len(line) + len(sep) + len(piece) > width:
                    lines.append(line.append(sep.rstrip()))
                    line = Text("      ").append_text(piece)
                else:
                    line.append(sep).append_text(piece)
            lines.append(line)
        return Group(*lines)


def _text(c: Cell) -> Text:
    return c if isinstance(c, Text) else Text(str(c))


def grid(headers: list[str], rows: list[list[Cell]], title: str = "", right: frozenset[int] = frozenset(),
         show_header: bool = True) -> Grid:
    """A table in kerntune's one style: strings shown as they are (no markup), a ``Text`` cell with
    its own style, ``right``: the numeric columns; the first column names the row."""
    return Grid(headers, rows, title, right, show_header)


def print_table(g: Grid, console: Optional[Console] = None) -> None:
    """A table, when it fits the width whole; when it does not (a narrow terminal), one record per
    row, wrapped between values: nothing is ever cut."""
    console = console or out
    t = g.table()
    if Measurement.get(console, console.options.update(width=10**6), t).maximum <= console.width:
        console.print(t, soft_wrap=False)
    else:
        console.print(g.records(console.width), soft_wrap=False, overflow="fold")   # broken between values


# --- progress --------------------------------------------------------------------------------------
def interactive() -> bool:
    """Whether live progress may be drawn: stderr is a terminal (that is not 'dumb') and not --json."""
    return err.is_terminal and not err.is_dumb_terminal and not State.json


class Progress:
    """What a command is doing now. On a terminal, a live panel redrawn in place and erased when the
    command ends (or is interrupted); elsewhere, each new step as one plain line on stderr (the
    same line is not repeated). ``quiet``: nothing at all (--json)."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet or State.json
        self.live: Optional[Live] = Live(console=err, refresh_per_second=4, transient=True) \
            if interactive() and not self.quiet else None
        self._last = ""

    def __enter__(self) -> "Progress":
        if self.live is not None:
            self.live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)

    def show(self, lines: list[str], step: str = "") -> None:
        """Redraw the panel (terminal) with ``lines``; elsewhere print ``step`` when it is new."""
        if self.quiet:
            return
        if self.live is not None:
            self.live.update(Group(*(Text.from_markup(x) if i else Text.from_markup(x, style="bold")
                                     for i, x in enumerate(lines))))
        elif step:
            self.line(step)

    def line(self, text: str) -> None:
        """A plain line that stays (above the panel on a terminal)."""
        if self.quiet or text == self._last:
            return
        self._last = text
        err.print(Text.from_markup(text))

    def status(self, text: str) -> None:
        """A one-line panel: the current step."""
        self.show([escape(text)], escape(text))

    def count(self, what: str, done: int, total: int) -> None:
        """``what: done/total``: every step on a terminal, each tenth of the way elsewhere."""
        text = escape(f"{what}: {done}/{total}")
        tenth = total > 0 and (done == total or done % max(1, total // 10) == 0)
        self.show([text], text if tenth else "")


fmt_ms = fmt.ms
fmt_bytes = fmt.nbytes
fmt_pct = fmt.pct


def fmt_x(x: float | None) -> str:
    return fmt.times(x, 2)


fmt_interval = fmt.interval

__all__ = ["Grid", "Progress", "State", "err", "fail", "finish", "fmt_bytes", "fmt_interval", "fmt_ms", "fmt_pct", "fmt_x",
           "grid", "interactive", "internal", "out", "print_json", "print_table", "set_json"]
