"""Write a run's report: report.md with its figures in report_plots/, and
optionally the self-contained report.html, into the run directory (or another
folder)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.results import Record
from kerntune.reporting.load import load_run
from kerntune.reporting.model import RunReport, ShapeRow, headline
from kerntune.speedup import Interval

PLOT_DIR = "report_plots"


class ReportFiles(Record):
    markdown: str
    html: Optional[str] = None
    plots: dict[str, str] = {}               # figure id -> PNG path


class ReportSummary(Record):
    """What `kerntune report --json` prints."""

    run_dir: str
    kind: str
    partial: bool
    notes: list[str] = []
    record_problems: list[str] = []          # where the run's record does not hold together (not to be trusted)
    headline: str
    confirmed: bool
    improved: Optional[bool] = None
    general_key: str = ""
    general_round: Optional[int] = None
    general_speedup: Optional[float] = None
    general_interval: Optional[Interval] = None   # its 95% confidence interval (confirmed runs)
    per_shape_speedup: Optional[float] = None
    copy_gbs: Optional[float] = None
    measured: int = 0
    shapes: list[ShapeRow] = []
    files: ReportFiles
    opened: Optional[bool] = None            # --open: whether a browser was started
    open_note: str = ""


def _write(path: Path, data: str | bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    if isinstance(data, bytes):
        tmp.write_bytes(data)
    else:
        tmp.write_text(data, encoding="utf-8")
    tmp.replace(path)              # never leave a half-written report behind


def _unwritten_hint(run_dir: Path, out: Path, finishing: bool) -> str:
    """What to do about a report that could not be written: an optimize run writing its own end is
    finished by --resume once its folder takes files again (`report` has no business there: the run is
    not done until its report is written); `kerntune report` can write elsewhere."""
    from kerntune.fmt import shell

    if finishing:
        return (f"make {shell(out)} writable (or free space on its disk), then finish the run with `kerntune "
                f"optimize --resume {shell(run_dir)}` (its answer is kept: nothing is measured again)")
    return f"make {shell(out)} writable (or free space on its disk), or choose a writable folder with --out-dir"


def write_report(run_dir: Path, html: bool = False, out_dir: Optional[Path] = None,
                 finishing: bool = False) -> ReportSummary:
    """``finishing``: written by an optimize run as its end (before its run.json says "done")."""
    from kerntune.reporting import html as html_report
    from kerntune.reporting import markdown
    from kerntune.reporting.plots import PLOTS, draw_all

    r = load_run(run_dir, finishing=finishing)
    out = out_dir or run_dir
    pngs = draw_all(r)
    plots: dict[str, str] = {}
    try:
        out.mkdir(parents=True, exist_ok=True)
        if pngs:
            (out / PLOT_DIR).mkdir(exist_ok=True)
        for pid, _, _ in PLOTS:                  # a figure this run no longer has must not linger
            stale = out / PLOT_DIR / f"{pid}.png"
            if pid not in pngs and stale.exists():
                stale.unlink()
        for pid, png in pngs.items():
            p = out / PLOT_DIR / f"{pid}.png"
            _write(p, png)
            plots[pid] = str(p)
        md = out / "report.md"
        _write(md, markdown.render(r, {pid: f"{PLOT_DIR}/{pid}.png" for pid in pngs}))
        page = None
        if html:
            page = out / "report.html"
            _write(page, html_report.render(r, pngs))
    except OSError as e:
        raise KerntuneError(ErrorCode.FILE, f"cannot write the report into {out}: {e.strerror or e}"
                                            f"{f' ({where})' if (where := e.filename2 or e.filename) else ''}",
                            hint=_unwritten_hint(run_dir, out, finishing)) from None
    return summary(r, ReportFiles(markdown=str(md), html=str(page) if page else None, plots=plots))


def summary(r: RunReport, files: ReportFiles, **extra: Any) -> ReportSummary:
    return ReportSummary(run_dir=r.run_dir, kind=r.kind, partial=r.partial, notes=r.notes,
                         record_problems=r.record_problems, headline=headline(r),
                         confirmed=r.confirmed, improved=r.improved, general_key=r.general_key,
                         general_round=r.general_round, general_speedup=r.general_speedup,
                         general_interval=r.general_interval,
                         per_shape_speedup=r.per_shape_speedup, copy_gbs=r.copy_gbs, measured=r.measured,
                         shapes=r.shapes, files=files, **extra)


__all__ = ["PLOT_DIR", "ReportFiles", "ReportSummary", "write_report"]
