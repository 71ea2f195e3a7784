#!/usr/bin/env python3
"""Sweep the default strategy's options on every recorded space in bench/data/ and score each
setting the way scripts/bench_strategies.py does: per space and budget (10%, 25% and 50% of the
measurable configurations), the median and worst fraction of the optimum over the seeds, beside
the best median any Kernel Tuner strategy reached in the stored benchmark results.

It replays without the tuner (about 7x faster than bench_strategies.py, so a setting costs
minutes, not a quarter of an hour): a pruned configuration is told inf and costs nothing, a
failed one is told inf and counts, and configurations recorded with the same rendered kernel
count once, as the tuner's duplicate check does. With the default options it gives
bench_strategies.py's numbers for `surrogate`.

    python scripts/sweep_surrogate.py                                  # the default only
    python scripts/sweep_surrogate.py '{"exploit_every": 3}' '{"noise": 0.05}' --out bench/results/sweep
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench_strategies import FRACTIONS, load_space, pin_environment, won  # noqa: E402
from kerntune.errors import KerntuneError  # noqa: E402
from kerntune.tuner.run import template_from_store  # noqa: E402
from kerntune.tuner.space import Space  # noqa: E402
from kerntune.tuner.store import RunStore  # noqa: E402
from kerntune.tuner.strategies import DEFAULT_STRATEGY, make_strategy, strategy_class  # noqa: E402
from kerntune.tuner.template import config_key  # noqa: E402
from kt_replay import permuted  # noqa: E402
import pools  # noqa: E402

RESULTS = ("strategies-2026-11-28.json", "strategies-heldout-2026-11-28.json")
_LOADED: dict[tuple[str, str], tuple] = {}      # (name, source) -> what _load read


def stored_spaces(results: list[Path]) -> dict[str, dict]:
    """Space name -> its stored benchmark entry (budgets, Kernel Tuner's results)."""
    out: dict[str, dict] = {}
    for path in results:
        out.update(json.loads(path.read_text())["spaces"])
    return out


def selected(only: str, results: list[Path] | None = None) -> dict[str, dict]:
    """The stored spaces (of ``results``, default RESULTS) whose names contain one of ``only``'s
    comma-separated substrings (all of them when ``only`` is empty); exits 2 with a message when none does,
    or when a results file is not there."""
    missing = [str(p) for p in results or [] if not p.is_file()]
    if missing:
        print(f"error: no such results file: {', '.join(missing)}\nhint: they are the .json files "
              "scripts/bench_strategies.py writes, e.g. bench/results/strategies-heldout2-2026-12-02.json",
              file=sys.stderr)
        raise SystemExit(2)
    spaces = stored_spaces(results or [REPO / "bench" / "results" / r for r in RESULTS])
    if only:
        spaces = {k: v for k, v in spaces.items() if any(o in k for o in only.split(","))}
        if not spaces:
            print(f"error: no recorded space matches --only {only}\nhint: the spaces are the files of "
                  "bench/data/, e.g. --only stencil,rmsnorm", file=sys.stderr)
            raise SystemExit(2)
    return spaces


def _load(name: str, source: str = "") -> tuple[Space, dict[str, tuple[float, bool, str]], float]:
    """(space, key -> (score, counts, what it renders to), optimum) of a recorded space (``source``, the
    stored results' path of its cache; default bench/data/NAME), once per process."""
    if (name, source) not in _LOADED:
        tmp = Path(tempfile.mkdtemp(prefix="kerntune-sweep-"))
        store = RunStore.in_dir(load_space(REPO / source if source else REPO / "bench" / "data" / name, tmp))
        template, _ = template_from_store(store)
        record = {}
        for e in store.evaluations():
            counts = e.status != "pruned" and (e.counted or e.duplicate_of is not None)
            record[e.key] = (e.score if e.score is not None else math.inf, counts, e.source_hash or e.key)
        store.close()
        shutil.rmtree(tmp, ignore_errors=True)     # all it holds is in memory now
        _LOADED[name, source] = (Space.of(template), record, min(s for s, c, _ in record.values() if c))
    return _LOADED[name, source]


def shuffled(space: Space, order_seed: int) -> Space:
    """The same space with each parameter's values declared in the order kt_replay.permuted draws."""
    return Space({k: tuple(permuted(k, v, order_seed)) for k, v in space.params.items()}, space.restrictions)


def _replay(job: tuple) -> tuple[str, int, list[float], float]:
    """One seed: the fraction of the optimum found at each budget, and the CPU seconds it took. A job is
    (space, seed, options, budgets[, order_seed[, source]]); with an order seed, each parameter's values are
    declared in the order kt_replay.permuted draws from it."""
    name, seed, options, budgets, *rest = job
    order = rest[:1]
    space, record, opt = _load(name, rest[1] if len(rest) > 1 else "")
    if order and order[0] is not None:
        space = shuffled(space, order[0])
    started = time.process_time()
    if strategy_class(DEFAULT_STRATEGY).plans_with_budget:     # one run per budget, as --budget runs it
        found = [min(_trace(space, record, seed, options, b), default=math.inf) for b in budgets]
    else:
        trace = _trace(space, record, seed, options, budgets[-1])
        found = [min(trace[:b], default=math.inf) for b in budgets]
    return name, seed, [opt / f for f in found], time.process_time() - started


def _trace(space: Space, record: dict, seed: int, options: dict, budget: int, sources: list | None = None,
           measured: list | None = None) -> list[float]:
    """The best score after each measured evaluation of one run with ``budget``, told what is left of it
    before each proposal as the tuner tells it (and given ``sources`` as earlier measurements first); each
    measured (configuration, score) is appended to ``measured`` when one is given (what the run's record holds)."""
    strategy = make_strategy(DEFAULT_STRATEGY, space, seed, options)
    if sources:
        strategy.learn(sources)
    best, trace, seen, asks = math.inf, [], set(), 0
    while len(trace) < budget and asks < 50 * budget + 1000:
        strategy.budget(budget - len(trace), budget)
        config = strategy.ask()
        asks += 1
        if config is None:
            break
        score, counts, renders_to = record.get(config_key(config), (math.inf, False, ""))
        if counts and renders_to not in seen:
            seen.add(renders_to)
            best = min(best, score)
            trace.append(best)
            if measured is not None and math.isfinite(score):
                measured.append((config, score))
        strategy.tell(config, score)
    return trace


def sweep(spaces: dict[str, dict], options: dict, seeds: int, procs: int, first_seed: int = 0) -> dict:
    jobs = [(name, s, options, sp["budgets"], None, sp.get("source", "")) for name, sp in spaces.items()
            for s in range(first_seed, first_seed + seeds)]
    per: dict[str, dict[int, list[float]]] = {}
    cpu: dict[str, list[float]] = {}
    with pools.pool(procs) as pool:
        for name, seed, fractions, seconds in pool.imap_unordered(_replay, jobs, chunksize=4):
            per.setdefault(name, {})[seed] = fractions
            cpu.setdefault(name, []).append(seconds)
    rows, wins, worst_ok = {}, 0, 0
    for name, sp in spaces.items():
        runs = [per[name][s] for s in range(first_seed, first_seed + seeds)]
        cells = {}
        for i, f in enumerate(FRACTIONS):
            key = str(f)
            med, worst = statistics.median(r[i] for r in runs), min(r[i] for r in runs)
            kt = max((v["median"][key] for v in sp["kernel_tuner"].values() if "median" in v), default=0.0)
            held = won(med, kt)
            wins += held
            worst_ok += key == "0.25" and worst >= 0.95
            cells[key] = {"median": round(med, 4), "worst": round(worst, 4), "mean": round(statistics.mean(
                r[i] for r in runs), 4), "best_kernel_tuner": kt, "won": held}
        rows[name] = {"cells": cells, "cpu_s_per_run": round(statistics.mean(cpu[name]), 3)}
    # the mean over spaces of each space's mean fraction over the seeds: a count of cells won turns on whether
    # a median falls a hair above or below a threshold; this moves by a seed's share of what the seed changed
    mean = {str(f): round(statistics.mean(row["cells"][str(f)]["mean"] for row in rows.values()), 4)
            for f in FRACTIONS}
    return {"options": options, "won": wins, "cells": 3 * len(spaces), "worst_25_at_least_095": worst_ok,
            "mean_fraction": mean, "spaces": rows}


def _means(result: dict) -> str:
    return " / ".join(f"{result['mean_fraction'][str(f)]:.4f}" for f in FRACTIONS)


def render(results: list[dict], seeds: int, sources: list[str] | None = None, first_seed: int = 0) -> str:
    lines = ["# The default strategy's options, swept on the recorded spaces", "",
             f"`scripts/sweep_surrogate.py`: {DEFAULT_STRATEGY} with each setting, {seeds} seeds per space "
             f"(from {first_seed}), "
             "replayed without the tuner; cells won: the setting's median fraction of the optimum is at least "
             "the best Kernel Tuner strategy's median (stored results, " + ", ".join(sources or RESULTS) + ") at 10%, 25% "
             "and 50% of the measurable space. Worst at 25%: spaces where every seed reached 0.95 of the optimum. "
             "Mean fraction: per budget, the mean over the spaces of the mean fraction of the optimum over the seeds.",
             "", "| options | cells won | worst >= 0.95 at 25% | mean fraction at 10% / 25% / 50% |",
             "| --- | --- | --- | --- |"]
    for r in results:
        lines.append(f"| `{json.dumps(r['options']) if r['options'] else 'defaults'}` | {r['won']} of {r['cells']} | "
                     f"{r['worst_25_at_least_095']} of {r['cells'] // 3} spaces | {_means(r)} |")
    lines += ["", "Per space (median / worst, then the best Kernel Tuner median; + won, - lost), first setting:", "",
              "| space | 10% | 25% | 50% |", "| --- | --- | --- | --- |"]
    for name, row in results[0]["spaces"].items():
        cells = [f"{c['median']:.3f} / {c['worst']:.3f} {'+' if c['won'] else '-'} {c['best_kernel_tuner']:.3f}"
                 for c in row["cells"].values()]
        lines.append(f"| {name.replace('.json.gz', '')} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    pin_environment()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("settings", nargs="*", help="JSON objects of strategy options; the defaults always run first")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0,
                    help="seeds FIRST.. (the stored Kernel Tuner medians stay those of seeds 0-19): fresh seeds "
                         "tell a setting that holds from one that was lucky")
    ap.add_argument("--procs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--only", default="", help="comma-separated substrings of space names")
    ap.add_argument("--out", type=Path, default=None, help="write OUT.md and OUT.json")
    ap.add_argument("--results", type=Path, nargs="+", default=None,
                    help="stored benchmark results whose spaces (and Kernel Tuner medians) to score against "
                         f"(default: {', '.join(RESULTS)} under bench/results/)")
    args = ap.parse_args()
    try:
        settings = [{}] + [json.loads(s) for s in args.settings]
        if not all(isinstance(s, dict) for s in settings):
            raise json.JSONDecodeError("expected an object", "", 0)
    except json.JSONDecodeError as e:
        print(f"error: a setting is not a JSON object: {e}\nhint: quote it, e.g. '{{\"noise\": 0.05}}'",
              file=sys.stderr)
        return 2
    if args.seeds < 1 or args.procs < 1 or args.first_seed < 0:
        print("error: --seeds and --procs must be at least 1, --first-seed at least 0", file=sys.stderr)
        return 2
    for options in settings:        # unknown options or bad values: say so before any replay
        try:
            make_strategy(DEFAULT_STRATEGY, Space({"X": (1, 2)}), 0, options)
        except KerntuneError as e:
            print(f"error: {e.message}" + (f"\nhint: {e.hint}" if e.hint else ""), file=sys.stderr)
            return 2
    missing = [str(p) for p in args.results or [] if not p.is_file()]
    if missing:
        print(f"error: no such results file: {', '.join(missing)}\nhint: scripts/bench_strategies.py --out writes "
              "them", file=sys.stderr)
        return 2
    try:
        spaces = selected(args.only, args.results)
    except (json.JSONDecodeError, KeyError, TypeError):
        print(f"error: not a benchmark results file: {', '.join(map(str, args.results or RESULTS))}\nhint: "
              "scripts/bench_strategies.py --out writes them (a JSON object with a \"spaces\" entry)", file=sys.stderr)
        return 2
    results = []
    for options in settings:
        r = sweep(spaces, options, args.seeds, args.procs, args.first_seed)
        print(f"{json.dumps(options)}: {r['won']} of {r['cells']} cells won, worst >= 0.95 at 25% on "
              f"{r['worst_25_at_least_095']} of {len(spaces)} spaces, mean fraction {_means(r)}", flush=True)
        results.append(r)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        named = [p.name for p in args.results] if args.results else None
        args.out.with_suffix(".md").write_text(render(results, args.seeds, named, args.first_seed))
        args.out.with_suffix(".json").write_text(json.dumps({"seeds": args.seeds, "first_seed": args.first_seed,
                                                             "results": results}, indent=1))
        print(f"wrote {args.out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
