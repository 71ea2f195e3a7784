#!/usr/bin/env python3
"""Does kerntune's proof hold? Three experiments on the CPU's OpenCL device
(or any device given), written to bench/results/proof-<device>-<date>.{md,json}:

1. adversarial: one `kerntune tune` run over bench/proof/rowsum_adversarial.cl.j2,
   a space of one honest fast kernel and 22 wrong or cheating ones (out-of-bounds
   reads and writes in global and local memory, races, uninitialized reads,
   barrier divergence, conditional writes, work skipped on repeat, results cached
   by pointer, input mutation, tail bugs, precision loss, range-dependent bugs,
   unwritten and non-finite outputs). Every cheat must be rejected with a status
   it can honestly end in, the run must complete, and the honest kernel must win.
2. false claims: `kerntune optimize` on kernels no rewrite can speed up
   (bench/proof/flat/: copy, scale, axpy, xor, broadcast add, all bound by
   memory), N runs each with different seeds: no run may claim "faster", in
   general or for a single shape.
3. agreement: for every library kernel, the speedup `optimize` reports and a
   later `bench --against` of its winner must overlap within their intervals.
4. power: how small a real speedup the final test claims on this device. A lean
   copy against baselines that also read a share of a second input they do not
   need (bench/proof/power/), each pair's true speedup measured apart by several
   `bench --against` processes; N `kerntune tune` runs per pair count the claims
   of "faster", and no claim's interval may lie wholly above the true speedup.

    python scripts/bench_proof.py                          # all four, CPU
    python scripts/bench_proof.py --only adversarial       # one of them
    python scripts/bench_proof.py --runs 3 --only false_claims
    python scripts/bench_proof.py --runs 5 --only power    # K = 1, 4, 8, 16, 32, 64
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROOF = REPO / "bench" / "proof"
sys.path.insert(0, str(Path(__file__).resolve().parent))
import provenance  # noqa: E402
from kernel_library import LIBRARY  # noqa: E402
from kerntune.speedup import THRESHOLD, Interval, Spread, across_sessions  # noqa: E402

# every cheat of the adversarial template, and the statuses it may honestly end in
OOB = ("memory_error", "crash")                  # the checker's finding, or a segfault on the device itself
EXPECTED = {
    "oob_global_read": OOB, "oob_global_write": ("wrong_result",),      # the canary after the output
    "oob_local_read": OOB, "oob_local_write": OOB,
    "race_local": ("memory_error", "wrong_result"), "race_global": ("memory_error", "wrong_result"),
    "uninit_local": ("memory_error",),
    "barrier_divergence": ("memory_error", "wrong_result", "crash", "timeout"),
    "conditional_write_nan": ("wrong_result",), "skip_on_repeat": ("wrong_result",),
    "cached_by_pointer": ("wrong_result",), "input_mutation": ("wrong_result",), "tail_bug": ("wrong_result",),
    "precision_loss": ("wrong_result",), "negative_bug": ("wrong_result",), "large_bug": ("wrong_result",),
    "small_bug": ("wrong_result",), "shifted_bug": ("wrong_result",), "wide_bug": ("wrong_result",),
    "skip_last_row": ("wrong_result",),
    "half_rows": ("wrong_result",), "nan_output": ("wrong_result",), "drops_last_column": ("wrong_result",),
}
HONEST = "honest"

FLAT = ["copy", "scale", "axpy", "xor", "add_rows"]
POWER = PROOF / "power"
TRUTH_PROCESSES = 3             # `bench --against` processes that measure each pair's true speedup



def kerntune(*args: str, timeout: float = 3600) -> tuple[int, dict | None, str, float]:
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "kerntune", *args, "--json"], cwd=REPO, capture_output=True, text=True,
                       timeout=timeout)
    try:
        data = json.loads(p.stdout) if p.stdout.strip() else None
    except json.JSONDecodeError:
        data = None
    return p.returncode, data, p.stderr, time.monotonic() - t0


def fmt_iv(iv: dict | None) -> str:
    if not iv:
        return "-"
    if iv.get("method") == "identical":
        return "1.00x (=)"
    hi = "inf" if iv.get("hi") is None else f"{iv['hi']:.2f}"
    return f"{iv['ratio']:.2f}x [{iv['lo']:.2f}, {hi}]"


# --- 1. adversarial candidates -------------------------------------------------------------------
def adversarial(device: str, work: Path, opts: argparse.Namespace) -> dict:
    run = work / "adversarial"
    code, summary, stderr, secs = kerntune(
        "tune", str(PROOF / "rowsum_adversarial.cl.j2"), "--spec", str(PROOF / "rowsum.yaml"),
        "--baseline", str(PROOF / "rowsum_naive.cl"), "--device", device, "--strategy", "exhaustive",
        "--memcheck-all", "--timeout", "60", "--repeats", str(opts.repeats), "--final-repeats",
        str(opts.final_repeats), "--run-dir", str(run))
    if code != 0 or summary is None:
        return {"error": stderr.strip()[-2000:], "seconds": secs}
    db = sqlite3.connect(run / "tuning.db")
    rows = []
    checks, check_s, eval_s = 0, 0.0, 0.0
    for key, status, message, result in db.execute("select key, status, message, result from evaluations"):
        variant = key.split("=", 1)[1].strip("'")
        data = json.loads(result) if result else {}
        check = data.get("check") or {}
        eval_s += data.get("seconds") or 0.0
        if check:
            checks += 1
            check_s += check.get("seconds") or 0.0
        expected = EXPECTED.get(variant, ("ok",))
        rows.append({"variant": variant, "status": status, "expected": list(expected), "message": message,
                     "check": check.get("status"), "as_expected": status in expected})
    test = summary.get("test") or {}
    general = test.get("general") or {}
    return {"seconds": secs, "evaluations": rows, "cheats": len([r for r in rows if r["variant"] != HONEST]),
            "rejected_as_expected": sum(1 for r in rows if r["variant"] != HONEST and r["as_expected"]),
            "checks": checks, "check_seconds": check_s, "evaluation_seconds": eval_s,
            "winner": general.get("key", ""), "winner_verdict": general.get("verdict", ""),
            "winner_interval": general.get("geomean"), "improved": test.get("improved"),
            "stop_reason": summary.get("stop_reason")}


# --- 2. kernels no rewrite can speed up ---------------------------------------------------------------
def false_claims(device: str, work: Path, opts: argparse.Namespace) -> dict:
    out = []
    for name in FLAT:
        if opts.kernels and name not in opts.kernels.split(","):
            continue
        for seed in range(opts.first_seed, opts.first_seed + opts.runs):
            run = work / f"flat-{name}-{seed}"
            code, r, stderr, secs = kerntune(
                "optimize", str(PROOF / "flat" / f"{name}.cl"), "--device", device, "--seed", str(seed),
                "--rounds", str(opts.rounds), "--evaluations", str(opts.evaluations), "--repeats", str(opts.repeats),
                "--final-repeats", str(opts.final_repeats), "--run-dir", str(run))
            if code != 0 or r is None:
                out.append({"kernel": name, "seed": seed, "error": stderr.strip()[-1000:], "seconds": secs})
                print(f"false_claims {name} seed {seed}: FAILED", file=sys.stderr)
                continue
            test = r.get("test") or {}
            g = test.get("general") or {}
            shape_claims = [w["label"] for w in r.get("per_shape", []) if w.get("winner") != "original"]
            out.append({"kernel": name, "seed": seed, "improved": r["improved"], "general": g.get("key", ""),
                        "interval": g.get("geomean"), "identical": g.get("identical", False),
                        "verdict": g.get("verdict", ""), "shape_claims": shape_claims, "seconds": secs,
                        "config": g.get("config", {}), "process_spread": test.get("process_spread"),
                        "sessions": geomean_sessions(g), "shape_sessions": shape_sessions(g),
                        "session_processes": session_processes(g),
                        "picks": {c["key"]: {"sessions": geomean_sessions(c), "shape_sessions": shape_sessions(c),
                                             "session_processes": session_processes(c)}
                                  for c in test.get("candidates", []) if c.get("confirmed")}})
            print(f"false_claims {name} seed {seed}: improved={r['improved']} {fmt_iv(g.get('geomean'))} "
                  f"shape claims {shape_claims} ({secs:.0f} s)", file=sys.stderr)
            shutil.rmtree(run, ignore_errors=True)
    claims = sum(1 for x in out if x.get("improved"))
    return {"runs": out, "claims": claims, "shape_claims": sum(len(x.get("shape_claims", [])) for x in out)}


def t_only_claims(run: dict, observations: int | None = None) -> tuple[bool, list[str]]:
    """Whether a false-claims run would have claimed "faster" under the t-interval alone (docs/proof.md): the
    general pick, and the shapes on which any confirmed pick would (an upper bound on the per-shape claims:
    the test picks one candidate per shape). ``observations``: as in :func:`t_only`."""
    def clears(sessions: list[float]) -> bool:
        iv = t_only(sessions, run.get("process_spread"), observations)
        return iv is not None and iv["lo"] >= THRESHOLD

    shapes = sorted({label for pick in run.get("picks", {}).values()
                     for label, sessions in pick["shape_sessions"].items() if clears(sessions)})
    return clears(run.get("sessions", [])), shapes


# --- 3. optimize's claim against a later bench --against -----------------------------------------------
def overlap(a: dict | None, b: dict | None) -> bool | None:
    if not a or not b:
        return None
    hi_a = float("inf") if a.get("hi") is None else a["hi"]
    hi_b = float("inf") if b.get("hi") is None else b["hi"]
    return a["lo"] <= hi_b and b["lo"] <= hi_a


def agreement(device: str, work: Path, opts: argparse.Namespace) -> dict:
    out = []
    for name, kernel, spec, cpu_set in LIBRARY:
        if opts.kernels and not any(k in name for k in opts.kernels.split(",")):
            continue
        run = work / ("agree-" + kernel.replace("/", "_"))
        ext = ".cl"
        shape_set = ["--shape-set", cpu_set] if cpu_set else []
        code, r, stderr, secs = kerntune(
            "optimize", kernel + ext, "--spec", spec, "--device", device, "--rounds", str(opts.rounds),
            "--evaluations", str(opts.evaluations), "--repeats", str(opts.repeats), "--final-repeats",
            str(opts.final_repeats), "--run-dir", str(run), *shape_set)
        if code != 0 or r is None:
            out.append({"name": name, "error": stderr.strip()[-1000:]})
            print(f"agreement {name}: optimize FAILED", file=sys.stderr)
            continue
        original = run / "original" / Path(kernel + ext).name
        best = run / r["files"]["best"]
        code_b, b, stderr_b, secs_b = kerntune(
            "bench", str(original), "--against", str(best), "--spec", str(run / "spec.yaml"), "--device", device,
            "--repeats", str(opts.final_repeats), *shape_set)
        if code_b != 0 or b is None:
            out.append({"name": name, "error": "bench: " + stderr_b.strip()[-1000:]})
            continue
        claimed = (r.get("general_interval") if r["improved"] else {"ratio": 1.0, "lo": 1.0, "hi": 1.0,
                                                                    "method": "identical"})
        measured = b.get("geomean")
        ok = overlap(claimed, measured)
        out.append({"name": name, "improved": r["improved"], "optimize": claimed, "bench": measured,
                    "bench_verdict": b.get("verdict"), "overlap": ok, "seconds": secs + secs_b})
        print(f"agreement {name}: optimize {fmt_iv(claimed)}, bench {fmt_iv(measured)}: overlap {ok}",
              file=sys.stderr)
    return {"kernels": out, "agree": sum(1 for x in out if x.get("overlap")),
            "compared": sum(1 for x in out if x.get("overlap") is not None)}


# --- 4. how small a real speedup is claimed ------------------------------------------------------------
def ballast_kernel(work: Path, k: int) -> Path:
    """The power template rendered with BALLAST=k as a plain kernel (k=0: the lean copy)."""
    import jinja2

    path = work / f"copy_ballast_{k}.cl"
    text = (POWER / "copy_ballast.cl.j2").read_text()
    path.write_text(jinja2.Template(text).render(BALLAST=k, kernel_name="copy_ballast"))
    return path


def geomean_sessions(pick: dict) -> list[float]:
    """The geomean estimate of each session (screening first) of one of a final test's picks."""
    return [round(iv["ratio"], 4) for iv in pick.get("session_geomeans", [])]


def session_processes(pick: dict) -> list[int]:
    """The worker process each of a pick's sessions ran in (0: screening; [] in runs before it was recorded)."""
    return list(pick.get("session_processes", []))


def shape_sessions(pick: dict) -> dict[str, list[float]]:
    """Per shape, the estimate of each session (screening first) of one of a final test's picks."""
    return {label: [round(iv["ratio"], 4) for iv in ivs] for label, ivs in pick.get("session_intervals", {}).items()}


def t_only(sessions: list[float], spread: dict | None, observations: int | None = None) -> dict | None:
    """The t-interval of the confirmation sessions' mean (the screening session, sessions[0], left out) with
    the pooled process-to-process spread, each session one observation ("t-only"): kept beside each run to
    weigh that rule (docs/proof.md). ``observations``: count the mean as of at most this many independent
    observations rather than one per session; with 2, the confirmation's fresh worker processes, it is the
    final test's own interval since 542bd9c (scripts/weigh_rules.py)."""
    used = sessions[1:]
    if not used or not spread or not spread.get("df"):
        return None
    # the final test's own arithmetic: with a process count, across_sessions holds no session's interval
    n = min(len(used), observations or len(used))
    iv = across_sessions([Interval(ratio=x, lo=x, hi=x, method="point") for x in sessions],
                         Spread(sd=spread["sd"], df=spread["df"]), estimate_from=1, processes=n)
    return {"ratio": iv.ratio, "lo": iv.lo, "hi": iv.hi,
            "method": f"t-interval, {len(used)} sessions" + (f" as {n} observations" if n < len(used) else "")}


def power(device: str, work: Path, opts: argparse.Namespace) -> dict:
    spec = str(POWER / "copy_ballast.yaml")
    lean = ballast_kernel(work, 0)
    out = []
    for k in opts.ballast:
        baseline = ballast_kernel(work, k)
        truth = []
        for j in range(TRUTH_PROCESSES):
            code, b, stderr, _ = kerntune("bench", str(baseline), "--against", str(lean), "--spec", spec, "--device",
                                          device, "--repeats", str(5 * opts.final_repeats), "--no-memcheck",
                                          "--seed", str(j + 1))
            if code == 0 and b is not None and b.get("geomean"):
                truth.append(round(b["geomean"]["ratio"], 4))
        row: dict = {"ballast": k, "truth_sessions": truth,
                     "truth": statistics.median(truth) if truth else None, "runs": []}
        for seed in range(opts.first_seed, opts.first_seed + opts.runs):
            run = work / f"power-{k}-{seed}"
            code, r, stderr, secs = kerntune(
                "tune", str(POWER / "copy_ballast.cl.j2"), "--spec", spec, "--baseline", str(baseline), "--device",
                device, "--seed", str(seed), "--repeats", str(opts.repeats), "--final-repeats",
                str(opts.final_repeats), "--run-dir", str(run))
            g = ((r or {}).get("test") or {}).get("general") or {}
            if code != 0 or not g:
                row["runs"].append({"seed": seed, "error": stderr.strip()[-1000:], "seconds": secs})
                continue
            iv = g.get("geomean") or {}
            hi = math.inf if iv.get("hi") is None else iv["hi"]
            sessions = geomean_sessions(g)
            spread = r["test"].get("process_spread")
            t_iv = t_only(sessions, spread)
            row["runs"].append({"seed": seed, "verdict": g.get("verdict", ""), "interval": iv, "seconds": secs,
                                "covers": bool(truth) and iv.get("lo", math.inf) <= row["truth"] <= hi,
                                "above_truth": bool(truth) and iv.get("lo", 0.0) > max(truth),
                                "sessions": sessions, "shape_sessions": shape_sessions(g), "process_spread": spread,
                                "session_processes": session_processes(g),
                                "t_only": t_iv,
                                "t_only_covers": bool(truth) and t_iv is not None
                                and t_iv["lo"] <= row["truth"] <= t_iv["hi"]})
            shutil.rmtree(run, ignore_errors=True)
        row["claims"] = sum(1 for x in row["runs"] if x.get("verdict") == "faster")
        row["t_only_claims"] = sum(1 for x in row["runs"] if (x.get("t_only") or {}).get("lo", 0.0) >= THRESHOLD)
        print(f"power ballast {k}: true {row['truth']} {truth}, {row['claims']} of {len(row['runs'])} claimed: "
              + ", ".join(fmt_iv(x.get("interval")) for x in row["runs"]), file=sys.stderr)
        out.append(row)
    runs = [x for row in out for x in row["runs"] if "error" not in x]
    return {"pairs": out, "claims": sum(row["claims"] for row in out), "runs": len(runs),
            "covered": sum(1 for x in runs if x["covers"]),
            "over_claims": sum(1 for x in runs if x["verdict"] == "faster" and x["above_truth"]),
            "t_only_claims": sum(row.get("t_only_claims", 0) for row in out),
            "t_only_covered": sum(1 for x in runs if x.get("t_only_covers"))}


def merge_rows(part: str, old: dict, new: dict) -> dict:
    """The rows of an earlier call for the kernels this call did not redo, then this call's, with the
    totals recomputed; each row says which call produced it."""
    rows, key = ("runs", "kernel") if part == "false_claims" else ("kernels", "name")
    redone = {r[key] for r in new[rows]}
    for r in new[rows]:
        r.setdefault("commit", new["commit"])
    kept = [{"commit": old.get("commit"), **r} for r in old[rows] if r[key] not in redone]
    merged = {**new, rows: kept + new[rows]}
    if part == "false_claims":
        merged["claims"] = sum(1 for x in merged["runs"] if x.get("improved"))
        merged["shape_claims"] = sum(len(x.get("shape_claims", [])) for x in merged["runs"])
    else:
        merged["agree"] = sum(1 for x in merged["kernels"] if x.get("overlap"))
        merged["compared"] = sum(1 for x in merged["kernels"] if x.get("overlap") is not None)
    merged["argv"] = calls_of(old.get("argv")) + [new["argv"]]
    return merged


def calls_of(argv) -> list[list[str]]:
    """The argument lists of the calls behind a part (one call's list, or several, nested or not)."""
    if not argv:
        return []
    if all(isinstance(a, str) for a in argv):
        return [list(argv)]
    return [c for a in argv for c in calls_of(a)]


# --- the report --------------------------------------------------------------------------------------------
def ran(part: dict) -> list[str]:
    """How a part was produced (by one call, or by two whose rows were merged)."""
    calls = calls_of(part.get("argv"))
    if not calls:
        return []
    return ["Run as " + ", then ".join(f"`python scripts/bench_proof.py {' '.join(a)}`" for a in calls)
            + f" (the last at `{part.get('commit')}`; each row's commit is in the JSON).", ""]


def markdown(res: dict) -> str:
    lines = [f"# Proof benchmark ({res['device']}, {res['date']})", "",
             f"`python scripts/bench_proof.py {' '.join(res['argv'])}` on {res['host']}; kerntune at "
             f"`{res['commit']}`.", ""]
    adv = res.get("adversarial")
    if adv:
        lines += ["## 1. Adversarial candidates (one `kerntune tune` run)", "", *ran(adv)]
        if "error" in adv:
            lines += [f"The run failed: {adv['error']}", ""]
        else:
            lines += [f"{adv['rejected_as_expected']} of {adv['cheats']} wrong or cheating candidates rejected with an "
                      f"expected status; the run completed ({adv['stop_reason']}, {adv['seconds']:.0f} s); winner "
                      f"`{adv['winner']}`, {fmt_iv(adv['winner_interval'])} over the original "
                      f"({adv['winner_verdict']}). The memory checker ran {adv['checks']} times (`--memcheck-all`: "
                      f"every candidate that verified) in {adv['check_seconds']:.0f} s, "
                      f"{adv['check_seconds'] / max(adv['checks'], 1):.1f} s each, beside "
                      f"{adv['evaluation_seconds']:.0f} s of verification and timing for all "
                      f"{len(adv['evaluations'])} candidates.", "",
                      "| variant | status | expected | caught by |", "| --- | --- | --- | --- |"]
            for r in adv["evaluations"]:
                msg = r["message"].replace("|", "/")[:110]
                lines.append(f"| {r['variant']} | {r['status']}{'' if r['as_expected'] else ' **(unexpected)**'} | "
                             f"{' or '.join(r['expected'])} | {msg} |")
            lines.append("")
    fc = res.get("false_claims")
    if fc:
        lines += ["## 2. False claims (kernels no rewrite can speed up)", "", *ran(fc),
                  f"{fc['claims']} claims of \"faster\" (general configuration) and {fc['shape_claims']} per-shape "
                  f"claims in {len(fc['runs'])} `optimize` runs.", ""]
        probed = [r for r in fc["runs"] if "picks" in r]
        if probed:
            t = [t_only_claims(r) for r in probed]
            lines += [f"Under the t-interval alone (part 4 and docs/proof.md), the {len(probed)} runs that kept every "
                      f"confirmed pick's sessions would claim {sum(g for g, _ in t)} general and at most "
                      f"{sum(len(sh) for _, sh in t)} per-shape speedups.", ""]
        lines += ["| kernel | seed | improved | best candidate (95% CI) | verdict | shape claims | s |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for r in fc["runs"]:
            if "error" in r:
                lines.append(f"| {r['kernel']} | {r['seed']} | error | {r['error'][:80]} | | | |")
                continue
            lines.append(f"| {r['kernel']} | {r['seed']} | {r['improved']} | {fmt_iv(r['interval'])} | "
                         f"{r['verdict']} | {', '.join(r['shape_claims']) or '-'} | {r['seconds']:.0f} |")
        lines.append("")
    ag = res.get("agreement")
    if ag:
        lines += ["## 3. Agreement: `optimize`'s claim against a later `bench --against` of its winner", "", *ran(ag),
                  f"{ag['agree']} of {ag['compared']} kernels: the two intervals overlap.", "",
                  "| kernel | optimize (95% CI) | bench --against (95% CI) | overlap |", "| --- | --- | --- | --- |"]
        for r in ag["kernels"]:
            if "error" in r:
                lines.append(f"| {r['name']} | error: {r['error'][:80]} | | |")
                continue
            lines.append(f"| {r['name']} | {fmt_iv(r['optimize'])} | {fmt_iv(r['bench'])} | {r['overlap']} |")
        lines.append("")
    pw = res.get("power")
    if pw:
        lines += ["## 4. Power: how small a real speedup is claimed", "", *ran(pw),
                  "The lean copy against baselines that also read, in one work-group of every K, a second input "
                  "they do not need (`bench/proof/power/`). True speedup: the median geomean of "
                  f"{TRUTH_PROCESSES} `kerntune bench --against` processes (all of them in brackets). Each run is "
                  "one `kerntune tune`, whose final test gives the interval and the verdict (\"faster\" when the "
                  f"interval's lower end clears {THRESHOLD}).", "",
                  f"{pw['claims']} claims of \"faster\" in {pw['runs']} runs; {pw['covered']} of the {pw['runs']} "
                  f"intervals contain the true speedup; {pw['over_claims']} claims lie wholly above it.", ""]
        if "t_only_claims" in pw and any("t_only" in x for row in pw["pairs"] for x in row["runs"]):
            lines += ["t-only: the t-interval of the confirmation sessions' mean with the pooled "
                      "process-to-process spread, each session counted as an independent observation (the final "
                      f"test counts one per worker process). It would claim {pw['t_only_claims']} of {pw['runs']}, and "
                      f"{pw['t_only_covered']} of its {pw['runs']} intervals contain the true speedup.", ""]
        lines += ["| K | true speedup | claimed | the runs' intervals (95%) | t-only claimed | t-only intervals |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for row in pw["pairs"]:
            truth = ("-" if row["truth"] is None else f"{row['truth']:.3f}x ("
                     + ", ".join(f"{t:.3f}" for t in row["truth_sessions"]) + ")")
            ivs = ", ".join("error" if "error" in x else fmt_iv(x["interval"]) for x in row["runs"])
            t_ivs = ", ".join(fmt_iv(x.get("t_only")) for x in row["runs"])
            t_claims = f"{row['t_only_claims']} of {len(row['runs'])}" if "t_only_claims" in row else "-"
            lines.append(f"| {row['ballast']} | {truth} | {row['claims']} of {len(row['runs'])} | {ivs} | "
                         f"{t_claims} | {t_ivs} |")
        lines.append("")
    return "\n".join(lines)


PARTS = {"adversarial": adversarial, "false_claims": false_claims, "agreement": agreement, "power": power}


def seed(text: str) -> int:
    """--first-seed: a non-negative integer (kerntune's --seed)."""
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a non-negative integer, e.g. 100")
    return n


def ballast_list(text: str) -> list[int]:
    """--ballast: comma-separated positive integers."""
    try:
        ks = [int(x) for x in text.split(",")]
    except ValueError:
        ks = []
    if not ks or any(k < 1 for k in ks):
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated positive integers, e.g. 1,4,16")
    return ks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--only", default="", help=f"comma-separated: {', '.join(PARTS)}")
    ap.add_argument("--kernels", default="", help="comma-separated kernel names to keep (false_claims, agreement)")
    ap.add_argument("--runs", type=int, default=10,
                    help="optimize runs per kernel in false_claims, tune runs per pair in power")
    ap.add_argument("--first-seed", type=seed, default=0,
                    help="the runs' seeds are FIRST_SEED .. FIRST_SEED+RUNS-1: a new run on seeds no stored run used")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--evaluations", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--final-repeats", type=int, default=60)
    ap.add_argument("--ballast", default="1,4,8,16,32,64", type=ballast_list,
                    help="power: the baselines' K (one work-group in K reads the unneeded input)")
    ap.add_argument("--out", type=Path, default=None)
    opts = ap.parse_args()
    which = opts.only.split(",") if opts.only else list(PARTS)
    unknown = [w for w in which if w not in PARTS]
    if unknown:
        ap.error(f"--only: no part {', '.join(unknown)} (the parts: {', '.join(PARTS)})")
    stamp = datetime.date.today().isoformat()
    name = "cpu" if opts.device == "cpu" or opts.device.startswith("opencl") else "gpu"
    out = opts.out or REPO / "bench" / "results" / f"proof-{name}-{stamp}"
    res: dict = {"device": opts.device, "date": stamp, "argv": sys.argv[1:], "commit": provenance.commit(),
                 "host": f"{platform.processor() or platform.machine()}, {platform.python_version()}"}
    prior = out.with_suffix(".json")
    earlier = json.loads(prior.read_text()) if prior.exists() else {}
    # keep the experiments of an earlier call that this one does not redo
    res.update({k: v for k, v in earlier.items() if k in PARTS and k not in which})
    with tempfile.TemporaryDirectory(prefix="kerntune-proof-") as tmp:
        work = Path(tmp)
        for part in which:
            t0 = time.monotonic()
            res[part] = PARTS[part](opts.device, work, opts)
            res[part]["wall_s"] = time.monotonic() - t0
            res[part]["commit"], res[part]["argv"] = res["commit"], sys.argv[1:]    # each part says how it ran
            if opts.kernels and part in earlier and part in ("false_claims", "agreement"):
                # some kernels redone: the others' rows stay, with how they ran
                res[part] = merge_rows(part, earlier[part], res[part])
            prior.write_text(json.dumps(res, indent=2))
    out.with_suffix(".md").write_text(markdown(res))
    print(out.with_suffix(".md").read_text())
    adv, fc, ag = res.get("adversarial") or {}, res.get("false_claims") or {}, res.get("agreement") or {}
    pw = res.get("power") or {}
    bad = (adv and (adv.get("rejected_as_expected") != adv.get("cheats") or adv.get("winner") != "VARIANT='honest'")) \
        or (fc and (fc.get("claims") or fc.get("shape_claims"))) or (ag and ag.get("agree") != ag.get("compared")) \
        or (pw and pw.get("over_claims"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
