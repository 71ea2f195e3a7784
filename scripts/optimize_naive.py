#!/usr/bin/env python3
"""Run `kerntune optimize` with its default settings (the rule catalog, no LLM) on every naive
kernel of kernels/naive (row-wise norms, softmax-like rows, gated activations, GEMV and others,
written for this benchmark; the library ships none of them) and tabulate what the final test
confirmed: per kernel, the general configuration's speedup over the naive kernel with its 95%
confidence interval, the naive and the optimized kernel's % of the copy bandwidth on the largest
shape (both re-timed in the tester's session), the rules the winning kernel uses, and wall time.

    python scripts/optimize_naive.py                        # every kernel, the CPU's OpenCL device
    python scripts/optimize_naive.py --only softmax,gemv    # some of them
    python scripts/optimize_naive.py --corpus kernels/heldout  # bench/results/heldout-cpu-DATE
                                                            # another corpus of the same layout
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import provenance  # noqa: E402
from kerntune.export.runs import Run  # noqa: E402
from kerntune.tuner.space import Space  # noqa: E402

NAIVE = REPO / "kernels" / "naive"
TARGET_MEDIAN, TARGET_EACH, TARGET_PCT, TARGET_SECONDS = 1.5, 1.1, 50.0, 180.0


def rules_used(run: Run, general_round: int, general_config: dict) -> list[str]:
    """The rules whose parameters the winning kernel has at a value other than the first (the
    original's), in every round it descends from: the rewrites it actually carries."""
    used = []
    for m in run.manifest.lineage(general_round):
        rec = run.round(m)
        if rec is None:
            continue
        config = general_config if m == general_round else rec.best_config
        base = Space.of(run.template(m)).baseline()
        changed = {k for k, v in config.items() if k in base and base[k] != v}
        for t in rec.transformations:
            if changed & set(t.params) and t.rule not in used:
                used.append(t.rule)
    return used


def largest(timings: list[dict]) -> dict | None:
    return max(timings, key=lambda t: t.get("bytes_moved") or 0) if timings else None


def row_of(name: str, kernel: str, run_dir: Path, seconds: float, load: tuple[float, float]) -> dict:
    r = json.loads((run_dir / "results.json").read_text())
    test = json.loads((run_dir / "test.json").read_text()) if (run_dir / "test.json").exists() else {}
    run = Run(run_dir)
    # the general configuration's interval; when it did not clear the threshold, the best candidate's
    gi = r.get("general_interval") or ((test.get("general") or {}).get("geomean")) or {}
    base_t = largest(test.get("baseline") or [])
    gen_t = largest(((test.get("general") or {}).get("timings")) or [])
    used = rules_used(run, r["general_round"], r["general_config"]) if r.get("improved") and r.get("general_round") \
        else []
    return {
        "name": name, "kernel": kernel, "improved": r["improved"],
        "speedup": r.get("general_speedup") or 1.0, "lo": gi.get("lo"), "hi": gi.get("hi"),
        "best_candidate": None if r["improved"] else gi.get("ratio"),
        "general_round": r.get("general_round"), "general_key": r.get("general_key"),
        "largest_shape": base_t["label"] if base_t else None,
        "naive_pct_of_copy": base_t.get("pct_of_copy") if base_t else None,
        "best_pct_of_copy": gen_t.get("pct_of_copy") if gen_t and r["improved"] else
        (base_t.get("pct_of_copy") if base_t else None),
        "rules_used": used,
        "rules_applied": sorted({t["rule"] for x in r["rounds"] for t in x["transformations"]}),
        "rounds": [{"round": x["round"], "space": x["space_size"], "measured": x["measured"],
                    "seconds": x.get("seconds"), "best_speedup": x.get("best_speedup"),
                    "rules": [t["rule"] for t in x["transformations"]]} for x in r["rounds"]],
        "per_shape": [{"label": w["label"], "speedup": w["speedup"], "interval": w.get("interval")}
                      for w in r["per_shape"]],
        "stop": r["stop_reason"], "notes": r.get("notes", []), "seconds": seconds,
        "load_before": load[0], "load_after": load[1],
        "run_dir": str(run_dir.relative_to(REPO)) if REPO in run_dir.parents else str(run_dir),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--corpus", type=Path, default=NAIVE,
                    help="folder of kernel folders NAME/NAME.cl + NAME/spec.yaml (default kernels/naive; "
                         "kernels/heldout is the corpus the rules were not written against)")
    ap.add_argument("--only", default="", help="comma-separated kernel folder names (substrings) to run")
    ap.add_argument("--out", type=Path, default=None, help="results path without extension "
                                                            "(default bench/results/CORPUS-cpu-DATE: naive-cpu-DATE)")
    ap.add_argument("--keep-databases", action="store_true",
                    help="keep each round's tuning.db in the run folders (left out by default for size)")
    args = ap.parse_args()
    corpus = args.corpus.resolve()
    if not corpus.is_dir():
        ap.error(f"--corpus {args.corpus}: not a folder")
    stamp = datetime.date.today().isoformat()
    out = args.out or REPO / "bench" / "results" / f"{corpus.name}-cpu-{stamp}"
    runs = out.with_name(out.name + "-runs")
    runs.mkdir(parents=True, exist_ok=True)
    rows = []
    ran = False                         # did this call run optimize (else the runs are an earlier call's)
    kernels = sorted(p.name for p in corpus.iterdir() if (p / "spec.yaml").exists() and (p / f"{p.name}.cl").exists())
    if not kernels:
        ap.error(f"--corpus {args.corpus}: no NAME/NAME.cl with NAME/spec.yaml in it")
    for name in kernels:
        if args.only and not any(o in name for o in args.only.split(",")):
            continue
        run = runs / name
        if run.exists() and not (run / "results.json").exists():
            shutil.rmtree(run)          # an unfinished run from an earlier attempt: start over, timed
        if not (run / "results.json").exists():
            cmd = [sys.executable, "-m", "kerntune", "optimize", str(corpus / name / f"{name}.cl"),
                   "--device", args.device, "--run-dir", str(run), "--json"]
            load0 = os.getloadavg()[0]
            ran = True
            t0 = time.monotonic()
            p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
            secs = time.monotonic() - t0
            (run.parent / f"{name}.stderr.txt").write_text(p.stderr[-20000:])
            if p.returncode != 0:
                # with --json the error is a JSON object on stdout, not a line on stderr
                (run.parent / f"{name}.stdout.txt").write_text(p.stdout[-20000:])
                text = (p.stderr.strip() or p.stdout.strip())
                why = text.splitlines()[-1] if text else ""
                try:
                    err = json.loads(p.stdout).get("error") or {}
                    why = f"{err.get('code', '')}: {err.get('message', '')}"
                except (ValueError, AttributeError):
                    pass
                print(f"{name}: FAILED (exit {p.returncode}: {why})", file=sys.stderr)
                rows.append({"name": name, "error": why[-500:] or text[-500:], "seconds": secs})
                continue
            (run / "timing.json").write_text(json.dumps({"seconds": secs, "load_before": load0,
                                                         "load_after": os.getloadavg()[0],
                                                         "cpus": os.cpu_count()}) + "\n")
        timing = json.loads((run / "timing.json").read_text())
        if not args.keep_databases:
            for db in run.glob("rounds/*/tuning.db*"):
                db.unlink()
        path = corpus / name / f"{name}.cl"
        row = row_of(name, str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path), run,
                     timing["seconds"], (timing["load_before"], timing["load_after"]))
        rows.append(row)
        print(f"{name}: {row['speedup']:.2f}x{'' if row['improved'] else ' (not faster)'} "
              f"[{row['lo'] or 0:.2f}, {_hi(row['hi'])}] in "
              f"{row['seconds']:.0f} s; uses {', '.join(row['rules_used']) or '-'}", file=sys.stderr)
    summary = summarize(rows)
    earlier = json.loads(out.with_suffix(".json").read_text()) if out.with_suffix(".json").exists() else {}
    commit = provenance.commit()
    meta = {"corpus": str(corpus.relative_to(REPO)) if corpus.is_relative_to(REPO) else str(corpus),
            "device": args.device, "device_name": _device_name(runs), "date": stamp, "cpus": os.cpu_count(),
            "command": " ".join(sys.argv),
            "settings": "kerntune optimize defaults (3 rounds, 120 evaluations, 20 warm-up runs and 20 to 100 "
                        "timed runs per shape while tuning (until the median is known to +-2%, or, since 378bd5f, is "
                        "known to be over 1.05x the best so far), 200 in the final "
                        "test, memory checker on would-be bests)",
            # tabulating earlier runs again keeps the commit they ran at
            "commit": commit if ran or "commit" not in earlier else earlier["commit"]}
    out.with_suffix(".json").write_text(json.dumps({**meta, "summary": summary, "rows": rows}, indent=1,
                                                   default=str) + "\n")
    out.with_suffix(".md").write_text(render(rows, summary, meta))
    print(f"wrote {out.with_suffix('.md')}", file=sys.stderr)
    return 0


def _device_name(runs: Path) -> str:
    """The device the runs measured on, as its runtime names it (CPU model and driver)."""
    for run_json in sorted(runs.glob("*/run.json")):
        dev = json.loads(run_json.read_text()).get("device") or {}
        if dev.get("name"):
            return f"{dev['name']}, {dev.get('driver', '')}".rstrip(", ")
    return ""


def summarize(rows: list[dict]) -> dict:
    ok = [r for r in rows if "error" not in r]
    speedups = [r["speedup"] for r in ok]
    far = [r for r in ok if (r["naive_pct_of_copy"] or 0) < TARGET_PCT]
    return {
        "kernels": len(rows), "failed": len(rows) - len(ok),
        "median_speedup": statistics.median(speedups) if speedups else None,
        "geomean_speedup": math.exp(statistics.fmean(math.log(s) for s in speedups)) if speedups else None,
        "below_half_copy": len(far),
        "below_half_copy_at_least_1.1x": sum(1 for r in far if r["speedup"] >= TARGET_EACH),
        "below_half_copy_lower_bound_at_least_1.1x": sum(1 for r in far if (r["lo"] or 0) >= TARGET_EACH),
        "median_seconds": statistics.median(r["seconds"] for r in ok) if ok else None,
        "max_seconds": max((r["seconds"] for r in ok), default=None),
        "within_3_minutes": sum(1 for r in ok if r["seconds"] <= TARGET_SECONDS),
        "mean_load": statistics.fmean((r["load_before"] + r["load_after"]) / 2 for r in ok) if ok else None,
    }


def _hi(v) -> str:
    return "inf" if v is None else f"{v:.2f}"


def _pct(v) -> str:
    return f"{v:.0f}%" if v is not None else "-"


def render(rows: list[dict], s: dict, meta: dict) -> str:
    lines = [f"# kerntune optimize on naive kernels of common families (CPU): `{meta.get('corpus', 'kernels/naive')}`",
             "",
             f"Device `{meta['device']}`"
             + (f" ({meta['device_name']}; {meta['cpus']} cores, shared)" if meta.get("device_name")
                else f" ({meta['cpus']} cores, shared)")
             + f"; {meta['settings']}. Speedups are the "
             "tester's: the general configuration re-verified with fresh inputs on every shape, the held-out "
             "shapes and two fresh shapes, and re-timed interleaved with the naive kernel; the interval is the "
             "95% confidence interval of the geometric-mean ratio (faster only when its lower bound is at least "
             "1.02). % of copy: the largest shape's achieved bandwidth over a device copy measured in the same "
             "session. Rules used: those whose parameters the winning kernel has at a value other than the "
             "original's, in every round it descends from.", "",
             "| kernel | general speedup [95% CI] | % of copy, naive -> best (largest shape) | rules used | "
             "wall time | stop |", "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['name']} | failed: {r['error'].splitlines()[-1] if r['error'] else ''} | - | - | "
                         f"{r['seconds']:.0f} s | - |")
            continue
        ci = f" [{r['lo']:.2f}, {_hi(r['hi'])}]" if r["lo"] is not None else ""
        shown = (f"{r['speedup']:.2f}x{ci}" if r["improved"] else
                 f"1.00x (not faster: best candidate {r['best_candidate']:.2f}x{ci})" if r.get("best_candidate")
                 else "1.00x (no candidate)")
        lines.append(f"| {r['name']} | {shown} | "
                     f"{_pct(r['naive_pct_of_copy'])} -> {_pct(r['best_pct_of_copy'])} ({r['largest_shape']}) | "
                     f"{', '.join(r['rules_used']) or '-'} | {r['seconds']:.0f} s | {r['stop']} |")
    if s.get("median_speedup") is not None:
        lines += ["", f"Median general speedup {s['median_speedup']:.2f}x (geometric mean {s['geomean_speedup']:.2f}x) "
                      f"over {s['kernels'] - s['failed']} kernels; of the {s['below_half_copy']} kernels whose naive "
                      f"version runs below {TARGET_PCT:.0f}% of the copy bandwidth on its largest shape, "
                      f"{s['below_half_copy_at_least_1.1x']} are at least {TARGET_EACH}x faster "
                      f"({s['below_half_copy_lower_bound_at_least_1.1x']} with the interval's lower bound at least "
                      f"{TARGET_EACH}x). Wall time per kernel: median {s['median_seconds']:.0f} s, at most "
                      f"{s['max_seconds']:.0f} s ({s['within_3_minutes']} of {s['kernels'] - s['failed']} within "
                      f"3 minutes), with a mean load average of {s['mean_load']:.1f} on {meta['cpus']} cores."]
    lines += ["", f"Command: `{meta['command']}` (at commit {meta.get('commit', '?')})", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
