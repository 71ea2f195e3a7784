#!/usr/bin/env python3
"""Compare search strategies on recorded tuning runs, by replay (no GPU needed).

For every recorded space (a kerntune run directory, or a Kernel Tuner cache
file, .json or .json.gz) and every strategy, the strategy is replayed with
many seeds through kerntune's own tuner and replay device; we record the best
configuration found after 10%, 25% and 50% of the space's measurable
configurations (pruned ones never count against a budget) have been measured and
report it as a fraction of the exhaustive optimum (optimum time / best time
found, so 1.0 means the optimum was found), median over the seeds.

    python scripts/bench_strategies.py bench/data/*.json.gz --seeds 25 \
        --out bench/results/strategies

writes strategies.md (a table per space) and strategies.json (everything).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kerntune.tuner.evaluators import ReplayEvaluator
from kerntune.tuner.kerneltuner import import_cache
from kerntune.tuner.run import TuneSettings, Tuner, template_from_store
from kerntune.tuner.store import RunStore
from kerntune.tuner.strategies import REGISTRY

FRACTIONS = (0.10, 0.25, 0.50)


def load_space(path: Path, tmp: Path) -> Path:
    if path.is_dir():
        return path
    run = tmp / path.name.replace(".", "_")
    import_cache(path, run)
    return run


def optimum(run: Path) -> tuple[float, int, int, int]:
    """(best score, recorded configurations, measurable ones, space size) of an exhaustive record.
    Measurable: not pruned (pruned configurations never count against a budget)."""
    store = RunStore.in_dir(run)
    rows = list(store.evaluations())
    scores = [r.score for r in rows if r.score is not None]
    if not scores:
        raise SystemExit(f"{run}: no successful configuration recorded")
    measurable = sum(1 for r in rows if r.counted)
    return min(scores), len(rows), measurable, int(store.get("space_size") or len(rows))


def replay(run: Path, strategy: str, seed: int, budget: int) -> list[float]:
    """Best score after each measured evaluation."""
    source = RunStore.in_dir(run)
    template, loaded = template_from_store(source)
    evaluator = ReplayEvaluator(source)
    with tempfile.TemporaryDirectory() as d:
        store = RunStore.in_dir(Path(d), create=True)
        if evaluator.baseline is not None:
            store.set("baseline", evaluator.baseline.model_dump(mode="json"))
        tuner = Tuner(template, loaded, evaluator, store, TuneSettings(strategy=strategy, budget=budget, seed=seed))
        tuner.run()
        best, trace = math.inf, []
        for e in store.evaluations():
            if e.counted:
                if e.score is not None:
                    best = min(best, e.score)
                trace.append(best)
        store.close()
    return trace


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spaces", nargs="+", type=Path, help="run directories or Kernel Tuner caches")
    ap.add_argument("--seeds", type=int, default=25)
    ap.add_argument("--strategies", default=",".join(REGISTRY))
    ap.add_argument("--out", type=Path, default=Path("bench/results/strategies"))
    args = ap.parse_args()
    strategies = [s for s in args.strategies.split(",") if s]
    results = {"seeds": args.seeds, "fractions": FRACTIONS, "spaces": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for path in args.spaces:
            run = load_space(path, Path(tmp))
            opt, recorded, measurable, size = optimum(run)
            budgets = [max(1, math.ceil(f * measurable)) for f in FRACTIONS]
            space = {"source": str(path), "space_size": size, "recorded": recorded, "measurable": measurable,
                     "optimum_score": opt, "budgets": budgets, "strategies": {}}
            print(f"{path.name}: {size} configurations ({measurable} measurable), budgets {budgets}",
                  file=sys.stderr)
            for strategy in strategies:
                seeds = [0] if strategy == "exhaustive" else range(args.seeds)
                fractions: dict[str, list[float]] = {str(f): [] for f in FRACTIONS}
                t0 = time.perf_counter()
                for seed in seeds:
                    trace = replay(run, strategy, seed, budgets[-1])
                    for f, b in zip(FRACTIONS, budgets):
                        best = trace[min(b, len(trace)) - 1] if trace else math.inf
                        fractions[str(f)].append(opt / best if math.isfinite(best) else 0.0)
                space["strategies"][strategy] = {
                    "median": {f: statistics.median(v) for f, v in fractions.items()},
                    "q1": {f: _q(v, 0.25) for f, v in fractions.items()},
                    "q3": {f: _q(v, 0.75) for f, v in fractions.items()},
                    "found_optimum": {f: sum(1 for x in v if x >= 1 - 1e-12) / len(v) for f, v in fractions.items()},
                    "runs": len(list(seeds)), "seconds": time.perf_counter() - t0}
                print(f"  {strategy:10s} " + "  ".join(f"{f:.0%}: {space['strategies'][strategy]['median'][str(f)]:.3f}"
                                                     for f in FRACTIONS), file=sys.stderr)
            results["spaces"][path.name] = space
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(render(results))
    print(f"wrote {args.out.with_suffix('.md')} and {args.out.with_suffix('.json')}", file=sys.stderr)
    return 0


def _q(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))]


def render(results: dict) -> str:
    lines = ["# Search strategies on recorded spaces (replay)", "",
             f"Fraction of the exhaustive optimum reached (optimum time / best time found; 1.000 = found it), "
             f"median over {results['seeds']} seeds (exhaustive: its one deterministic order, the baseline first), "
             "after 10%, 25% and 50% of the space's measurable configurations (pruned ones never count against a "
             "budget) were measured. In brackets: the share of seeds that found the optimum.", ""]
    for name, space in results["spaces"].items():
        lines += [f"## {name}", "", f"{space['space_size']} configurations, {space.get('measurable', '?')} "
                  f"measurable (not pruned before a launch); budgets "
                  f"{', '.join(map(str, space['budgets']))} measured evaluations.", "",
                  "| strategy | 10% | 25% | 50% |", "| --- | --- | --- | --- |"]
        for strategy, r in space["strategies"].items():
            cells = [f"{r['median'][str(f)]:.3f} ({r['found_optimum'][str(f)]:.0%})" for f in results["fractions"]]
            lines.append(f"| {strategy} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
