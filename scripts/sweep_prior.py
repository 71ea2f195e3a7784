#!/usr/bin/env python3
"""What `tune --prior` gains: each recorded space replayed with the default strategy (as
scripts/sweep_surrogate.py replays it: no tuner, one run per budget) twice, on its own and with every other
recorded space of the same template (its other shapes, measured whole) given to it as earlier
measurements, scored as bench_strategies.py scores: the median and worst fraction of the optimum over the
seeds at 10%, 25% and 50% of the measurable space, beside the best Kernel Tuner median of the stored
results. This is the best case of a prior (every other shape measured whole); Kernel Tuner's strategies
have no such input, so the comparison says what the record of earlier runs is worth, not which search
is better. With --partial P each other shape's prior is what an earlier default run with P% of its measurable
space measured there instead (the record a user has after tuning those shapes with that budget).

    python scripts/sweep_prior.py --results bench/results/strategies-rerecorded-2026-11-28.json --out bench/results/prior-other-shapes
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

import sweep_surrogate as sweep  # noqa: E402
from bench_strategies import FRACTIONS, pin_environment, won  # noqa: E402
from kerntune.tuner.template import config_key  # noqa: E402
import pools  # noqa: E402

_MEASURED: dict[str, list] = {}


def template_of(name: str) -> str:
    """The recorded spaces of one template share the name's first word (merge-template-decode-bs1 -> merge)."""
    return name.split("-")[0]


def measured(name: str, source: str) -> list[tuple[dict, float]]:
    """Every measured configuration of a recorded space with its score, once per process."""
    if (name, source) not in _MEASURED:
        space, record, _ = sweep._load(name, source)
        out = []
        for c in space.configs():
            score, counts, _ = record.get(config_key(c), (math.inf, False, ""))
            if counts and math.isfinite(score):
                out.append((c, score))
        _MEASURED[name, source] = out
    return _MEASURED[name, source]


PRIOR_SEED = 1000   # the earlier runs of --partial use seeds of their own: seed + PRIOR_SEED


def partial(name: str, source: str, seed: int, budget: int) -> list[tuple[dict, float]]:
    """What an earlier default run of ``budget`` measurements on a recorded space measured (its record), once per
    process and seed."""
    key = (name, source, seed, budget)
    if key not in _MEASURED:
        space, record, _ = sweep._load(name, source)
        got: list = []
        sweep._trace(space, record, seed + PRIOR_SEED, {}, budget, measured=got)
        _MEASURED[key] = got
    return _MEASURED[key]


def prior_of(other: str, sp: dict, seed: int, part: int | None) -> list[tuple[dict, float]]:
    """An other shape's record: measured whole, or (``part``: the index of one of its budgets) an earlier run's."""
    if part is None:
        return measured(other, sp.get("source", ""))
    return partial(other, sp.get("source", ""), seed, sp["budgets"][part])


def replay(job):
    name, seed, with_prior, spaces, part, options, elsewhere = job
    space, record, opt = sweep._load(name, spaces[name].get("source", ""))
    if not with_prior:
        sources = []
    elif elsewhere:      # the same space recorded on another device
        sources = [prior_of(name, elsewhere[name], seed, part)]
    else:
        sources = [prior_of(o, spaces[o], seed, part) for o in spaces
                   if o != name and template_of(o) == template_of(name)]
    found = [min(sweep._trace(space, record, seed, options if with_prior else {}, b, sources), default=math.inf)
             for b in spaces[name]["budgets"]]
    return name, seed, with_prior, [opt / f for f in found]


def transfer_table(spaces: dict) -> None:
    """Per space: the fraction of its optimum that the best configuration of each other shape of its template
    reaches here, and the best of that shape's five best (no search: how far a record transfers)."""
    for name, sp in spaces.items():
        here = {config_key(c): s for c, s in measured(name, sp.get("source", ""))}
        best = min(here.values())
        cells = []
        for other, osp in spaces.items():
            if other == name or template_of(other) != template_of(name):
                continue
            ranked = [k for k, _ in sorted(((config_key(c), s) for c, s in measured(other, osp.get("source", ""))),
                                           key=lambda t: t[1]) if k in here]
            cells.append(f"{other.replace('.json.gz', '')}: {best / here[ranked[0]]:.3f} / "
                         f"{max(best / here[k] for k in ranked[:5]):.3f}")
        print(f"{name.replace('.json.gz', '')}: " + ", ".join(cells))


def main() -> int:
    pin_environment()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, nargs="+", default=None,
                    help="stored benchmark results whose spaces and Kernel Tuner medians to use "
                         f"(default: {', '.join(sweep.RESULTS)} under bench/results/)")
    ap.add_argument("--only", default="", help="comma-separated substrings of space names")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None, help="write OUT.md")
    ap.add_argument("--partial", type=int, choices=[round(100 * f) for f in FRACTIONS], default=None,
                    help="the prior from each other shape is not its whole space but what an earlier default run "
                         "with this percentage of its measurable space measured there (its own seeds)")
    ap.add_argument("--options", type=json.loads, default={},
                    help='the default strategy\'s options for the runs with the prior, as JSON: \'{"transfer": 1}\'')
    ap.add_argument("--prior-from", type=Path, nargs="+", default=None,
                    help="stored benchmark results of the same spaces recorded elsewhere (another device): each "
                         "space's prior is its own recording there, not its template's other shapes")
    ap.add_argument("--transfer-table", action="store_true",
                    help="only print, per space, what the best (and best of five) of each other shape reaches here")
    args = ap.parse_args()
    if args.seeds < 1 or args.procs < 1:
        print("error: --seeds and --procs must be at least 1", file=sys.stderr)
        return 2
    scored = spaces = sweep.selected(args.only, args.results)
    if args.transfer_table:
        transfer_table(spaces)
        return 0
    elsewhere = {}
    if args.prior_from:
        elsewhere = sweep.selected("", args.prior_from)
        scored = {n: sp for n, sp in scored.items() if n in elsewhere}
        if not scored:
            print("error: no selected space is recorded in --prior-from", file=sys.stderr)
            return 2
    elif args.only:       # the priors come from every space of the same template, selected or not
        wanted = {template_of(n) for n in scored}
        spaces = {n: sp for n, sp in sweep.selected("", args.results).items() if template_of(n) in wanted}
    part = None if args.partial is None else [round(100 * f) for f in FRACTIONS].index(args.partial)
    # seed-major, so that a process meets the same seed's earlier runs again (--partial caches them)
    jobs = [(n, s, p, spaces, part, args.options, elsewhere) for s in range(args.seeds) for n in scored for p in (False, True)]
    per: dict = {}
    with pools.pool(args.procs) as pool:
        for name, seed, with_prior, fractions in pool.imap_unordered(replay, jobs, chunksize=2):
            per.setdefault((name, with_prior), {})[seed] = fractions
    where = ("the same space recorded elsewhere (" + ", ".join(map(str, args.prior_from)) + ")") if elsewhere else \
        "each other recorded shape of the same template"
    what = f"{where}, measured whole," if part is None else \
        f"what an earlier default run with {args.partial}% of {where} measured there (seeds {PRIOR_SEED} on)"
    lines = ["# The default strategy with and without the other shapes as a prior (`tune --prior`)", "",
             f"`scripts/sweep_prior.py{'' if part is None else f' --partial {args.partial}'}"
             f"{' --prior-from' if elsewhere else ''}`, {args.seeds} seeds "
             "per space; each cell: median / worst fraction of the optimum without a prior, then with "
             f"{what} as one, then the best Kernel Tuner median (stored results); + the median is at least "
             "Kernel Tuner's.", "",
             "| space | 10% | 25% | 50% |", "| --- | --- | --- | --- |"]
    totals = {False: [0, 0], True: [0, 0]}
    for name, sp in scored.items():
        cells = []
        for i, f in enumerate(FRACTIONS):
            kt = max((v["median"][str(f)] for v in sp["kernel_tuner"].values() if "median" in v), default=0.0)
            text = []
            for with_prior in (False, True):
                runs = [per[name, with_prior][s][i] for s in range(args.seeds)]
                med, worst = statistics.median(runs), min(runs)
                totals[with_prior][0] += won(med, kt)
                totals[with_prior][1] += i == 1 and worst >= 0.95
                text.append(f"{med:.3f} / {worst:.3f} {'+' if won(med, kt) else '-'}")
            cells.append(" then ".join(text) + f" ({kt:.3f})")
        lines.append(f"| {name.replace('.json.gz', '')} | " + " | ".join(cells) + " |")
    for with_prior in (False, True):
        summary = (f"{'with' if with_prior else 'without'} the prior: {totals[with_prior][0]} of {3 * len(scored)} "
                   f"cells won, worst >= 0.95 at 25% on {totals[with_prior][1]} of {len(scored)} spaces")
        lines.append(f"\n{summary}.")
        print(summary)
    if args.out:
        args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
        print(f"wrote {args.out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
