"""A tuning database (tuning.db: a `kerntune tune` run, or one round of an
optimize run) read once, for the report loaders."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from pydantic import ValidationError

from kerntune.record.audit import TUNE_DIGESTS
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.results import EvalResult
from kerntune.tuner.store import Evaluation, RunStore
from kerntune.tuner.summary import TuneSummary, summarize

DAMAGED = "the run directory is damaged: restore the file, or rerun"

META = ("template_text", "template_lang", "template_path", "spec_text", "spec_path", "spec_inline", "original",
        "device", "settings", "space_size", "stop_reason", "created", TUNE_DIGESTS, "ending")


@dataclass
class StoreData:
    """Everything one tuning database holds."""

    evals: list[Evaluation]
    summary: TuneSummary
    baseline: Optional[EvalResult]
    meta: dict[str, Any]
    template: Any = None                 # the recorded template and spec (tuner.template.Template, KernelSpec)
    spec: Any = None
    template_error: str = ""

    def result(self, key: str) -> Optional[EvalResult]:
        return next((e.result for e in self.evals if e.key == key and e.duplicate_of is None), None)


def read_store(run_dir: Path, summary: Optional[TuneSummary] = None) -> StoreData:
    """The database in ``run_dir``; ``summary``: its summary when the run already wrote one (an
    optimize round's summary.json), so it is not computed again."""
    from kerntune.tuner.run import template_from_store

    try:
        store = RunStore.in_dir(run_dir, readonly=True)
        try:
            evals = list(store.evaluations())
            summary = summary or summarize(store, str(run_dir))
            meta = {k: store.get(k, None, dict[str, str] if k == TUNE_DIGESTS else None) for k in META}
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
        raise KerntuneError(ErrorCode.RUN, f"{run_dir / 'tuning.db'}: the recorded baseline is corrupt "
                                           f"({str(e).splitlines()[0]})", hint=DAMAGED) from None
    return StoreData(evals=evals, summary=summary, baseline=baseline, meta=meta, template=template, spec=spec,
                     template_error=problem)


__all__ = ["DAMAGED", "StoreData", "read_store"]
