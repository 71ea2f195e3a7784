#!/usr/bin/env python3
"""Weigh rules for the final test's interval on the proof benchmark's stored runs, re-running nothing.

"as recorded" is each run's own verdict, under the rule in force when it was made: up to b416443 the
interval that holds every confirmation session's own interval and the t-interval of the sessions' mean
(the "union"), since then the per-process rule below (kerntune.speedup.across_sessions with the pooled
spread and the number of processes). From the sessions and the pooled spread each stored run kept, this
recomputes what two rules would have said:

- "t-only": the t-interval of the confirmation sessions' mean, each session (block) one observation;
- "per process": the same t-interval counted as one observation per fresh worker process of the
  confirmation (kerntune.agents.tester.CONFIRM_PROCESSES, 2), since blocks in one process share the
  state the machine was in for those seconds (bench/proof/flat/README.md) and are not independent.

Per rule: on the power part's runs (each pair's true speedup measured apart), the claims per true
speedup, how many intervals hold the truth and the mean ratio of upper to lower bound; on every
false-claims run that kept its confirmed picks' sessions, the general claims and the shapes claimed
(an upper bound per shape: the test keeps one pick per shape).

    python scripts/weigh_rules.py --out bench/results/rules-cpu-2026-11-29
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench_proof import t_only, t_only_claims  # noqa: E402
from kerntune.agents.tester import CONFIRM_PROCESSES  # noqa: E402
from kerntune.speedup import THRESHOLD  # noqa: E402

RESULTS = REPO / "bench" / "results"
POWER = [RESULTS / "proof-cpu-2026-11-28.json"]
FALSE_CLAIMS = [RESULTS / "proof-cpu-2026-11-29-tonly.json", RESULTS / "proof-cpu-2026-11-28-tonly-probe.json"]
RULES = (("as recorded", None), ("t-only", 0), ("per process", CONFIRM_PROCESSES))


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
    ``observations`` None: the rule in force, as recorded; 0: t-only; N: the t-interval as N observations."""
    claims: dict[float, list[int]] = {}
    held, widths = 0, []
    for part in parts:
        for pair in part["pairs"]:
            truth = pair.get("truth")
            for run in pair["runs"]:
                if "error" in run or truth is None or "sessions" not in run:
                    continue
                if observations is None:
                    lo, hi = run["interval"]["lo"], run["interval"].get("hi") or float("inf")
                else:
                    iv = t_only(run["sessions"], run.get("process_spread"), observations)
                    if iv is None:
                        continue
                    lo, hi = iv["lo"], iv["hi"]
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
                g, s = t_only_claims(run, observations)
                general += g
                shapes += len(s)
    return {"runs": runs, "pairs": pairs, "general": general, "shapes": shapes}


def render(rows: list[dict], power_paths: list[Path], fc_paths: list[Path]) -> str:
    truths = list(rows[0]["power"]["claims"])
    head = " | ".join(f"{float(t):.2f}x" for t in truths)
    rel = lambda ps: ", ".join(f"`{p.relative_to(REPO) if p.is_relative_to(REPO) else p}`" for p in ps)  # noqa: E731
    lines = ["# The final test's interval: rules weighed on stored proof runs", "",
             f"`python scripts/weigh_rules.py`: power runs from {rel(power_paths)}; false-claims runs from "
             f"{rel(fc_paths)}. Nothing is re-run: each rule is applied to the confirmation sessions and the pooled "
             "spread every run kept. \"as recorded\" is each run's own verdict, under the rule in force when it "
             "was made (the union of the sessions' intervals for runs made at b416443 or before, per process "
             "since); \"t-only\" the t-interval of the confirmation sessions' mean; \"per process\" the same "
             "t-interval counted as "
             f"{CONFIRM_PROCESSES} observations, one per fresh worker process. A claim: lower bound >= {THRESHOLD}. "
             "Per-shape claims are an upper bound (any confirmed pick's; the test keeps one per shape).", "",
             f"| rule | power: claimed at true {head} | holds the truth | hi/lo (mean) | false claims: general | "
             "per shape |", "| --- | " + " | ".join("---" for _ in truths) + " | --- | --- | --- | --- |"]
    for r in rows:
        pw, fc = r["power"], r["false_claims"]
        cells = " | ".join(f"{c} of {n}" for c, n in pw["claims"].values())
        lines.append(f"| {r['rule']} | {cells} | {pw['held']} of {pw['runs']} | {pw['width']} | "
                     f"{fc['general']} of {fc['runs']} runs | {fc['shapes']} ({fc['pairs']} pick-shape pairs) |")
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
    except (KeyError, TypeError, AttributeError) as e:
        print(f"error: not the proof benchmark's results: missing or malformed {e}\nhint: give files that "
              "bench_proof.py --out wrote", file=sys.stderr)
        return 2
    text = render(rows, args.power, args.false_claims)
    print(text, end="")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".md").write_text(text)
        args.out.with_suffix(".json").write_text(json.dumps({"rules": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
