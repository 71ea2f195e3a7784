"""The end of a live `kerntune tune` run: the tester's confirmation of what
the search found. The general configuration, the runners-up and each shape's best are
verified again (fresh inputs, every distribution, fresh shapes), run under
the memory checker, and timed interleaved with the baseline twice (a
screening session that picks, a confirmation session that measures); the
speedups `tune` reports are those intervals, not the search's estimates."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from kerntune.agents.bake import bake
from kerntune.agents.tester import Candidate, Tester
from kerntune.engine.checker import MemoryChecker
from kerntune.engine.evaluate import KernelInstance
from kerntune.engine.supervisor import DeviceWorker
from kerntune.spec.load import LoadedSpec
from kerntune.tuner.run import TuneSettings
from kerntune.tuner.space import Space
from kerntune.tuner.store import RunStore
from kerntune.record.outcome import TestReport
from kerntune.tuner.summary import TuneSummary
from kerntune.tuner.template import Template

TEST_KEY = "test"


def confirm(worker: DeviceWorker, template: Template, loaded: LoadedSpec, store: RunStore, summary: TuneSummary,
            settings: TuneSettings, original: KernelInstance | None, checker: MemoryChecker | None,
            final_repeats: int, on_step: Callable[[str], None] = lambda s: None, top_k: int = 3) -> TestReport | None:
    """Confirm what ``summary`` (the search's own summary of ``store``) picked: its general configuration,
    the runners-up among its ``top_k`` fastest, and each shape's best. The tester's screening session picks
    the general configuration and each shape's best among them again: the search timed each candidate
    once, in its own evaluation, and on a CPU a configuration can run at half the speed in one recording
    of a space that it has in the next (docs/search.md). The report is stored in the run's database and
    returned."""
    picks = _picks(summary, top_k)
    if not picks:
        return None
    spec = loaded.spec
    baseline = original or template.instance(Space.of(template).baseline(), spec, label="baseline")
    searched = {r.key: r.geomean_speedup for r in summary.top + ([summary.general] if summary.general else [])}
    candidates = []
    for key, config in picks.items():
        inst = template.instance(config, spec, label=key)
        baked = replace(inst, source=bake(template.render(config, spec), template.lang))
        candidates.append(Candidate(round=0, key=key, config=config, instance=inst, baked=baked,
                                    searched=searched.get(key)))
    tester = Tester(worker, loaded, baseline, settings.shape_set, settings.warmup, settings.repeats,
                    settings.timeout_s, on_step=on_step, checker=checker, distributions=settings.distributions)
    report = tester.confirm(candidates, settings.seed + 1000, final_repeats)
    store.set(TEST_KEY, report.model_dump(mode="json"))
    return report




def _picks(summary: TuneSummary, top_k: int) -> dict[str, dict]:
    """What the final test confirms, in its order: the general configuration, the runners-up among the
    ``top_k`` fastest, and each shape's best."""
    picks: dict[str, dict] = {}
    if summary.general is not None:
        picks[summary.general.key] = summary.general.config
    for ranked in summary.top[:top_k]:
        picks.setdefault(ranked.key, ranked.config)
    for row in summary.shapes:
        if row.best_key:
            picks.setdefault(row.best_key, row.best_config)
    return picks


def kept_test(stored: dict | None, summary: TuneSummary, top_k: int) -> TestReport | None:
    """The final test a resumed run already stored, when it confirmed exactly what ``summary`` picks now
    (the caller checks the rest it depends on: the device and --final-repeats, --top-k, --memcheck);
    else None, and the test is run again."""
    if not stored:
        return None
    test = TestReport.model_validate(stored)
    if [c.key for c in test.candidates] != list(_picks(summary, top_k)):
        return None
    return test


__all__ = ["TEST_KEY", "confirm", "kept_test"]
