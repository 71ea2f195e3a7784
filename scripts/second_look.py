#!/usr/bin/env python3
"""A second look at the cells where Kernel Tuner's best strategy beats kerntune's default: is the
lead real, or luck of the draw and of the order in which a space's values are declared?

A cell is a recorded space at one budget (10%, 25% or 50% of its measurable configurations); the
stored benchmark (scripts/bench_strategies.py) gives each strategy's median fraction of the optimum
over seeds 0-19, and a cell is lost when the best of Kernel Tuner's 19 medians is above the
default's. Picking the highest of 19 noisy medians favours whichever strategy was lucky, so each lost
cell is measured again, for the default and for every Kernel Tuner strategy that had that best median:

- fresh seeds: seeds 20-39 (the same space, declared as recorded);
- shuffled declaration: seeds 0-19 on the same space with each parameter's values declared in
  another order (--orders of them, drawn by kt_replay.permuted; the configurations and their times
  are the same, only the order a strategy enumerates them in changes).

A strategy that searches should not care how the values were listed; one whose early picks come
from enumeration order (an index into the declared list) will. Only the strategies that won a cell in
the declared order are run again (all 19, on every order, would take hours on 2 cores), so a shuffled
order's "held" means held against those.

    python scripts/second_look.py --out bench/results/second-look
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

import kt_replay  # noqa: E402
from bench_strategies import FRACTIONS, _at, pin_environment, won  # noqa: E402
from sweep_surrogate import RESULTS, _load, _replay, selected, sweep  # noqa: E402
import pools  # noqa: E402

FRESH = list(range(20, 40))
SEEDS = list(range(20))


def lost_cells(spaces: dict[str, dict], swept: dict) -> list[dict]:
    """Every (space, budget) the default did not win in ``swept`` (sweep_surrogate.sweep with the default
    options), with the Kernel Tuner strategies that had the best stored median (brute_force too: one run in
    declaration order, as the sweep counts it)."""
    out = []
    for name, sp in spaces.items():
        for i, f in enumerate(FRACTIONS):
            key = str(f)
            cell = swept["spaces"][name]["cells"][key]
            if cell["won"]:
                continue
            medians = {s: r["median"][key] for s, r in sp["kernel_tuner"].items() if "median" in r}
            out.append({"space": name, "fraction": key, "budget": sp["budgets"][i],
                        "stored_kernel_tuner": cell["best_kernel_tuner"],
                        "winners": sorted(s for s, m in medians.items() if m == cell["best_kernel_tuner"]),
                        "stored_default": cell["median"]})
    return out


def runs(strategy: str, look: str, orders: list[int]) -> list[tuple[int, int | None]]:
    """(seed, order seed) of each run of a look; brute_force has no seed, so one run per order."""
    seeds = [0] if strategy == "brute_force" else FRESH if look == "fresh" else SEEDS
    return [(s, None) for s in seeds] if look == "fresh" else [(s, o) for o in orders for s in seeds]


def _kt_job(job: tuple) -> tuple:
    """One Kernel Tuner run: (space, strategy, seed, budget, order seed or None) -> fraction of the optimum."""
    name, strategy, seed, budget, order = job
    _, _, opt = _load(name)
    with tempfile.TemporaryDirectory(prefix="kerntune-look-") as tmp:
        cache = kt_replay.write_cache(REPO / "bench" / "data" / name, Path(tmp) / "cache.json", order)
        trace = kt_replay.replay(cache, strategy, seed, None if strategy == "brute_force" else budget,
                                 10.0 + 0.15 * budget)
    best = _at(trace.times, budget)
    return job, opt / best if best < float("inf") else 0.0


def _ours_job(job: tuple) -> tuple:
    name, seed, budget, order = job
    _, _, fractions, _ = _replay((name, seed, {}, [budget], order))
    return job, fractions[0]


def measure(cells: list[dict], orders: list[int], procs: int) -> None:
    """Fill each cell's fresh-seed and shuffled-order medians, for the default and the winners."""
    looks = ("fresh", "shuffled")
    our_jobs = {(c["space"], s, c["budget"], o) for c in cells for look in looks for s, o in runs("", look, orders)}
    kt_jobs = {(c["space"], w, s, c["budget"], o) for c in cells for w in c["winners"] for look in looks
               for s, o in runs(w, look, orders)}
    with pools.pool(procs) as pool:
        got = dict(pool.imap_unordered(_ours_job, sorted(our_jobs, key=str), chunksize=8))
        got.update(pool.imap_unordered(_kt_job, sorted(kt_jobs, key=str), chunksize=2))
    for c in cells:
        name, budget = c["space"], c["budget"]
        c["default"] = {look: round(statistics.median(got[(name, s, budget, o)] for s, o in runs("", look, orders)), 4)
                        for look in looks}
        c["kernel_tuner"] = {w: {look: round(statistics.median(got[(name, w, s, budget, o)]
                                                               for s, o in runs(w, look, orders)), 4)
                                 for look in looks} for w in c["winners"]}
        for look in looks:
            kt = max(r[look] for r in c["kernel_tuner"].values())
            c[f"{look}_kernel_tuner"] = kt
            c[f"{look}_won"] = won(c["default"][look], kt)


def render(cells: list[dict], orders: list[int], seconds: float, sources: list[str] | None = None) -> str:
    lines = ["# A second look at the cells the default loses", "",
             f"`scripts/second_look.py`: each cell where the stored benchmark ({', '.join(sources or RESULTS)}) has a Kernel "
             "Tuner median above the default's, measured again: with fresh seeds (20-39), and with each parameter's "
             f"values declared in {len(orders)} other orders (seeds 0-19 each, the medians pooled). Kernel Tuner: "
             "the best of the strategies that had the best stored median (listed; no other Kernel Tuner strategy "
             f"was run again). {seconds / 60:.0f} minutes.", "",
             "| space | budget | Kernel Tuner's best (stored) | default (stored) | fresh seeds: default / KT "
             "| shuffled order: default / KT |", "| --- | --- | --- | --- | --- | --- |"]
    for c in cells:
        cell = []
        for look in ("fresh", "shuffled"):
            mark = "+" if c[f"{look}_won"] else "-"
            cell.append(f"{c['default'][look]:.4f} {mark} {c[f'{look}_kernel_tuner']:.4f}")
        lines.append(f"| {c['space'].replace('.json.gz', '').replace('.json', '')} | {float(c['fraction']):.0%} "
                     f"({c['budget']}) | {c['stored_kernel_tuner']:.4f} {', '.join(c['winners'])} | "
                     f"{c['stored_default']:.4f} | " + " | ".join(cell) + " |")
    fresh = sum(c["fresh_won"] for c in cells)
    shuffled = sum(c["shuffled_won"] for c in cells)
    lines += ["", f"Of {len(cells)} cells lost in the stored benchmark, the default holds its own (median at least "
                  f"Kernel Tuner's) on {fresh} with fresh seeds and on {shuffled} with the values declared in other "
                  "orders (+: held, -: still behind)."]
    return "\n".join(lines) + "\n"


def main() -> int:
    pin_environment()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--orders", type=int, default=3, help="how many shuffled declaration orders")
    ap.add_argument("--procs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--only", default="", help="comma-separated substrings of space names")
    ap.add_argument("--out", type=Path, default=None, help="write OUT.md and OUT.json")
    ap.add_argument("--results", type=Path, nargs="+", default=None,
                    help="stored benchmark results whose lost cells to look at again "
                         f"(default: {', '.join(RESULTS)} under bench/results/)")
    args = ap.parse_args()
    if args.orders < 1 or args.procs < 1:
        print("error: --orders and --procs must be at least 1", file=sys.stderr)
        return 2
    spaces = selected(args.only, args.results)
    try:
        import kernel_tuner  # noqa: F401
    except ImportError:
        print("error: Kernel Tuner is not installed\nhint: pip install 'kerntune[bench]'", file=sys.stderr)
        return 2
    started = time.perf_counter()
    cells = lost_cells(spaces, sweep(spaces, {}, len(SEEDS), args.procs))
    print(f"{len(cells)} cells lost of {3 * len(spaces)}: measuring them again", flush=True)
    orders = list(range(1, args.orders + 1))
    measure(cells, orders, args.procs)
    seconds = time.perf_counter() - started
    text = render(cells, orders, seconds, [p.name for p in args.results] if args.results else None)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".md").write_text(text)
        args.out.with_suffix(".json").write_text(json.dumps({"orders": orders, "fresh_seeds": FRESH,
                                                             "cells": cells}, indent=1))
        print(f"wrote {args.out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
