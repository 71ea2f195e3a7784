"""Read a run directory into a :class:`RunReport`: an optimize run (run.json,
see :mod:`kerntune.agents.rundir`) or a tuning run (tuning.db, see
:mod:`kerntune.tuner.store`). Whatever a run has not written yet (an
interrupted run) is left out and said so in ``notes``; a file that is there
but unreadable is an error naming it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, TypeVar

from pydantic import BaseModel, ValidationError

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.results import EvalResult, ShapeTiming, Status, geomean
from kerntune.reporting.model import Failures, Param, Point, RunReport, Series, ShapeRow, Source
from kerntune.tuner.store import DB_NAME, Evaluation, RunStore
from kerntune.tuner.summary import TuneSummary, summarize

M = TypeVar("M", bound=BaseModel)
IMPORTED = "imported"      # the strategy name `kerntune kt-cache import` records
DAMAGED = "the run directory is damaged: restore the file, or rerun"
HINT = "pass the directory that `kerntune optimize` or `kerntune tune` printed (\"run directory: ...\")"


def load_run(path: Path) -> RunReport:
    """The report of the run in ``path``, an optimize run or a tuning run."""
    if not path.exists():
        raise KerntuneError(ErrorCode.FILE, f"run directory not found: {path}", hint=HINT)
    if not path.is_dir():
        raise KerntuneError(ErrorCode.FILE, f"{path} is a file, not a run directory", hint=HINT)
    if (path / "run.json").exists():
        from kerntune.reporting.load_optimize import load_optimize

        return load_optimize(path)
    if (path / DB_NAME).exists():
        return load_tune(path)
    raise KerntuneError(ErrorCode.RUN, f"{path} holds no kerntune run: neither run.json (`kerntune optimize`) "
                                       f"nor {DB_NAME} (`kerntune tune`) is there", hint=HINT)


# --- shared ------------------------------------------------------------------------
def shape_id(shape: dict[str, int]) -> tuple:
    return tuple(sorted((k, int(v)) for k, v in shape.items()))


def read_model(path: Path, model: type[M]) -> Optional[M]:
    """A JSON record of the run, None when it has not been written; corrupt is an error."""
    try:
        return model.model_validate_json(path.read_text())
    except FileNotFoundError:
        return None
    except (ValidationError, ValueError, OSError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise KerntuneError(ErrorCode.RUN, f"{path} is corrupt ({first})",
                            hint=DAMAGED) from None


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (json.JSONDecodeError, OSError) as e:
        raise KerntuneError(ErrorCode.RUN, f"{path} is corrupt ({e})",
                            hint=DAMAGED) from None


def read_text(path: Path) -> Optional[str]:
    try:
        return path.read_text()
    except (FileNotFoundError, IsADirectoryError):
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise KerntuneError(ErrorCode.RUN, f"cannot read {path}: {e}") from None


@dataclass
class StoreData:
    """Everything one tuning database holds, read once."""

    evals: list[Evaluation]
    summary: TuneSummary
    baseline: Optional[EvalResult]
    meta: dict[str, Any]
    template: Any = None                 # the recorded template and spec (tuner.template.Template, KernelSpec)
    spec: Any = None
    template_error: str = ""

    def result(self, key: str) -> Optional[EvalResult]:
        return next((e.result for e in self.evals if e.key == key and e.duplicate_of is None), None)


META = ("template_text", "template_lang", "template_path", "spec_text", "spec_path", "spec_inline", "original",
        "device", "settings", "space_size", "stop_reason", "created")


def read_store(run_dir: Path) -> StoreData:
    from kerntune.tuner.run import template_from_store

    try:
        store = RunStore.in_dir(run_dir)
        try:
            evals = list(store.evaluations())
            summary = summarize(store, str(run_dir))
            meta = {k: store.get(k) for k in META}
            raw = store.get("baseline")
            template, spec, problem = None, None, ""
            try:
                template, loaded = template_from_store(store)
                spec = loaded.spec
            except KerntuneError as e:
                problem = e.message
        finally:
            store.close()
    except KerntuneError as e:
        raise KerntuneError(e.code, e.message, hint=e.hint or DAMAGED) from None
    try:
        baseline = EvalResult.model_validate(raw) if raw else None
    except ValidationError as e:
        raise KerntuneError(ErrorCode.RUN, f"{run_dir / DB_NAME}: the recorded baseline is corrupt "
                                           f"({str(e).splitlines()[0]})", hint=DAMAGED) from None
    return StoreData(evals=evals, summary=summary, baseline=baseline, meta=meta, template=template, spec=spec,
                     template_error=problem)


def series(name: str, round_: Optional[int], evals: list[Evaluation], start: int, speedup: bool) -> Series:
    """The measured evaluations in order; a score is candidate / baseline time (geomean), so speedup = 1 / score."""
    points, best, n = [], None, start
    for e in evals:
        if not e.counted:
            continue
        n += 1
        value = None
        if e.status == Status.OK.value and e.score:
            value = 1.0 / e.score if speedup else e.score
            best = value if best is None else (max(best, value) if speedup else min(best, value))
        points.append(Point(n=n, key=e.key, status=e.status, value=value, best=best))
    return Series(name=name, round=round_, points=points)


def failures(scope: str, s: TuneSummary) -> Failures:
    return Failures(scope=scope, ok=s.ok, failed=dict(s.failed_by_status), pruned=dict(s.pruned_by_reason),
                    duplicates=s.duplicates)


def timing(result: Optional[EvalResult], shape: dict[str, int]) -> Optional[ShapeTiming]:
    if result is None:
        return None
    sid = shape_id(shape)
    return next((t for t in result.timings if shape_id(t.shape) == sid), None)


def copy_gbs(*results: Optional[EvalResult]) -> Optional[float]:
    for r in results:
        if r is not None and r.copy_bandwidth is not None and r.copy_bandwidth.stats.median_ms > 0:
            return r.copy_bandwidth.gbs
    return None


def shape_row(label: str, shape: dict[str, int], copy: Optional[float], base: Optional[ShapeTiming],
              general: Optional[ShapeTiming], best: Optional[ShapeTiming], **known: Any) -> ShapeRow:
    """A row from the three timings; ``known`` overrides (the tester's own numbers)."""
    bytes_moved = next((t.bytes_moved for t in (base, general, best) if t is not None), None)
    row: dict[str, Any] = dict(label=label, shape=shape, bytes_moved=bytes_moved)
    if bytes_moved and copy:
        row["floor_ms"] = bytes_moved / (copy * 1e9) * 1e3
    for name, t in (("baseline", base), ("general", general), ("best", best)):
        if t is not None:
            row[f"{name}_ms"] = t.stats.median_ms
            row[f"{name}_gbs"] = t.achieved_gbs
            row[f"{name}_pct"] = t.pct_of_copy
    row.update({k: v for k, v in known.items() if v is not None})
    b = row.get("baseline_ms")
    for name in ("general", "best"):
        ms = row.get(f"{name}_ms")
        if f"{name}_speedup" not in known and b and ms:
            row[f"{name}_speedup"] = b / ms
    return ShapeRow(**row)


def per_shape_geomean(rows: list[ShapeRow]) -> Optional[float]:
    vals = [r.best_speedup for r in rows if r.best_speedup]
    return geomean(vals) if vals else None


# --- tuning runs -------------------------------------------------------------------------
def load_tune(path: Path) -> RunReport:
    data = read_store(path)
    s, meta, base = data.summary, data.meta, data.baseline
    notes: list[str] = []
    stop = s.stop_reason
    imported = s.strategy == IMPORTED
    partial = (stop in ("", "interrupted") and not imported) or not data.evals
    if imported:
        notes.append("Imported from a Kernel Tuner cache (`kerntune kt-cache import`): the recorded timings only, "
                     "with no baseline and no kernel source.")
    elif stop in ("", "interrupted"):
        notes.append(f"The run has not finished ({'interrupted' if stop else 'no stop reason recorded'}: it was "
                     f"interrupted, or is still running). Continue it with `kerntune tune --resume {path}`.")
    if not data.evals:
        notes.append("No configuration has been evaluated yet.")
    if base is None and not imported:
        notes.append("No baseline was measured: the run reports times, not speedups.")
    general = data.result(s.general.key) if s.general else None
    copy = copy_gbs(base, general, *(e.result for e in data.evals))
    rows = []
    test = s.test
    if test is not None:      # the tester confirmed the winners: its numbers are the ones to report
        from kerntune.reporting.load_optimize import confirmed_rows

        rows, _ = confirmed_rows(test, copy)
    for r in s.shapes if test is None else []:
        best = data.result(r.best_key) if r.best_key else None
        rows.append(shape_row(r.label, r.shape, copy, timing(base, r.shape), timing(general, r.shape),
                              timing(best, r.shape), best_winner=r.best_key, best_ms=r.best_ms,
                              general_ms=r.general_ms, baseline_ms=r.baseline_ms))
    g_test = test.general if test is not None else None
    device = meta.get("device") or {}
    original = meta.get("original") or {}
    report = dict(
        kind="tune", run_dir=str(path), kernel=Path(str(meta.get("template_path") or "kernel")).name.split(".")[0],
        kernel_path=str(meta.get("template_path") or ""), spec_path=str(meta.get("spec_path") or ""),
        device=f"{device.get('name', '?')} ({device.get('id', '?')})" if device else "",
        method=s.strategy, status="done" if not partial else "partial", stop_reason=stop or ("imported" if imported
                                                                                              else ""), partial=partial,
        confirmed=test is not None, improved=test.improved if test is not None else None, test=test,
        baseline_label=original.get("label") or "the template's baseline configuration",
        general_key=s.general.key if s.general else "", general_config=s.general.config if s.general else {},
        general_speedup=(g_test.geomean_speedup if g_test is not None else
                         s.general.geomean_speedup if s.general else None),
        general_interval=g_test.geomean if g_test is not None else None, per_shape_speedup=per_shape_geomean(rows),
        copy_gbs=copy, measured=s.measured, space_size=s.space_size or None, elapsed_s=s.elapsed_s or None,
        metric="speedup" if base is not None else "time", shapes=rows,
        convergence=[series(s.strategy or "search", None, data.evals, 0, base is not None)] if data.evals else [],
        failures=[failures("run", s)] if data.evals else [])
    report.update(_template_parts(data, s, notes, source=not imported))
    return RunReport(notes=notes, **report)


def _template_parts(data: StoreData, s: TuneSummary, notes: list[str], source: bool = True) -> dict[str, Any]:
    """The template's parameters and (with ``source``) the general configuration's source beside the original."""
    from kerntune.tuner.template import TemplateRenderError

    if data.template is None:
        notes.append(f"The run does not record a usable template and spec ({data.template_error}): no source diff.")
        return {}
    template, spec, meta = data.template, data.spec, data.meta
    out: dict[str, Any] = {"kernel": spec.kernel}
    baseline_cfg = {k: v[0] for k, v in template.decl.params.items()}
    general = s.general.config if s.general else {}
    out["params"] = [Param(name=k, values=list(v), baseline=v[0], general=general.get(k))
                     for k, v in template.decl.params.items()]
    if not source:
        return out
    try:
        orig = meta.get("original") or {}
        if orig.get("source"):
            out["original"] = Source(name=orig.get("label") or "the original kernel", text=orig["source"])
        else:
            out["original"] = Source(name="the template's baseline configuration",
                                     path=str(meta.get("template_path") or ""),
                                     text=template.render(baseline_cfg, spec))
        if general:
            out["winner"] = Source(name=f"general configuration {s.general.key}", path=str(template.origin),
                                   text=template.render(general, spec))
    except TemplateRenderError as e:
        notes.append(f"The template no longer renders ({e.message}): no source diff.")
    return out


__all__ = ["load_run", "load_tune"]
