"""Help tables whose option and command names are never cut.

Typer lays out each help panel as a rich table and lets rich shrink every
column that can wrap when the terminal is narrow. An option name is one word,
so a shrunk name column cuts it with an ellipsis ('--allow-device-…' in an
80-column terminal), and --help no longer says what to type. Here a column
whose every cell is a single word (option names, their short forms, command
names) is kept whole; the help text beside it wraps instead, and a word too
long for it (a URL, a path) is folded onto the next line rather than cut.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text


def _one_word(cell) -> bool:
    return isinstance(cell, (str, Text)) and len(str(cell).split()) <= 1


class HelpTable(Table):
    def __rich_console__(self, console, options):
        for column in self.columns:
            if all(_one_word(cell) for cell in column.cells):
                column.no_wrap = True
            else:
                column.overflow = "fold"
                for cell in column.cells:
                    _fold(cell)
        return super().__rich_console__(console, options)


def _fold(cell) -> None:
    """A long word of a help text (typer's help cell is rich Columns of Text) folds instead of being cut."""
    for item in getattr(cell, "renderables", [cell]):
        if isinstance(item, Text):
            item.overflow = "fold"


def install() -> None:
    """Make typer's help panels use :class:`HelpTable`."""
    import typer.rich_utils

    if getattr(typer.rich_utils, "Table", None) is Table:
        typer.rich_utils.Table = HelpTable
