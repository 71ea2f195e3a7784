"""Does a finished optimize run's record hold together? Every command that
reads a run's claims back (`show`, `report`, `export`, `score fast-p`) asks
:func:`audit` first, so a record edited by hand, or a file lost or changed
after the run, is not passed on as verified.

What is checked is what can be derived again from the record itself:

* each interval is an interval (0 <= lo <= hi, a positive estimate, inside
  its bounds where its method puts it there);
* each candidate's verdict is :func:`kerntune.speedup.decide` on its geometric
  mean, its point estimates those of its intervals, and a verified candidate
  has no failed memory check;
* the general kernel is a verified candidate of the test, ``improved`` is its
  verdict, and each shape's winner is a verified candidate (or the original)
  at the speedup of its interval;
* results.json repeats test.json exactly, and test.json is there when
  results.json has a test; it repeats run.json's device and rounds and
  baseline.json's timings, and names the files the run wrote (its headline
  is checked by kerntune.reporting.load_optimize, which derives it again);
* the kernels the run handed back (best.<ext>, per_shape/, spec.yaml) have
  the SHA-256 digests recorded when they were written.

A `kerntune tune` run is checked the same way by :func:`audit_tune`: the final
test in its tuning.db, and best.<ext>, per_shape/ and kernels.json against the
digests recorded in tuning.db's meta table when they were written.

It cannot catch an edit that rewrites every derived number consistently: the
raw timing runs are not kept, so a forged interval with a matching verdict in
both files reads as a real one. The run directory is evidence of what the run
measured, not a signature."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Iterable, Optional

from pydantic import BaseModel

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.record.outcome import CandidateResult, OptimizeResult, TestReport
from kerntune.record.store import RESULTS, TEST, RunDir
from kerntune.speedup import Interval, decide

# methods whose estimate lies inside the interval by construction (a percentile bootstrap's may not)
_CONTAINS = ("sign-test", "moses", "identical", "sessions")
_SLACK = 1e-9


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_digests(run: RunDir, rels: Iterable[str]) -> dict[str, str]:
    """``rel -> sha256`` of files the run has just written (what :func:`audit` checks later)."""
    return {rel: digest(run.file(rel).read_bytes()) for rel in rels}


def _close(a: Optional[float], b: Optional[float]) -> bool:
    if a is None or b is None:
        return a is b
    return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _same(a: Optional[BaseModel], b: Optional[BaseModel]) -> bool:
    """Equal as written (NaN and infinity are written as null, so a record equals its copy)."""
    if a is None or b is None:
        return a is b
    return a.model_dump_json() == b.model_dump_json()


def _same_all(a: Iterable[BaseModel], b: Iterable[BaseModel]) -> bool:
    return [x.model_dump_json() for x in a] == [x.model_dump_json() for x in b]


def _interval(where: str, iv: Optional[Interval]) -> list[str]:
    if iv is None:
        return []
    bad = []
    if not (iv.ratio > 0 and math.isfinite(iv.ratio)):
        bad.append(f"{where}: the estimate {iv.ratio!r} is not a positive number")
    if not (0 <= iv.lo <= iv.hi):
        bad.append(f"{where}: the interval [{iv.lo:g}, {iv.hi:g}] is not an interval")
    elif any(m in iv.method for m in _CONTAINS) and not (iv.lo * (1 - _SLACK) <= iv.ratio <= iv.hi * (1 + _SLACK)):
        bad.append(f"{where}: the estimate {iv.ratio:g} lies outside its interval [{iv.lo:g}, {iv.hi:g}]")
    return bad


def _candidate(c: CandidateResult, threshold: float) -> list[str]:
    name = f"candidate {c.key} (round {c.round})"
    bad = _interval(f"{name}'s geomean", c.geomean)
    for label, iv in c.intervals.items():
        bad += _interval(f"{name} at {label}", iv)
        if label in c.speedups and not _close(c.speedups[label], iv.ratio):
            bad.append(f"{name} at {label}: the speedup {c.speedups[label]:g} is not its interval's {iv.ratio:g}")
    if c.geomean is not None:
        if not _close(c.geomean_speedup, c.geomean.ratio):
            bad.append(f"{name}: the geomean speedup {c.geomean_speedup!r} is not its interval's {c.geomean.ratio:g}")
        if c.verdict is not None and c.verdict is not decide(c.geomean, threshold):
            bad.append(f"{name}: the verdict {c.verdict.value!r} does not follow from its interval "
                       f"{c.geomean.text(3)} (it gives {decide(c.geomean, threshold).value!r})")
    if c.verified and c.check is not None and c.check.failed:
        bad.append(f"{name} is marked verified, but its memory check found {c.check.status.value}")
    return bad


def audit_test(t: TestReport) -> list[str]:
    """What in a final test's report does not follow from the rest of it."""
    bad = [p for c in t.candidates for p in _candidate(c, t.threshold)]
    g = t.general
    if g is not None:
        own = t.candidate(g.round, g.key)
        if own is None or not _same(own, g):
            bad.append(f"the general kernel {g.key} (round {g.round}) is not the test's candidate of that name")
            bad += [f"the general kernel: {p}" for p in _candidate(g, t.threshold)]
        if not g.verified:
            bad.append(f"the general kernel {g.key} is not verified ({g.status.value})")
    improved = g is not None and g.verdict is not None and g.verdict.value == "faster"
    if t.improved != improved:
        bad.append(f"the test says improved={t.improved}, but its general kernel's verdict is "
                   f"{g.verdict.value if g is not None and g.verdict is not None else 'none'}")
    for w in t.per_shape:
        bad += _interval(f"shape {w.label}'s winner", w.interval)
        if w.interval is not None and not _close(w.speedup, w.interval.ratio):
            bad.append(f"shape {w.label}: the speedup {w.speedup:g} is not its interval's {w.interval.ratio:g}")
        if w.winner == "original":
            if not _close(w.speedup, 1.0):
                bad.append(f"shape {w.label}: the original kernel is the winner at {w.speedup:g}x, not 1x")
            continue
        c = t.candidate(w.round, w.winner)
        if c is None or not c.verified:
            bad.append(f"shape {w.label}: its winner {w.winner} (round {w.round}) is not a verified candidate "
                       "of the test")
        elif w.interval is not None and not _same(c.intervals.get(w.label), w.interval):
            bad.append(f"shape {w.label}: the winner's interval is not the one its candidate measured")
    return bad


def _repeats(run: RunDir, result: OptimizeResult) -> list[str]:
    """What results.json repeats from run.json, baseline.json and test.json, and the files it names."""
    from kerntune.record.store import BASELINE, DISPATCH, MANIFEST
    from kerntune.tuner.kernel_files import EXT

    bad = []
    m, base, t = run.manifest(), run.baseline(), result.test
    g = t.general if t is not None and t.improved else None
    if g is not None and result.general_config != g.config:
        bad.append(f"{RESULTS}'s general configuration {result.general_config} is not the final test's {g.config}")
    if result.device != f"{m.device.name} ({m.device.id})":
        bad.append(f"{RESULTS} names the device {result.device!r}; {MANIFEST} says {m.device.name} ({m.device.id})")
    if t is not None and result.checker != t.checker:
        bad.append(f"{RESULTS} names the memory checker {result.checker!r}; the final test's is {t.checker!r}")
    if t is not None and [n for n in t.notes if n not in result.notes]:
        bad.append(f"{RESULTS} leaves out notes of the final test")
    if base is not None and not _same_all(result.baseline, base.timings):
        bad.append(f"{RESULTS}'s baseline timings are not {BASELINE}'s")
    if not _same_all(result.rounds, m.rounds):
        bad.append(f"{RESULTS}'s rounds are not {MANIFEST}'s")
    f = result.files
    named = {"best": "best" + EXT.get(m.lang, ""), "dispatch": DISPATCH, "spec": "spec.yaml"}
    for key, rel in named.items():
        if getattr(f, key) != rel:
            bad.append(f"{RESULTS} names {getattr(f, key)!r} as its {key} file; the run wrote {rel}")
    if m.digests:
        want = set(named.values()) | {d.kernel for d in run.dispatch()}
        missing = sorted(want - set(f.digests))
        if missing:
            bad.append(f"{RESULTS} has no digest for {', '.join(missing)}, which the run wrote with one")
    return bad


def audit(run: RunDir) -> list[str]:
    """Every way the finished run in ``run`` does not hold together (empty: it does). Reads
    results.json and test.json; a run with no results.json has nothing to audit."""
    result: Optional[OptimizeResult] = run.results()
    if result is None:
        return []
    bad: list[str] = []
    test = run.test()
    if result.test is not None:
        if test is None:
            bad.append(f"{TEST} is missing, but {RESULTS} has a final test: the test's record is gone")
        elif not _same(test, result.test):
            bad.append(f"{TEST} and {RESULTS} disagree on the final test: one of them was changed after the run")
    for t, name in ((test, TEST), (None if _same(result.test, test) else result.test, RESULTS)):
        bad += [f"{name}: {p}" for p in audit_test(t)] if t is not None else []
    t = result.test
    g = t.general if t is not None and t.improved else None
    if result.improved != (g is not None):
        bad.append(f"{RESULTS} says improved={result.improved}, its final test says {g is not None}")
    if g is not None and (result.general_key != g.key or result.general_round != g.round
                          or not _same(result.general_interval, g.geomean) or not _close(result.general_speedup,
                                                                                g.geomean_speedup)):
        said = result.general_interval.text(3) if result.general_interval is not None else "no interval"
        bad.append(f"{RESULTS}'s general kernel ({result.general_key}, {said}, speedup {result.general_speedup!r}) is "
                   f"not the final test's ({g.key}, {g.geomean.text(3) if g.geomean else 'no interval'}, speedup "
                   f"{g.geomean_speedup!r})")
    if t is not None and not _same_all(result.per_shape, t.per_shape):
        bad.append(f"{RESULTS}'s per-shape winners are not the final test's")
    bad += _repeats(run, result)
    for rel, want in result.files.digests.items():
        data = run.file(rel).read_bytes() if run.file(rel).is_file() else None
        if data is None:
            bad.append(f"{rel} is missing: the run wrote it")
        elif digest(data) != want:
            bad.append(f"{rel} was changed after the run: what it holds now is not the kernel or launch that was "
                       "verified and timed")
    for rel, want in run.manifest().original_digests.items():      # the run's copy of what it was given
        data = run.file(rel).read_bytes() if run.file(rel).is_file() else None
        if data is None or digest(data) != want:
            bad.append(f"{rel} was {'lost' if data is None else 'changed'} after the run started: the run measured "
                       "the kernel and spec it held then")
    return bad


TUNE_DIGESTS = "kernel_digests"      # the tuning.db meta entry: rel path -> sha256 of each file `tune` wrote


def audit_tune(run_dir: Path, test: Optional[TestReport], digests: Optional[dict[str, str]],
               db_name: str = "tuning.db") -> list[str]:
    """Every way a finished `kerntune tune` run does not hold together: its final test (kept in
    ``db_name``, :func:`audit_test`), and the kernel files it wrote (best.<ext>, per_shape/*,
    kernels.json), each against the digest recorded when it was written (runs from before the
    digests have none: their files are not checked). A file that is not there is no problem: `show`
    and `report` read a tune run from its database, which is often copied alone, and a missing
    kernel cannot be handed back changed."""
    bad = [f"the final test in {db_name}: {p}" for p in audit_test(test)] if test is not None else []
    for rel, want in (digests or {}).items():
        path = Path(run_dir) / rel
        if path.is_file() and digest(path.read_bytes()) != want:
            bad.append(f"{rel} was changed after the run: what it holds now is not the kernel or launch that was "
                       "verified and timed")
    return bad


def untrusted(run_dir: str, problems: list[str]) -> Optional[KerntuneError]:
    """A run whose record does not hold together is an error (exit 2), each problem listed."""
    if problems:
        k = len(problems)
        return KerntuneError(ErrorCode.RUN, f"{run_dir}: the run's record does not hold together ({k} problem"
                                           f"{'s' if k != 1 else ''}), so its claims are not verified",
                            hint="a file was edited, replaced or lost after the run: restore the run directory from "
                                 "a copy, or run the `kerntune optimize` (or `tune`) again",
                            detail="\n".join(f"- {p}" for p in problems))
    return None


__all__ = ["TUNE_DIGESTS", "audit", "audit_test", "audit_tune", "digest", "file_digests", "untrusted"]
