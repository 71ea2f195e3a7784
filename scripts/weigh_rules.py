#!/usr/bin/env python3
"""Weigh rules for the final test's interval on the proof benchmark's stored runs, re-running nothing.

"as recorded" is each run's own verdict, under the rule in force when it was made: up to b416443 the
interval that holds every confirmation session's own interval and the t-interval of the sessions' mean
(the "union"), since then the per-process rule below (kerntune.speedup.across_sessions with the pooled
spread and the number of processes). From the sessions and the pooled spread each stored run kept, this
recomputes what two rules would have said:

- "t-only": the t-interval of the confirmation sessions' mean, each session (block) one observation;
- "per process": the same t-interval counted as one observation per fresh worker process of the
  confirmation (the count each run recorded in session_processes, else 2, the count of every run made
  before it was recorded), since blocks in one process share the
  state the machine was in for those seconds (bench/proof/flat/README.md) and are not independent.

On runs that recorded the worker process of each session (session_processes, since b375b12) it also
weighs the spread the per-process rule uses: the pooled sd of blocks around each pick's mean counts a
process mean as varying no more than one block does, which holds for the true block spread, but the
estimate, taken around each pick's mean, reads low when a process's blocks move together. There the
spread of the process means themselves (one df per pick-shape and extra process: the textbook cluster
estimate) is computed beside it, and two more rules are applied: "process means" (the per-process rule
with that spread) and "the larger" (with the larger of the two spreads).

Per rule: on the power part's runs (each pair's true speedup measured apart), the claims per true
speedup, how many intervals hold the truth and the mean ratio of upper to lower bound; on every
false-claims run that kept its confirmed picks' sessions, the general claims and the shapes claimed
(an upper bound per shape: the test keeps one pick per shape).

    python scripts/weigh_rules.py --out bench/results/rules-cpu-2026-11-29
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

from bench_proof import t_only, t_only_claims  # noqa: E402
from kerntune.speedup import THRESHOLD  # noqa: E402

RESULTS = REPO / "bench" / "results"
POWER = [RESULTS / "proof-cpu-2026-11-28.json"]
FALSE_CLAIMS = [RESULTS / "proof-cpu-2026-11-29-tonly.json", RESULTS / "proof-cpu-2026-11-28-tonly-probe.json"]
OWN = -1                # "per process": each run's own number of confirmation processes
RULES = (("as recorded", None), ("t-only", 0), ("per process", OWN))
EARLIER_PROCESSES = 2   # the confirmation processes of every run made before session_processes was recorded


def processes(run: dict) -> int:
    """The worker processes a run's confirmation ran in: as recorded (its picks' or its own
    session_processes, screening left out), else EARLIER_PROCESSES."""
    for d in list(run.get("picks", {}).values()) + [run]:
        procs = set((d.get("session_processes") or [])[1:])
        if procs:
            return len(procs)
    return EARLIER_PROCESSES


def _load(paths: list[Path], part: str) -> list[dict]:
    out = []
    for p in paths:
        data = json.loads(p.read_text())
        if part not in data:
            raise ValueError(f"{p} has no {part} part")
        out.append(data[part])
    return out


def power(parts: list[dict], observations: int | None) -> dict:
    """Claims per true speedup, intervals holding the truth, mean hi/lo, over the power runs that kept sessions.
    ``observations`` None: the rule in force, as recorded; 0: t-only; OWN: the t-interval as one observation
    per confirmation process (:func:`processes`)."""
    def bounds(run: dict) -> tuple[float, float] | None:
        if observations is None:
            return run["interval"]["lo"], run["interval"].get("hi") or float("inf")
        iv = t_only(run["sessions"], run.get("process_spread"),
                    processes(run) if observations == OWN else observations)
        return (iv["lo"], iv["hi"]) if iv else None

    return _score((pair["truth"], bounds(run)) for part in parts for pair in part["pairs"] for run in pair["runs"]
                  if "error" not in run and pair.get("truth") is not None and "sessions" in run)


def _score(intervals) -> dict:
    """Claims per true speedup, intervals holding the truth and the mean hi/lo of (truth, (lo, hi) or None)."""
    claims: dict[float, list[int]] = {}
    held, widths = 0, []
    for truth, b in intervals:
        if b is None:
            continue
        lo, hi = b
        c = claims.setdefault(truth, [0, 0])
        c[0] += lo >= THRESHOLD
        c[1] += 1
        held += lo <= truth <= hi
        widths.append(hi / lo)
    runs = sum(n for _, n in claims.values())
    return {"claims": {str(t): c for t, c in sorted(claims.items())}, "runs": runs, "held": held,
            "width": round(statistics.mean(widths), 3) if widths else None}


def false_claims(parts: list[dict], observations: int | None) -> dict:
    """General and per-shape claims over the false-claims runs that kept every confirmed pick's sessions."""
    general = shapes = pairs = runs = 0
    for part in parts:
        for run in part["runs"]:
            if "picks" not in run:
                continue
            runs += 1
            pairs += sum(len(p["shape_sessions"]) for p in run["picks"].values())
            if observations is None:
                general += bool(run.get("improved"))
                shapes += len(run.get("shape_claims", []))
            else:
                g, s = t_only_claims(run, processes(run) if observations == OWN else observations)
                general += g
                shapes += len(s)
    return {"runs": runs, "pairs": pairs, "general": general, "shapes": shapes}


# --- the spread of process means, on runs that recorded their processes --------------------------------
def _groups(run: dict) -> list[tuple[list[float], list[int]]]:
    """Each confirmed pick's each shape in a false-claims run (the run's one general pick in a power run):
    the confirmation blocks' log speedups and the worker process each ran in; [] before processes were
    recorded, and for a pick whose confirmation ran in one process."""
    picks = run["picks"].values() if "picks" in run else [run]
    out = []
    for pick in picks:
        procs = pick.get("session_processes") or []
        for sessions in pick.get("shape_sessions", {}).values():
            if len(procs) == len(sessions) and len(set(procs[1:])) >= 2:
                out.append(([math.log(x) for x in sessions[1:]], procs[1:]))
    return out


def split(groups: list[tuple[list[float], list[int]]]) -> dict:
    """Pooled over ``groups``: the sd of blocks around each group's mean (what the final test pools), of
    blocks around their own process's mean, and of the process means around each group's mean of them
    (the sd of one process's mean, a cluster estimate), each with its degrees of freedom; and the mean
    number of blocks per process."""
    ss = {"blocks": [0.0, 0], "within": [0.0, 0], "means": [0.0, 0]}
    blocks = groups_of_blocks = 0
    for logs, procs in groups:
        m = statistics.fmean(logs)
        ss["blocks"][0] += sum((x - m) ** 2 for x in logs)
        ss["blocks"][1] += len(logs) - 1
        by: dict[int, list[float]] = {}
        for x, p in zip(logs, procs):
            by.setdefault(p, []).append(x)
        means = [statistics.fmean(v) for v in by.values()]
        for v, mp in zip(by.values(), means):
            ss["within"][0] += sum((x - mp) ** 2 for x in v)
            ss["within"][1] += len(v) - 1
        mm = statistics.fmean(means)
        ss["means"][0] += sum((mp - mm) ** 2 for mp in means)
        ss["means"][1] += len(means) - 1
        blocks, groups_of_blocks = blocks + len(logs), groups_of_blocks + len(means)
    out: dict = {k: ({"sd": math.sqrt(s / d), "df": d} if d else None) for k, (s, d) in ss.items()}
    out["groups"] = len(groups)
    out["blocks_per_process"] = round(blocks / groups_of_blocks, 2) if groups_of_blocks else None
    return out


def _spread(run: dict, rule: str) -> dict | None:
    """The spread a rule uses for one run: "per process" the block spread the run recorded, "process
    means" the run's pooled sd of process means, "the larger" the larger of the two."""
    recorded = run.get("process_spread")
    if rule == "per process":
        return recorded
    means = split(_groups(run))["means"]
    if rule == "process means" or not recorded:
        return means
    return means if means and means["sd"] > recorded["sd"] else recorded


SPREAD_RULES = ("per process", "process means", "the larger")


def by_process(parts: list[dict]) -> dict | None:
    """On the false-claims runs that recorded their processes: the pooled spreads (:func:`split`), how
    many runs' own spread of process means exceeds the block spread they recorded, and each spread
    rule's general and per-shape claims (an upper bound per shape, as in :func:`false_claims`)."""
    runs = [r for part in parts for r in part["runs"] if "picks" in r and _groups(r)]
    if not runs:
        return None
    claims = {}
    for rule in SPREAD_RULES:
        each = [t_only_claims({**r, "process_spread": _spread(r, rule)}, processes(r)) for r in runs]
        claims[rule] = {"general": sum(g for g, _ in each), "shapes": sum(len(s) for _, s in each)}
    return {"runs": len(runs), "spreads": split([g for r in runs for g in _groups(r)]), "means_wider": _wider(runs),
            "claims": claims}


def _wider(runs: list[dict]) -> int:
    """How many runs' own sd of process means exceeds the block spread they recorded."""
    return sum(1 for r in runs if (split(_groups(r))["means"] or {"sd": 0})["sd"]
               > (r.get("process_spread") or {"sd": math.inf})["sd"])


def by_process_power(parts: list[dict]) -> dict | None:
    """On the power runs that recorded their processes, per spread rule: claims per true speedup, intervals
    holding the truth and the mean hi/lo, as :func:`power`. A power run keeps its general pick's sessions
    only, so its spread of process means has one df per shape (the final test's pools every pick's)."""
    runs = [(pair["truth"], r) for part in parts for pair in part["pairs"] for r in pair["runs"]
            if pair.get("truth") is not None and "error" not in r and _groups(r)]
    if not runs:
        return None
    def bounds(r: dict, rule: str) -> tuple[float, float] | None:
        iv = t_only(r["sessions"], _spread(r, rule), processes(r))
        return (iv["lo"], iv["hi"]) if iv else None

    out = {rule: _score((truth, bounds(r, rule)) for truth, r in runs) for rule in SPREAD_RULES}
    return {"runs": len(runs), "spreads": split([g for _, r in runs for g in _groups(r)]),
            "means_wider": _wider([r for _, r in runs]), "rules": out}


SPREAD_NAMES = {"per process": "block spread (the final test's)", "process means": "spread of process means",
                "the larger": "the larger of the two"}


def render_by_process(fc: dict | None, pw: dict | None) -> list[str]:
    """The section on runs that recorded their processes: the pooled spreads, then each spread rule."""
    fmt = lambda x: f"{x['sd']:.4f} ({x['df']} df)" if x else "-"  # noqa: E731
    lines = ["", "## The spread of process means", "",
             "On the runs that recorded each session's worker process; log speedups, pooled over every "
             "pick-shape (a power run keeps its general pick's shapes only):", "",
             "| runs | pick-shapes | blocks per process (mean) | sd of blocks around each pick-shape's mean (the "
             "final test's spread) | of blocks around their process's mean | of process means (a cluster "
             "estimate) | runs whose own sd of process means exceeds the spread they recorded |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for what, bp in (("false claims", fc), ("power", pw)):
        if bp is not None:
            sp = bp["spreads"]
            lines.append(f"| {bp['runs']} {what} | {sp['groups']} | {sp['blocks_per_process']} | {fmt(sp['blocks'])} | "
                         f"{fmt(sp['within'])} | {fmt(sp['means'])} | {bp['means_wider']} of {bp['runs']} |")
    lines += ["", "The per-process rule needs a process mean to vary no more than the block spread says a block "
              "does. Were blocks independent, the sd of process means would be about the within-process sd over "
              "sqrt(blocks per process); were a process's blocks to move together, about the block sd. Each rule "
              "below is the per-process interval (one observation per process) with another spread: the "
              "block spread each run recorded, the run's own pooled sd of process means, or the larger.", ""]
    truths = list(next(iter(pw["rules"].values()))["claims"]) if pw else []
    head = "".join(f" power: claimed at true {float(t):.2f}x |" for t in truths)
    lines += [f"| rule |{head} holds the truth | hi/lo (mean) | false claims: general | per shape |",
              "| --- |" + " --- |" * (len(truths) + 4)]
    for rule in SPREAD_RULES:
        cells = "".join(f" {c} of {n} |" for c, n in pw["rules"][rule]["claims"].values()) if pw else ""
        p = f" {pw['rules'][rule]['held']} of {pw['rules'][rule]['runs']} | {pw['rules'][rule]['width']} |" if pw \
            else " - | - |"
        f = f" {fc['claims'][rule]['general']} of {fc['runs']} runs | {fc['claims'][rule]['shapes']} |" if fc \
            else " - | - |"
        lines.append(f"| {SPREAD_NAMES[rule]} |{cells}{p}{f}")
    return lines


def render(rows: list[dict], power_paths: list[Path], fc_paths: list[Path], fc_bp: dict | None = None,
           pw_bp: dict | None = None) -> str:
    truths = list(rows[0]["power"]["claims"])
    head = " | ".join(f"{float(t):.2f}x" for t in truths)
    rel = lambda ps: ", ".join(f"`{p.relative_to(REPO) if p.is_relative_to(REPO) else p}`" for p in ps)  # noqa: E731
    lines = ["# The final test's interval: rules weighed on stored proof runs", "",
             f"`python scripts/weigh_rules.py`: power runs from {rel(power_paths)}; false-claims runs from "
             f"{rel(fc_paths)}. Nothing is re-run: each rule is applied to the confirmation sessions and the pooled "
             "spread every run kept. \"as recorded\" is each run's own verdict, under the rule in force when it "
             "was made (the union of the sessions' intervals for runs made at b416443 or before, per process "
             "since); \"t-only\" the t-interval of the confirmation sessions' mean; \"per process\" the same "
             "t-interval counted as one observation per fresh worker process of the confirmation (as each run "
             f"recorded it, else {EARLIER_PROCESSES}). A claim: lower bound >= {THRESHOLD}. "
             "Per-shape claims are an upper bound (any confirmed pick's; the test keeps one per shape).", "",
             f"| rule | power: claimed at true {head} | holds the truth | hi/lo (mean) | false claims: general | "
             "per shape |", "| --- | " + " | ".join("---" for _ in truths) + " | --- | --- | --- | --- |"]
    for r in rows:
        pw, fc = r["power"], r["false_claims"]
        cells = " | ".join(f"{c} of {n}" for c, n in pw["claims"].values())
        lines.append(f"| {r['rule']} | {cells} | {pw['held']} of {pw['runs']} | {pw['width']} | "
                     f"{fc['general']} of {fc['runs']} runs | {fc['shapes']} ({fc['pairs']} pick-shape pairs) |")
    if fc_bp is not None or pw_bp is not None:
        lines += render_by_process(fc_bp, pw_bp)
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--power", type=Path, nargs="+", default=POWER, help="proof results with a power part")
    ap.add_argument("--false-claims", type=Path, nargs="+", default=FALSE_CLAIMS,
                    help="proof results with a false_claims part whose runs kept their picks' sessions")
    ap.add_argument("--out", type=Path, default=None, help="write OUT.md and OUT.json")
    args = ap.parse_args()
    try:
        pw, fc = _load(args.power, "power"), _load(args.false_claims, "false_claims")
    except (OSError, ValueError) as e:      # json.JSONDecodeError is a ValueError
        print(f"error: {e}\nhint: bench_proof.py --only power / --only false_claims --out writes such files",
              file=sys.stderr)
        return 2
    try:
        rows = [{"rule": name, "power": power(pw, obs), "false_claims": false_claims(fc, obs)} for name, obs in RULES]
        fc_bp, pw_bp = by_process(fc), by_process_power(pw)
    except (KeyError, TypeError, AttributeError) as e:
        print(f"error: not the proof benchmark's results: missing or malformed {e}\nhint: give files that "
              "bench_proof.py --out wrote", file=sys.stderr)
        return 2
    text = render(rows, args.power, args.false_claims, fc_bp, pw_bp)
    print(text, end="")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".md").write_text(text)
        by_process_json = {"false_claims": fc_bp, "power": pw_bp}
        args.out.with_suffix(".json").write_text(json.dumps({"rules": rows, "by_process": by_process_json}, indent=1)
                                                 + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
