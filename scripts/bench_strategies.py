#!/usr/bin/env python3
"""Compare search strategies on recorded spaces, by replay (no GPU needed):
kerntune's strategies and Kernel Tuner's, on the same caches, with the same
budgets and seeds.

For every recorded space (a kerntune run directory, or a Kernel Tuner cache
file, .json or .json.gz) and every strategy, the strategy is replayed with
many seeds; we record the best configuration found after 10%, 25% and 50% of
the space's measurable configurations (pruned ones never count against a
budget) were measured and report it as a fraction of the exhaustive optimum
(optimum time / best time found, so 1.0 means the optimum was found): the
median and the worst over the seeds.

kerntune's strategies run through kerntune's own tuner and replay device;
Kernel Tuner's (`pip install kerntune[bench]`) through its simulation mode on
the same cache (see scripts/kt_replay.py). The replay cost of each run (wall
seconds at the largest budget) is recorded beside each strategy.

    python scripts/bench_strategies.py bench/data/*.json.gz --seeds 20 \
        --out bench/results/strategies

writes strategies.md (a summary, then a table per space) and strategies.json
(everything, with every seed's fraction). With --reuse, results already in
the .json for the same seeds and budgets are kept, not run again.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kerntune.tuner.evaluators import ReplayEvaluator
from kerntune.tuner.kerneltuner import import_cache
from kerntune.tuner.run import TuneSettings, Tuner, template_from_store
from kerntune.tuner.store import RunStore
from kerntune.tuner.strategies import DEFAULT_STRATEGY, REGISTRY, strategy_class

FRACTIONS = (0.10, 0.25, 0.50)
# kerntune's Optuna strategies cost 7-42 s per replay at 768 evaluations, and 15-20 s on the small spaces
# where they keep proposing pruned configurations (Optuna's own overhead per ask): --slow-seeds limits them
OPTUNA = ("tpe", "nsga2")
# Kernel Tuner strategies too slow to replay here: (largest budget run, why)
KT_SLOW = {"skopt": (0, "too slow to replay 20 seeds here (scikit-optimize's GP: 46 s for one 24-evaluation run on a "
                        "48-configuration space, 152 s for one 154-evaluation run on a 1536-configuration one)")}


KT_SECONDS_PER_EVALUATION = {"bayes_opt": 0.1, "hybrid_vndx": 0.15}   # measured: up to 14 s and 71 s at 768


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
    """kerntune: the best score after each measured evaluation."""
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


def _dump(results: dict) -> str:
    """Compact JSON: one line per space and tool, fractions to 4 decimals."""
    def rounded(x):
        if isinstance(x, float):
            return round(x, 4)
        if isinstance(x, dict):
            return {k: rounded(v) for k, v in x.items()}
        if isinstance(x, list):
            return [rounded(v) for v in x]
        return x

    head = {k: v for k, v in results.items() if k != "spaces"}
    lines = ["{", *(f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()), ' "spaces": {']
    spaces = list(results.get("spaces", {}).items())
    for i, (name, space) in enumerate(spaces):
        lines.append(f"  {json.dumps(name)}: {json.dumps(rounded(space))}" + ("," if i < len(spaces) - 1 else ""))
    return "\n".join(lines + [" }", "}"]) + "\n"


def _at(trace: list[float], budget: int) -> float:
    """The best of the first ``budget`` entries (inf if none)."""
    return min(trace[:budget], default=math.inf)


def _stats(per_seed: dict[str, list[float]], seconds: list[float], crashed: int = 0, errors: list[str] = (),
           note: str = "") -> dict:
    out = {"median": {f: statistics.median(v) for f, v in per_seed.items()},
           "worst": {f: min(v) for f, v in per_seed.items()},
           "found_optimum": {f: sum(1 for x in v if x >= 1 - 1e-12) / len(v) for f, v in per_seed.items()},
           "per_seed": per_seed, "runs": len(next(iter(per_seed.values()))),
           "seconds_per_run": statistics.mean(seconds) if seconds else 0.0,
           "max_seconds_per_run": max(seconds) if seconds else 0.0}
    if crashed:
        out["crashed_runs"] = crashed
        out["errors"] = sorted(set(errors))[:5]
    if note:
        out["note"] = note
    return out


def run_kerntune(run: Path, strategy: str, seeds: list[int], budgets: list[int], opt: float,
                 slow_seeds: int | None = None) -> dict:
    """A strategy that does not plan with the budget: one run per seed at the largest budget, read at every
    budget (a smaller budget stops the same sequence earlier). One that does (the default's ``finish``):
    one run per seed and budget, as a user's ``--budget`` would run it."""
    per_seed: dict[str, list[float]] = {str(f): [] for f in FRACTIONS}
    seconds = []
    if strategy in OPTUNA and slow_seeds is not None:
        seeds = seeds[:slow_seeds]
    for seed in ([0] if strategy == "exhaustive" else seeds):
        per_budget = strategy_class(strategy).plans_with_budget
        earlier = [replay(run, strategy, seed, b) for b in budgets[:-1]] if per_budget else []
        t0 = time.perf_counter()            # s/run: the replay at the largest budget
        last = replay(run, strategy, seed, budgets[-1])
        seconds.append(time.perf_counter() - t0)
        traces = [*earlier, last] if per_budget else [last] * len(budgets)
        for f, b, trace in zip(FRACTIONS, budgets, traces):
            best = trace[min(b, len(trace)) - 1] if trace else math.inf
            per_seed[str(f)].append(opt / best if math.isfinite(best) else 0.0)
    return _stats(per_seed, seconds)


def run_kernel_tuner(cache: Path, strategy: str, seeds: list[int], budgets: list[int], opt: float) -> dict | None:
    import kt_replay

    per_seed: dict[str, list[float]] = {str(f): [] for f in FRACTIONS}
    seconds, crashed, errors = [], 0, []
    limit, why = KT_SLOW.get(strategy, (None, ""))
    if limit is not None and budgets[-1] > limit:
        return {"skipped": f"not run: {why}" if limit == 0 else f"not run at budgets over {limit} evaluations: {why}"}
    for seed in ([0] if strategy == "brute_force" else seeds):
        if strategy == "brute_force":   # takes no max_fevals: its one order, read at every budget
            runs = [(None, list(budgets))]
        elif strategy in kt_replay.BUDGET_AWARE:
            runs = [(b, [b]) for b in budgets]
        else:
            runs = [(budgets[-1], list(budgets))]
        for max_fevals, read_at in runs:
            t0 = time.perf_counter()
            # some strategies (greedy_ils, hybrid_vndx, nsga2) can circle without counting an evaluation:
            # a wall-time limit, generous for what the others need (Bayesian optimization the most)
            limit_s = 10.0 + KT_SECONDS_PER_EVALUATION.get(strategy, 0.03) * (max_fevals or 2 * budgets[-1])
            trace = kt_replay.replay(cache, strategy, seed, max_fevals, limit_s)
            seconds.append(time.perf_counter() - t0)
            if trace.error:
                crashed += 1
                errors.append(trace.error)
            for b in read_at:
                f = str(FRACTIONS[budgets.index(b)])
                best = _at(trace.times, b)
                per_seed[f].append(opt / best if math.isfinite(best) else 0.0)
    return _stats(per_seed, seconds, crashed, errors)


# set before the interpreter starts: Kernel Tuner's strategies iterate over sets of strings (so their
# results depend on the hash seed), and a multi-threaded BLAS on a shared 2-core machine spins
# (small solves run 10-30x slower than with one thread)
ENVIRONMENT = {"PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def pin_environment() -> None:
    """Start this script again under ENVIRONMENT unless it already runs under it (every replay script
    calls this first)."""
    if any(os.environ.get(k) != v for k, v in ENVIRONMENT.items()):
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **ENVIRONMENT})


def main() -> int:
    pin_environment()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spaces", nargs="*", type=Path, help="run directories or Kernel Tuner caches")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--strategies", default=",".join(REGISTRY), help="kerntune's strategies ('' for none)")
    ap.add_argument("--kernel-tuner", default="all",
                    help="Kernel Tuner's strategies: comma-separated, 'all', or 'none'")
    ap.add_argument("--out", type=Path, default=Path("bench/results/strategies"))
    ap.add_argument("--reuse", action="store_true", help="keep results already in OUT.json (same seeds, budgets)")
    ap.add_argument("--rerun", default="", help="with --reuse: strategies to run again all the same")
    ap.add_argument("--slow-seeds", type=int, default=None,
                    help=f"seeds for kerntune's {' and '.join(OPTUNA)} (slow to replay; default: --seeds)")
    ap.add_argument("--merge", nargs="+", type=Path, default=None, metavar="JSON",
                    help="run nothing: combine the results of earlier runs (same seeds) into OUT")
    ap.add_argument("--cost", default="", metavar="STRATEGIES",
                    help="run nothing else: replay these kerntune strategies in turn (--seeds of each) on the "
                         "spaces at their 50%% budget and print wall and CPU seconds per run (CPU time is what a "
                         "replay costs; wall time on a shared machine includes waiting for the cores)")
    args = ap.parse_args()
    if args.merge:
        return merge(args.merge, args.out)
    if args.cost:
        return cost(args.spaces, args.cost.split(","), args.seeds)
    if not args.spaces:
        ap.error("give the recorded spaces to replay (or --merge earlier results)")
    rerun = set(args.rerun.split(","))
    seeds = list(range(args.seeds))
    ours = [s for s in args.strategies.split(",") if s]
    theirs: list[str] = []
    results: dict = {"seeds": args.seeds, "fractions": FRACTIONS, "default": DEFAULT_STRATEGY,
                     "default_options": default_options(), "spaces": {}}
    if args.kernel_tuner != "none":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import kt_replay

        theirs = kt_replay.strategies() if args.kernel_tuner == "all" else args.kernel_tuner.split(",")
        results["kernel_tuner_version"] = kt_replay.version()
        results["kernel_tuner_left_out"] = kt_replay.LEFT_OUT
    json_path = args.out.with_suffix(".json")
    old = json.loads(json_path.read_text()) if args.reuse and json_path.exists() else {}
    if old and old.get("seeds") != args.seeds:
        raise SystemExit(f"{json_path} was written with {old.get('seeds')} seeds, not {args.seeds}: drop --reuse")
    if old:
        results["spaces"] = old.get("spaces", {})
        results.setdefault("kernel_tuner_version", old.get("kernel_tuner_version"))
        results.setdefault("kernel_tuner_left_out", old.get("kernel_tuner_left_out"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for path in args.spaces:
            run = load_space(path, Path(tmp))
            opt, recorded, measurable, size = optimum(run)
            budgets = [max(1, math.ceil(f * measurable)) for f in FRACTIONS]
            space = {"source": str(path), "space_size": size, "recorded": recorded, "measurable": measurable,
                     "optimum_score": opt, "budgets": budgets, "kerntune": {}, "kernel_tuner": {}}
            prev = results["spaces"].get(path.name, {})
            if prev.get("budgets") == budgets:
                space["kerntune"].update(prev.get("kerntune", {}))
                space["kernel_tuner"].update(prev.get("kernel_tuner", {}))
            results["spaces"][path.name] = space
            print(f"{path.name}: {size} configurations ({measurable} measurable), budgets {budgets}",
                  file=sys.stderr)
            cache = None
            for tool, names in (("kerntune", ours), ("kernel_tuner", theirs)):
                for strategy in names:
                    if strategy in space[tool] and strategy not in rerun:
                        continue
                    if tool == "kerntune":
                        r = run_kerntune(run, strategy, seeds, budgets, opt, args.slow_seeds)
                    else:
                        if cache is None:
                            cache = kt_replay.write_cache(path, Path(tmp) / (path.name.split(".")[0] + ".json"))
                        r = run_kernel_tuner(cache, strategy, seeds, budgets, opt)
                    space[tool][strategy] = r
                    if "median" in r:
                        print(f"  {tool[:2]} {strategy:24s} " + "  ".join(
                            f"{f:.0%}: {r['median'][str(f)]:.3f}/{r['worst'][str(f)]:.3f}" for f in FRACTIONS)
                            + f"  {r['seconds_per_run']:.2f} s/run", file=sys.stderr)
                    json_path.write_text(_dump(results))
    json_path.write_text(_dump(results))
    args.out.with_suffix(".md").write_text(render(results))
    print(f"wrote {args.out.with_suffix('.md')} and {json_path}", file=sys.stderr)
    return 0


def cost(spaces: list[Path], strategies: list[str], seeds: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        for path in spaces:
            run = load_space(path, Path(tmp))
            budget = max(1, math.ceil(FRACTIONS[-1] * optimum(run)[2]))
            spent: dict[str, list[tuple[float, float]]] = {s: [] for s in strategies}
            for seed in range(seeds):
                for s in strategies:        # in turn, so a change in the machine's load hits all alike
                    t0, c0 = time.perf_counter(), time.process_time()
                    replay(run, s, seed, budget)
                    spent[s].append((time.perf_counter() - t0, time.process_time() - c0))
            for s, v in spent.items():
                print(f"{path.name} {s} at {budget} evaluations: wall {statistics.mean(w for w, _ in v):.2f} s, "
                      f"CPU {statistics.mean(c for _, c in v):.2f} s per run (mean of {len(v)})")
    return 0


def default_options() -> dict:
    """The default strategy's option defaults, as this checkout has them (what its rows were replayed with,
    unless a merge copied them from an older file)."""
    return {k: o.default for k, o in strategy_class(DEFAULT_STRATEGY).options.items()}


def merge(parts: list[Path], out: Path) -> int:
    """One result file from several runs of this script (for example Kernel Tuner's strategies and
    kerntune's, run side by side on two cores)."""
    results: dict = {}
    for part in parts:
        data = json.loads(part.read_text())
        if results and data["seeds"] != results["seeds"]:
            raise SystemExit(f"{part} was written with {data['seeds']} seeds, not {results['seeds']}")
        spaces = results.setdefault("spaces", {})
        for key, value in data.items():
            if key != "spaces" and value is not None:
                results.setdefault(key, value)
        for name, space in data["spaces"].items():
            into = spaces.setdefault(name, {k: v for k, v in space.items() if k not in ("kerntune", "kernel_tuner")}
                                     | {"kerntune": {}, "kernel_tuner": {}})
            if into["budgets"] != space["budgets"]:
                raise SystemExit(f"{part}: {name} has budgets {space['budgets']}, not {into['budgets']}")
            into["kerntune"].update(space.get("kerntune", {}))
            into["kernel_tuner"].update(space.get("kernel_tuner", {}))
    results["default"] = DEFAULT_STRATEGY
    results["default_options"] = default_options()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(_dump(results))
    out.with_suffix(".md").write_text(render(results))
    print(f"wrote {out.with_suffix('.md')} and {out.with_suffix('.json')}", file=sys.stderr)
    return 0


def won(median: float, best_kernel_tuner: float) -> bool:
    """A cell is won when the default's median is at least Kernel Tuner's best at the 4 decimals the JSON
    keeps: the two tools' times of one configuration can differ in the last digits (Kernel Tuner's cache
    entry against kerntune's imported score)."""
    return round(median, 4) >= round(best_kernel_tuner, 4)


def best_kernel_tuner(space: dict, f: str) -> tuple[str, float]:
    rows = [(r["median"][f], s) for s, r in space["kernel_tuner"].items() if "median" in r]
    if not rows:
        return "", math.nan
    value = max(v for v, _ in rows)
    names = [s for v, s in rows if v == value]
    return ", ".join(names[:2]) + (f" +{len(names) - 2}" if len(names) > 2 else ""), value


def _options(options: dict) -> str:
    return ", ".join(f"`{k}={v}`" for k, v in options.items())


def render(results: dict) -> str:
    d, fr = results["default"], [str(f) for f in results["fractions"]]
    kt = results.get("kernel_tuner_version")
    lines = ["# Search strategies on recorded spaces (replay)", "",
             f"Fraction of the exhaustive optimum reached (optimum time / best time found; 1.000 = found it) "
             f"after 10%, 25% and 50% of the space's measurable configurations were measured (pruned ones never "
             f"count against a budget): median / worst over {results['seeds']} seeds (exhaustive and brute_force: "
             f"their one deterministic order). kerntune's default strategy is `{d}`"
             + (f" with the options {_options(results['default_options'])}." if results.get("default_options") else ".")
             + (f" Kernel Tuner {kt} in simulation mode on the same caches, same budgets (`max_fevals`) and seeds "
                "(booleans written as 0/1; a run that crashed counts with its best so far)." if kt else ""), "",
             "s/run: wall seconds of one replay at the 50% budget, on a shared 2-core machine where several "
             "benchmarks and test suites ran at once (so mostly waiting for a core: compare within a row's "
             "neighbourhood only; `--cost` measures CPU time).", ""]
    if kt:
        lines += ["## Summary: the default against the best Kernel Tuner strategy", "",
                  "Per space and budget: the default's median / worst, and the best median any Kernel Tuner "
                  "strategy reached (which one). ✓: the default's median is at least as high.", "",
                  "| space | " + " | ".join(f"{float(f):.0%} default | {float(f):.0%} best KT" for f in fr)
                  + " | KT strategies run |",
                  "| --- | " + " | ".join("--- | ---" for _ in fr) + " | --- |"]
        every = {s for space in results["spaces"].values() for s, r in space["kernel_tuner"].items() if "median" in r}
        wins = total = 0
        worst25, cost768 = {}, []
        for name, space in sorted(results["spaces"].items()):
            ours = space["kerntune"].get(d)
            if ours is None or "median" not in ours:
                continue
            cells = []
            for f in fr:
                who, value = best_kernel_tuner(space, f)
                if not who:
                    cells.append(f"{ours['median'][f]:.3f} / {ours['worst'][f]:.3f} | not run")
                    continue
                ok = won(ours["median"][f], value)
                wins += ok
                total += 1
                digits = 3 if ok or f"{ours['median'][f]:.3f}" != f"{value:.3f}" else 4   # a near-tie lost
                cells.append(f"{ours['median'][f]:.{digits}f} / {ours['worst'][f]:.3f} {'✓' if ok else '✗'} | "
                             f"{value:.{digits}f} ({who})")
            ran = sum(1 for s, r in space["kernel_tuner"].items() if "median" in r)
            cells.append(f"{ran} of {len(every)}")
            worst25[name.split(".")[0]] = ours["worst"]["0.25"]
            if space["budgets"][-1] == 768:
                cost768.append(ours["seconds_per_run"])
            lines.append(f"| {name.split('.')[0]} | " + " | ".join(cells) + " |")
        if total:
            low = [f"{n} {v:.3f}" for n, v in worst25.items() if v < 0.95]
            lines += ["", f"The default's median is at least the best Kernel Tuner strategy's in {wins} of {total} "
                          f"(space, budget) cells. Its worst seed at 25% reaches 0.95 of the optimum on "
                          f"{len(worst25) - len(low)} of {len(worst25)} spaces"
                          + (f" (below: {', '.join(low)})" if low else "") + "."
                          + (f" Its replays at 768 evaluations took {statistics.mean(cost768):.2f} s of wall time per "
                             f"run in this benchmark (mean over the {len(cost768)} spaces with that budget; on a "
                             f"shared machine: `--cost` measures CPU time)." if cost768 else ""), ""]
        left = results.get("kernel_tuner_left_out") or {}
        for s, why in left.items():
            lines.append(f"Kernel Tuner's `{s}` is left out: {why}.")
        lines.append("")
    for name, space in sorted(results["spaces"].items()):
        lines += [f"## {name}", "", f"{space['space_size']} configurations, {space['measurable']} measurable; "
                  f"budgets {', '.join(map(str, space['budgets']))} measured evaluations.", "",
                  "| tool | strategy | 10% | 25% | 50% | s/run |", "| --- | --- | --- | --- | --- | --- |"]
        for tool, label in (("kerntune", "kerntune"), ("kernel_tuner", "Kernel Tuner")):
            for strategy, r in space.get(tool, {}).items():
                name_cell = f"**{strategy}** (default)" if tool == "kerntune" and strategy == d else strategy
                if "median" not in r:
                    lines.append(f"| {label} | {name_cell} | {r.get('skipped', 'not run')} | | | |")
                    continue
                cells = [f"{r['median'][f]:.3f} / {r['worst'][f]:.3f}" for f in fr]
                crash = f" ({r['crashed_runs']} runs crashed)" if r.get("crashed_runs") else ""
                if r["runs"] not in (1, results["seeds"]):
                    crash += f" ({r['runs']} seeds)"
                lines.append(f"| {label} | {name_cell}{crash} | " + " | ".join(cells)
                             + f" | {r['seconds_per_run']:.2f} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
