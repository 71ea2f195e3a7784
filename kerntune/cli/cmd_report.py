"""`kerntune report`: a run directory as a report people would rather look at than read."""

from __future__ import annotations

import os
import sys
import webbrowser
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from kerntune.cli.output import err, finish, fmt_bytes, out, set_json
from kerntune.record.audit import untrusted


def open_in_browser(page: Path) -> tuple[bool, str]:
    """Open the page with the system browser; (opened, what happened)."""
    url = page.resolve().as_uri()
    headless = sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    if headless and not os.environ.get("BROWSER"):
        return False, (f"not opened: there is no display here (neither DISPLAY nor WAYLAND_DISPLAY is set); open "
                       f"{url} on a machine with a screen (the file is self-contained), or set BROWSER")
    try:
        ok = webbrowser.open(url)
    except webbrowser.Error as e:
        return False, f"not opened: {e}"
    if not ok:
        return False, f"not opened: no web browser was found; open {url} yourself, or set BROWSER"
    return True, f"opened {url}"


def report(
    run_dir: Path = typer.Argument(..., help="A run directory: from `kerntune optimize` (run.json) or "
                                             "`kerntune tune` (tuning.db)."),
    html: bool = typer.Option(False, "--html", help="Also write report.html: one self-contained page (figures and "
                                                     "styles inline, nothing fetched)."),
    open_: bool = typer.Option(False, "--open", help="Open report.html in the system browser (implies --html)."),
    out_dir: Optional[Path] = typer.Option(None, "--out-dir", help="Write the report here instead of into RUN_DIR."),
    json: bool = typer.Option(False, "--json", help="Print machine-readable JSON: the files and a summary."),
) -> None:
    """Write RUN_DIR/report.md (figures in report_plots/) and, with --html, report.html.

    Figures, each with the table behind it: speedup per shape (general
    configuration and per-shape best), run time per shape against the
    copy-speed floor, search convergence, achieved bandwidth as a fraction of
    the measured copy, failures by reason, the winning kernel's transformation
    trace, and its source beside the original. An interrupted run is reported
    as far as it got, and says so.
    """
    set_json(json)
    from kerntune.reporting.build import write_report

    result = write_report(run_dir, html=html or open_, out_dir=out_dir)
    if open_ and result.files.html:
        opened, note = open_in_browser(Path(result.files.html))
        result = result.model_copy(update={"opened": opened, "open_note": note})
    if json:
        finish(result, untrusted(result.run_dir, result.record_problems))
        return
    out.print(escape(result.headline))
    if result.partial:
        out.print("[yellow]partial run[/]: " + escape(" ".join(result.notes)))
    figures = len(result.files.plots)
    where = f" ({figures} figure{'s' if figures != 1 else ''} in {Path(result.files.markdown).parent / 'report_plots'})" \
        if figures else ""
    out.print(f"wrote {escape(result.files.markdown)}{escape(where)}")
    if result.files.html:
        size = Path(result.files.html).stat().st_size
        out.print(f"wrote {escape(result.files.html)} (self-contained, {fmt_bytes(size)})")
    if result.open_note:
        (out if result.opened else err).print(escape(result.open_note))
    finish(result, untrusted(result.run_dir, result.record_problems))


def register(app: typer.Typer) -> None:
    app.command("report")(report)
