#!/usr/bin/env python3
"""Hold every strategy to issue 14's target, and say how demanding that target is.

The target: on every recorded space and at every budget (10%, 25%, 50% of the measurable
configurations), the default's median fraction of the optimum over 20 seeds is at least the best
median of Kernel Tuner's 19 strategies, and its worst seed at 25% reaches 0.95 of the optimum. This
script reads the stored benchmark results (scripts/bench_strategies.py; no replay) and writes:

1. every strategy of both tools held to the same target: the cells where its median is at least
   the best median of the Kernel Tuner strategies other than itself, and the spaces where its worst
   seed at 25% reaches 0.95;
2. the default against each Kernel Tuner strategy alone (the cells where its median is at least
   that strategy's);
3. per space, how hard the worst-case target is: how many distinct kernels are within 0.95 of the
   optimum, and the chance that a uniform random search finds one within the 25% budget, per seed
   and in all 20 seeds, beside the seeds in which the default and Kernel Tuner's best did.

    python scripts/yardstick.py --out bench/results/yardstick-2026-11-27
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench_strategies import won  # noqa: E402

FRACTIONS = ("0.1", "0.25", "0.5")


def ran(result: dict | None) -> bool:
    return bool(result) and "median" in result


def leaderboard(spaces: dict[str, dict], default: str) -> list[dict]:
    """Each strategy (kerntune's with 20 seeds, Kernel Tuner's) held to the target: cells where its
    median is at least the best median of the Kernel Tuner strategies other than itself, and spaces
    where its worst seed at 25% reaches 0.95 (a one-run deterministic order: its one run)."""
    entries: dict[tuple[str, str], dict] = {}
    for space in spaces.values():
        kt = {s: r for s, r in space["kernel_tuner"].items() if ran(r)}
        for tool, results in (("kerntune", space["kerntune"]), ("Kernel Tuner", kt)):
            for strategy, r in results.items():
                if not ran(r):
                    continue
                e = entries.setdefault((tool, strategy), {"tool": tool, "strategy": strategy, "won": 0, "cells": 0,
                                                          "spaces": 0, "worst_ok": 0, "runs": r["runs"]})
                others = [o for s, o in kt.items() if tool == "kerntune" or s != strategy]
                if not others:
                    continue
                e["spaces"] += 1
                e["worst_ok"] += r["worst"]["0.25"] >= 0.95
                for f in FRACTIONS:
                    e["cells"] += 1
                    e["won"] += won(r["median"][f], max(o["median"][f] for o in others))
    out = sorted(entries.values(), key=lambda e: (-e["won"] / max(1, e["cells"]), e["strategy"]))
    for e in out:
        e["default"] = e["tool"] == "kerntune" and e["strategy"] == default
    return out


def head_to_head(spaces: dict[str, dict], default: str) -> list[dict]:
    """The default against each Kernel Tuner strategy alone: cells held and the cells lost."""
    rows: dict[str, dict] = {}
    for name, space in spaces.items():
        ours = space["kerntune"].get(default)
        if not ran(ours):
            continue
        for strategy, r in space["kernel_tuner"].items():
            if not ran(r):
                continue
            row = rows.setdefault(strategy, {"strategy": strategy, "held": 0, "cells": 0, "lost": []})
            for f in FRACTIONS:
                row["cells"] += 1
                if won(ours["median"][f], r["median"][f]):
                    row["held"] += 1
                else:
                    row["lost"].append(f"{short(name)} {float(f):.0%}")
    return sorted(rows.values(), key=lambda r: (r["held"] / r["cells"], r["strategy"]))


def hit_probability(n: int, k: int, b: int) -> float:
    """The chance that b distinct configurations drawn uniformly from n include one of k given ones."""
    if k <= 0:
        return 0.0
    if b >= n - k + 1:
        return 1.0
    return 1.0 - math.comb(n - k, b) / math.comb(n, b)


def near_optimal(name: str, source: str = "") -> tuple[int, int, int]:
    """(distinct measurable kernels, those within 0.95 of the optimum, those whose recorded interquartile
    range of times reaches the optimum's: not told apart from it by the recording) of a recorded space.
    Configurations that render the same kernel count once (as the tuner's duplicate check does), by their
    fastest recording."""
    import gzip

    from kerntune.tuner.template import config_key
    from sweep_surrogate import _load

    _, record, opt = _load(name, source)
    path = REPO / source if source else REPO / "bench" / "data" / name      # where the results say it was replayed
    cache = json.loads(gzip.decompress(path.read_bytes()))
    stats = {}
    for entry in cache["cache"].values():
        if "kerntune_stats" in entry:
            stats[config_key({k: entry[k] for k in cache["tune_params_keys"]})] = entry["kerntune_stats"]
    fastest: dict[str, tuple[float, str]] = {}
    for key, (score, counts, renders_to) in record.items():
        if counts and score < fastest.get(renders_to, (math.inf, ""))[0]:
            fastest[renders_to] = (score, key)
    best = min(fastest.values())[1]
    top = stats.get(best)
    ties = sum(1 for _, key in fastest.values() if top and key in stats and stats[key]["q1_ms"] <= top["q3_ms"])
    return len(fastest), sum(1 for s, _ in fastest.values() if opt / s >= 0.95), ties


def hardness(spaces: dict[str, dict], default: str) -> list[dict]:
    rows = []
    for name, space in spaces.items():
        n, k, ties = near_optimal(name, space.get("source", ""))
        b = space["budgets"][1]
        p = hit_probability(n, k, b)

        def hits(r: dict) -> int:
            return sum(1 for x in r["per_seed"]["0.25"] if x >= 0.95)

        ours = space["kerntune"][default]
        kt = [(hits(r) / r["runs"], s, hits(r), r["runs"]) for s, r in space["kernel_tuner"].items()
              if ran(r) and r["runs"] > 1]
        share, who, h, runs = max(kt) if kt else (0.0, "", 0, 0)
        rows.append({"space": short(name), "distinct": n, "near_optimal": k, "noise_ties": ties,
                     "noise_hit": hit_probability(n, ties, b), "budget": b, "random_hit": p,
                     "random_all": p ** ours["runs"], "default_hits": hits(ours), "runs": ours["runs"],
                     "kt_best": who, "kt_hits": h, "kt_runs": runs})
    return rows


def short(name: str) -> str:
    return name.split(".")[0]


def render(spaces: dict[str, dict], default: str, sources: list[str]) -> str:
    board, duel, hard = leaderboard(spaces, default), head_to_head(spaces, default), hardness(spaces, default)
    lines = ["# Every strategy held to the same target", "",
             f"`scripts/yardstick.py`, from the stored benchmark results ({', '.join(sources)}; no replay): "
             f"{len(spaces)} recorded spaces, 3 budgets each (10%, 25%, 50% of the measurable configurations), "
             "20 seeds. A cell is won at the 4 decimals the results keep.", "",
             "## 1. The target, applied to every strategy", "",
             "Cells won: the strategy's median is at least the best median of the Kernel Tuner strategies other "
             "than itself. Worst at 25%: spaces where every seed reached 0.95 of the optimum (a deterministic "
             "order, 1 run: that run).", "",
             "| tool | strategy | cells won | worst >= 0.95 at 25% |", "| --- | --- | --- | --- |"]
    for e in board:
        name = f"**{e['strategy']}** (default)" if e["default"] else e["strategy"]
        runs = " (1 run)" if e["runs"] == 1 else ""
        lines.append(f"| {e['tool']} | {name}{runs} | {e['won']} of {e['cells']} | {e['worst_ok']} of {e['spaces']} |")
    best_kt = max((e for e in board if e["tool"] == "Kernel Tuner"), key=lambda e: e["won"] / max(1, e["cells"]))
    lines += ["", f"Of Kernel Tuner's strategies, `{best_kt['strategy']}` comes closest: {best_kt['won']} of "
                  f"{best_kt['cells']} cells against the other 18.", "",
              "## 2. The default against each Kernel Tuner strategy alone", "",
              "| Kernel Tuner strategy | cells where the default's median is at least its | cells lost |",
              "| --- | --- | --- |"]
    for r in duel:
        lines.append(f"| {r['strategy']} | {r['held']} of {r['cells']} | {', '.join(r['lost']) or '-'} |")
    lines += ["", "## 3. How demanding the worst case at 25% is", "",
              "Distinct: measurable configurations, those that render the same kernel counted once. Near-optimal: "
              "within 0.95 of the optimum. Within noise: those whose recorded interquartile range of times reaches "
              "the optimum's (the recording does not tell them apart from it; the optimum included). Random search: "
              "the chance that the 25% budget, drawn uniformly without replacement, includes a near-optimal "
              "configuration, in one seed and in all 20, and, in one seed, one within noise. Seeds: how many of the "
              "20 reached 0.95 at 25%, for the default and for the Kernel Tuner strategy with the most (seeded "
              "strategies only).", "",
              "| space | distinct | near-optimal | within noise | 25% budget | random search: one seed / all 20 "
              "| random search: within noise | default: seeds | Kernel Tuner's most: seeds |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in sorted(hard, key=lambda r: r["random_hit"]):
        lines.append(f"| {r['space']} | {r['distinct']} | {r['near_optimal']} | {r['noise_ties']} | {r['budget']} | "
                     f"{r['random_hit']:.2f} / {r['random_all']:.1e} | {r['noise_hit']:.2f} | "
                     f"{r['default_hits']} of {r['runs']} | {r['kt_hits']} of {r['kt_runs']} ({r['kt_best']}) |")
    return "\n".join(lines) + "\n"


def main() -> int:
    from sweep_surrogate import RESULTS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="*", type=Path, help="stored benchmark JSON files (default: "
                                                          + ", ".join(RESULTS) + " under bench/results/)")
    ap.add_argument("--out", type=Path, default=None, help="write OUT.md (else print it)")
    args = ap.parse_args()
    paths = args.results or [REPO / "bench" / "results" / r for r in RESULTS]
    spaces, default = {}, None
    for path in paths:
        try:
            data = json.loads(path.read_text())
            spaces.update(data["spaces"])
            default = data["default"]
        except (OSError, ValueError, KeyError) as e:
            print(f"error: {path}: not a stored benchmark result ({e})\n"
                  "hint: pass JSON files written by scripts/bench_strategies.py", file=sys.stderr)
            return 2
    text = render(spaces, default, [p.name for p in paths])
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".md").write_text(text)
        print(f"wrote {args.out.with_suffix('.md')}")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
