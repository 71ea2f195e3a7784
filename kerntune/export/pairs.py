"""`kerntune export pairs`: verified slow -> fast kernel pairs, one JSON object
per line (format: README, section "Training data"). Only kernels the tester
confirmed (verified again on every shape, held-out and fresh shapes, and
re-timed beside the original) and that beat the original by at least the
tester's own threshold are exported; pairs are deduplicated by the
normalized sources (comments and whitespace removed) of both kernels, the
optimized one with its launch and compile options."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Optional

from kerntune import __version__
from kerntune.record.models import RoundStatus
from kerntune.record.outcome import CandidateResult
from kerntune.speedup import THRESHOLD, Interval
from kerntune.export.runs import Run, Skip
from kerntune.source.normalize import source_hash, strip_header
from kerntune.results import Record, ShapeTiming

SCHEMA = "kerntune.pair/1"


class PairShape(Record):
    label: str
    shape: dict[str, int]
    original_ms: float
    optimized_ms: float
    original_iqr_ms: float
    optimized_iqr_ms: float
    runs: int                                  # timed runs behind each median
    speedup: float                             # the tester's paired estimate on this shape (the interval's)
    speedup_interval: Optional[Interval] = None   # its confidence interval; None: the ratio of the medians


class Pair(Record):
    format: str = SCHEMA
    id: str                                    # hash of original_hash and optimized_hash
    kind: str                                  # general, round, per_shape
    specialized_for: Optional[str] = None      # per_shape: the shape label it won
    kernel: str                                # entry point
    language: str                              # cuda, opencl
    source_file: str                           # the original kernel as the run was given it
    description: str
    original_source: str
    optimized_source: str
    original_launch: dict[str, Any]
    optimized_launch: dict[str, Any]
    original_compile_options: list[str]
    optimized_compile_options: list[str]
    spec: str                                  # the spec's YAML text
    device: dict[str, Any]
    shapes: list[PairShape]
    speedup: float                             # geomean over shapes (per_shape: on its shape), paired estimate
    speedup_interval: Optional[Interval] = None   # its confidence interval (the tester's paired measurement)
    geomean_speedup: float
    round: int
    config: dict[str, Any]
    transformations: list[dict[str, Any]]      # every rewrite the optimized kernel carries, oldest first
    verification: dict[str, Any]
    original_hash: str                         # normalized source + launch + compile options
    optimized_hash: str                        # likewise
    kerntune_version: str = __version__
    run_id: str
    run_dir: str

    def line(self) -> str:
        return self.model_dump_json()


def _shapes(base: list[ShapeTiming], cand: CandidateResult) -> list[PairShape]:
    mine = {t.label: t for t in cand.timings}
    out = []
    for b in base:
        c = mine.get(b.label)
        if c is None:
            continue
        # the speedup is the tester's paired estimate (runs interleaved with the original, pooled over its
        # sessions), the figure `show` and the report give; the medians come from single sessions, so
        # their ratio can differ from it on a drifting host
        iv = cand.intervals.get(b.label)
        out.append(PairShape(label=b.label, shape=b.shape, original_ms=b.stats.median_ms,
                             optimized_ms=c.stats.median_ms, original_iqr_ms=b.stats.iqr_ms,
                             optimized_iqr_ms=c.stats.iqr_ms, runs=min(b.stats.n, c.stats.n),
                             speedup=iv.ratio if iv is not None else b.stats.median_ms / c.stats.median_ms,
                             speedup_interval=iv))
    return out


def kernel_identity(source: str, launch: dict[str, Any], options: list[str]) -> str:
    """What a pair's hashes are of: the normalized source with its launch and compile options."""
    return source_hash(source + "\n" + json.dumps([launch, options], sort_keys=True))


def _describe(run: Run, r: int, key: str, transformations: list[dict[str, Any]], speed: float, what: str) -> str:
    steps = "; ".join(f"{t.get('rule')}: {t.get('summary')}" for t in transformations) or "no rewrite"
    return (f"{run.manifest.kernel_name} ({run.manifest.lang}) on {run.device.get('name')}: {steps}; "
            f"parameters {key} (round {r}); {speed:.3f}x {what}")


def run_pairs(run: Run, min_speedup: float = THRESHOLD) -> tuple[list[Pair], list[str]]:
    """The pairs of one run, and why it has none or why a kernel was left out."""
    if run.unusable:
        return [], [run.unusable]
    test = run.test
    if test is None:
        return [], ["the tester confirmed no candidate (no test.json)"]
    left_out: list[str] = []
    original = run.original_source
    wanted: list[tuple[str, Optional[str], int, str, str]] = []     # kind, shape label, round, key, file
    if test.general is not None and test.improved:
        wanted.append(("general", None, test.general.round, test.general.key, f"best{run.ext}"))
    for rec in run.manifest.rounds:
        if rec.status is RoundStatus.DONE and rec.best_key:
            wanted.append(("round", None, rec.round, rec.best_key, run.rd.best_rel(rec.round, run.manifest.lang)))
    for d in run.dispatch:
        if d.winner != "original" and d.round is not None:
            wanted.append(("per_shape", d.label, d.round, d.winner, d.kernel))
    pairs: list[Pair] = []
    for kind, label, r, key, rel in wanted:
        cand = run.candidate(r, key)
        if cand is None or not cand.verified or not cand.timings or not run.has(rel):
            continue
        shapes = _shapes(test.baseline, cand)
        if not shapes:
            continue
        interval = cand.intervals.get(label) if label else cand.geomean
        if interval is None or cand.geomean is None or interval.lo < min_speedup:
            continue     # a pair is faster only when the confidence interval's lower bound says so
        speed, gm = interval.ratio, cand.geomean.ratio   # the tester's paired estimates
        optimized = strip_header(run.text(rel))
        if source_hash(optimized) != source_hash(run.rendered(r, cand.config)):
            # the file is not the kernel the tester verified (edited, or replaced, after the run)
            left_out.append(f"{rel} is not the kernel the tester verified (round {r}, {key}): it was changed "
                            "after the run, so it is not exported")
            continue
        launch, options = run.launch_and_options(r, cand.config)
        # a kernel is its source with its launch and compile options: the same source launched with
        # other block sizes is another kernel
        oh = kernel_identity(original, run.original_launch(), run.original_options())
        ph = kernel_identity(optimized, launch, options)
        if oh == ph:
            continue
        trans = run.transformations(r)
        what = f"on {label}" if label else f"geomean over {len(shapes)} shapes"
        pairs.append(Pair(
            id=hashlib.sha256(f"{oh}:{ph}".encode()).hexdigest()[:16], kind=kind, specialized_for=label,
            kernel=run.manifest.kernel_name, language=run.manifest.lang, source_file=run.manifest.kernel_path,
            description=_describe(run, r, key, trans, speed, what), original_source=original,
            optimized_source=optimized, original_launch=run.original_launch(), optimized_launch=launch,
            original_compile_options=run.original_options(), optimized_compile_options=options, spec=run.spec_text,
            device=run.device, shapes=shapes, speedup=speed,
            speedup_interval=interval, geomean_speedup=gm, round=r, config=cand.config, transformations=trans,
            verification={"verified": True, "reference": "the original kernel, run on the same device",
                          "seed": test.seed, "shapes": [s.label for s in shapes],
                          "fresh_shapes": test.fresh_shapes, "flags": cand.flags},
            original_hash=oh, optimized_hash=ph, run_id=run.run_id, run_dir=str(run.path)))
    if not pairs and not left_out:
        left_out.append(f"no verified kernel beat the original by {min_speedup:g}x or more (the lower bound of "
                        "the speedup's confidence interval)")
    return pairs, left_out


def export_pairs(runs: list[Run], min_speedup: float = THRESHOLD) -> tuple[list[Pair], list[Skip], int]:
    """Every run's pairs, deduplicated (the first occurrence kept); also the runs without pairs and
    how many duplicates were dropped."""
    seen: set[str] = set()
    out: list[Pair] = []
    skipped: list[Skip] = []
    dropped = 0
    for run in runs:
        pairs, why = run_pairs(run, min_speedup)
        skipped += [Skip(run_dir=str(run.path), reason=w) for w in why]
        for p in pairs:
            if p.id in seen:
                dropped += 1
                continue
            seen.add(p.id)
            out.append(p)
    return out, skipped, dropped
