#!/usr/bin/env python3
"""Run `kerntune optimize` with the built-in rule catalog on every baseline of
the kernel library and write one table of what the final test confirmed:
per kernel, the geometric-mean speedup of the general configuration over the
original (re-verified on fresh shapes and re-timed beside it), and per shape.

    python scripts/optimize_library.py                       # GPU if present, else the CPU (OpenCL)
    python scripts/optimize_library.py --device cpu --evaluations 40 --rounds 2
    python scripts/optimize_library.py --device 0 --only silu_and_mul,fused_add,merge_attn --shape-set gpu_short \
        --rounds 1 --evaluations 12 --time-limit 150       # the GPU evidence run's (scripts/gpu_evidence.sh)
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kerntune.engine.devices import all_devices, resolve  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_library import LIBRARY  # noqa: E402
from provenance import commit  # noqa: E402



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default=None)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--evaluations", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--final-repeats", type=int, default=60)
    ap.add_argument("--only", default="", help="comma-separated names (substrings) to run")
    ap.add_argument("--time-limit", default=None, help="each kernel's wall-time budget (kerntune optimize --time-limit)")
    ap.add_argument("--shape-set", default=None,
                    help="the specs' shape set to tune and test on (default: each kernel's CPU set on the CPU, "
                         "its spec's default shapes on a GPU; `gpu_short` is a short GPU run's)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    gpu = any(d.backend == "cupy" and not d.problem for d in all_devices())
    device = args.device or ("0" if gpu else "cpu")
    ext = ".cl" if device == "cpu" or device.startswith("opencl") else ".cu"
    _, info = resolve(device, "opencl" if ext == ".cl" else "cuda")   # a device that is not there: one message, exit 1
    where = {"id": info.id, "name": info.name, "driver": info.driver, "commit": commit(mark_uncommitted=True)}
    stamp = datetime.date.today().isoformat()
    out = args.out or REPO / "bench" / "results" / f"optimize-{'cpu' if ext == '.cl' else 'gpu'}-{stamp}"
    runs = out.with_name(out.name + "-runs")
    runs.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []

    def write() -> None:       # after every kernel: a run stopped part way keeps what it finished
        out.with_suffix(".json").write_text(json.dumps({"device": device, "where": where,
                                                        "args": vars(args) | {"out": str(out)},
                                                        "rows": rows}, indent=1, default=str) + "\n")
        out.with_suffix(".md").write_text(render(rows, device, args, where))
    for name, kernel, spec, cpu_set in LIBRARY:
        if args.only and not any(o in name for o in args.only.split(",")):
            continue
        run = runs / kernel.replace("/", "_")
        cmd = [sys.executable, "-m", "kerntune", "optimize", kernel + ext, "--spec", spec, "--device", device,
               "--rounds", str(args.rounds), "--evaluations", str(args.evaluations), "--repeats", str(args.repeats),
               "--final-repeats", str(args.final_repeats), "--json"]
        if args.time_limit:
            cmd += ["--time-limit", args.time_limit]
        shape_set = args.shape_set or (cpu_set if ext == ".cl" else None)
        if shape_set:
            cmd += ["--shape-set", shape_set]
        cmd += ["--resume", str(run)] if (run / "run.json").exists() else ["--run-dir", str(run)]
        t0 = time.monotonic()
        p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        secs = time.monotonic() - t0
        if p.returncode != 0:
            print(f"{name}: FAILED ({p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode})",
                  file=sys.stderr)
            rows.append({"name": name, "error": p.stderr.strip()[-500:], "seconds": secs})
            write()
            continue
        r = json.loads(p.stdout)
        rows.append({"name": name, "kernel": kernel + ext, "improved": r["improved"],
                     "general_speedup": r["general_speedup"], "general_key": r["general_key"],
                     "general_interval": r["general_interval"] or _best_candidate(r),
                     "general_round": r["general_round"], "per_shape": r["per_shape"],
                     "rounds": [{"round": x["round"], "space": x["space_size"], "measured": x["measured"],
                                 "rules": [t["rule"] for t in x["transformations"]]} for x in r["rounds"]],
                     "stop": r["stop_reason"], "seconds": secs, "run_dir": str(run)})
        print(f"{name}: {r['general_speedup'] or 1.0:.3f}x ({'improved' if r['improved'] else 'not improved'}) "
              f"in {secs:.0f} s", file=sys.stderr)
        write()
    write()
    print(f"wrote {out.with_suffix('.md')}", file=sys.stderr)
    return 0


def _best_candidate(r: dict):
    """A run that kept the original: the general candidate's confirmed geomean, which did not clear the bar."""
    general = ((r.get("test") or {}).get("general") or {})
    return general.get("geomean")


def _interval(iv) -> str:
    if not iv:
        return ""
    hi = "inf" if iv.get("hi") is None else f"{iv['hi']:.2f}"
    return f" [{iv['lo']:.2f}, {hi}]"


def render(rows, device, args, where=None) -> str:
    w = where or {}
    lines = ["# kerntune optimize (rule catalog) on the kernel library", "",
             f"Device `{device}` ({w.get('name', '?')}, {w.get('driver', '?')}), commit {w.get('commit', '?')}; "
             f"{args.rounds} rounds, {args.evaluations} measured evaluations per kernel, "
             f"{args.repeats} timed runs per shape while tuning, {args.final_repeats} in the final test. "
             "Speedups are the tester's: the candidates re-verified with fresh inputs on every shape plus fresh "
             "shapes, picked on a screening session and re-timed interleaved with the original in confirmation "
             "blocks over new worker processes; the general speedup with its 95% confidence interval (a kernel not "
             "improved: the original stays, 1.000x, and the interval is the best candidate's, which did not clear "
             "1.02x).", "",
             "| kernel | general speedup | improved | per-shape speedups | rules applied (round 1) | time |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['name']} | failed | - | {r['error'].splitlines()[-1] if r['error'] else ''} | - | "
                         f"{r['seconds']:.0f} s |")
            continue
        per = ", ".join(f"{w['label']} {w['speedup']:.2f}x" for w in r["per_shape"])
        rules = ", ".join(r["rounds"][0]["rules"]) if r["rounds"] else "-"
        iv = _interval(r.get("general_interval"))
        best = r.get("general_interval")
        sp = f"{r['general_speedup']:.3f}x{iv}" if r["general_speedup"] else \
            f"1.000x (best candidate {best['ratio']:.2f}x{iv})" if best else "1.000x (no candidate)"
        lines.append(f"| {r['name']} | {sp} | {'yes' if r['improved'] else 'no'} | {per} | {rules} | "
                     f"{r['seconds']:.0f} s |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    from script_errors import run

    run(main)
