"""A `kerntune tune` run directory (tuning.db, see :mod:`kerntune.tuner.store`)
as a :class:`RunReport`: the tester's confirmation when the run got that far,
else the search's own estimates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kerntune.reporting.model import Param, RunReport, Source
from kerntune.reporting.rows import (confirmed_rows, copy_gbs, failures, per_shape_geomean, series, shape_row,
                                     timing)
from kerntune.tuner.store import DB_NAME
from kerntune.reporting.tuning import StoreData, read_store
from kerntune.tuner.summary import TuneSummary, prior_notes
from kerntune.fmt import shell

IMPORTED = "imported"      # the strategy name `kerntune kt-cache import` records


def load_tune(path: Path) -> RunReport:
    data = read_store(path)
    s, meta, base = data.summary, data.meta, data.baseline
    notes: list[str] = []
    stop = s.stop_reason
    imported = s.strategy == IMPORTED
    ending = bool(meta.get("ending")) and stop not in ("", "interrupted")    # killed before its end was written
    partial = (stop in ("", "interrupted") and not imported) or not data.evals or ending
    if imported:
        notes.append("Imported from a Kernel Tuner cache (`kerntune kt-cache import`): the recorded timings only, "
                     "with no baseline and no kernel source.")
    elif stop in ("", "interrupted"):
        notes.append(f"The run has not finished ({'interrupted' if stop else 'no stop reason recorded'}: it was "
                     f"interrupted, or is still running). Continue it with `kerntune tune --resume {shell(path)}`.")
    if ending:
        notes.append(f"The run has not finished: its search stopped ({stop}), but the run stopped before its final "
                     f"test and its kernels were written. Finish it with `kerntune tune --resume {shell(path)}`.")
    if not data.evals:
        notes.append("No configuration has been evaluated yet.")
    if base is None and not imported:
        notes.append("No baseline was measured: the run reports times, not speedups.")
    notes += prior_notes(s)
    if s.crashed is not None:     # the crashed configurations' kernels, and how to run one under the checker
        hint = s.crashed.hint(path)
        notes.append(hint[0].upper() + hint[1:] + ".")
    for note in (s.test.notes if s.test is not None else []):     # the tester's own (a busy host, a shape
        notes.append(note[0].upper() + note[1:] + ("" if note.endswith(".") else "."))   # kept at the original)
    settled = [c for c in (s.test.candidates if s.test is not None else []) if c.verified and c.message
               and not c.identical]     # verified with checks the NumPy reference settled (docs/proof.md)
    if settled:
        notes.append(f"{len(settled)} of {len(s.test.candidates)} candidates of the final test verified with checks "
                     f"the NumPy reference settled (docs/proof.md); the first, {settled[0].key}: {settled[0].message}.")
    general = data.result(s.general.key) if s.general else None
    copy = copy_gbs(base, general, *(e.result for e in data.evals))
    rows = []
    test = s.test
    if test is not None:      # the tester confirmed the winners: its numbers are the ones to report
        rows, _ = confirmed_rows(test, copy)
    for r in s.shapes if test is None else []:
        best = data.result(r.best_key) if r.best_key else None
        rows.append(shape_row(r.label, r.shape, copy, timing(base, r.shape), timing(general, r.shape),
                              timing(best, r.shape), best_winner=r.best_key, best_ms=r.best_ms,
                              general_ms=r.general_ms, baseline_ms=r.baseline_ms))
    g_test = s.confirmed_general()
    key, config = general_pick(s)
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
        general_key=key, general_config=config,
        general_speedup=(g_test.geomean_speedup if g_test is not None else
                         s.general.geomean_speedup if s.general else None),
        general_interval=g_test.geomean if g_test is not None else None, per_shape_speedup=per_shape_geomean(rows),
        copy_gbs=copy, measured=s.measured, space_size=s.space_size or None, elapsed_s=s.elapsed_s or None,
        metric="speedup" if base is not None else "time", shapes=rows,
        convergence=[series(s.strategy or "search", None, data.evals, 0, base is not None)] if data.evals else [],
        failures=[failures("run", s)] if data.evals else [])
    report.update(_template_parts(data, s, notes, source=not imported))
    from kerntune.record.audit import TUNE_DIGESTS, audit_tune    # a tune run must hold together too

    problems = audit_tune(path, test, meta.get(TUNE_DIGESTS), DB_NAME)
    return RunReport(notes=notes, record_problems=problems, **report)


def general_pick(s: TuneSummary) -> tuple[str, dict[str, Any]]:
    """(key, configuration) of the run's general configuration: the tester's pick once it confirmed one
    (what its interval, the headline and best.<ext> are about), else the search's."""
    b = s.best
    return (b.key, b.config) if b is not None else ("", {})


def _template_parts(data: StoreData, s: TuneSummary, notes: list[str], source: bool = True) -> dict[str, Any]:
    """The template's parameters and (with ``source``) the general configuration's source beside the original."""
    from kerntune.tuner.template import TemplateRenderError

    if data.template is None:
        notes.append(f"The run does not record a usable template and spec ({data.template_error}): no source diff.")
        return {}
    template, spec, meta = data.template, data.spec, data.meta
    out: dict[str, Any] = {"kernel": spec.kernel}
    baseline_cfg = {k: v[0] for k, v in template.decl.params.items()}
    key, general = general_pick(s)
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
            out["winner"] = Source(name=f"general configuration {key}", path=str(template.origin),
                                   text=template.render(general, spec))
    except TemplateRenderError as e:
        notes.append(f"The template no longer renders ({e.message}): no source diff.")
    return out


__all__ = ["IMPORTED", "load_tune"]
