#!/usr/bin/env python3
"""Tune every SGLang kernel's template against its baseline and write one table.

Per kernel and shape: the baseline time, the tuned time of the best
configuration for that shape and of the single general configuration, their
speedups, the achieved bandwidth and its share of a device-to-device copy
measured in the same run. On a CUDA GPU the table also has PyTorch eager,
torch.compile, and FlashInfer / Liger Kernel where importable, timed with the
same method. On the CPU (no GPU) the OpenCL forms run on the OpenCL CPU device.

    python scripts/bench_library.py                      # auto: GPU if present, else the CPU
    python scripts/bench_library.py --device cpu --shape-set cpu --budget 48
    python scripts/bench_library.py --device 0 --dtype bf16 --strategy local --budget 150
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kerntune.engine.devices import all_devices, resolve  # noqa: E402
from kerntune.fmt import ms as fmt_ms  # noqa: E402
from kerntune.engine.supervisor import DeviceWorker  # noqa: E402
from kerntune.kernelfile import load_kernel  # noqa: E402
from kerntune.spec.model import Shape  # noqa: E402
from kerntune.tuner.evaluators import LiveEvaluator  # noqa: E402
from kerntune.tuner.run import TuneSettings, Tuner  # noqa: E402
from kerntune.tuner.store import RunStore  # noqa: E402
from kerntune.tuner.summary import summarize  # noqa: E402
from kerntune.tuner.template import load_template  # noqa: E402

KERNELS = ("silu_and_mul", "fused_add_rmsnorm", "merge_attn_states_lse")
SPEC_FILE = {"bf16": "spec.yaml", "fp16": "fp16.yaml", "fp32": "fp32.yaml"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default=None, help="CUDA ordinal or 'cpu' (default: GPU 0 if present, else cpu)")
    ap.add_argument("--dtype", default="bf16", choices=list(SPEC_FILE))
    ap.add_argument("--shape-set", default=None, help="spec shape set (default: 'cpu' on the CPU, serving shapes on a GPU)")
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--strategy", default="exhaustive")
    ap.add_argument("--budget", type=int, default=None, help="measured evaluations per kernel")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=100)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    gpu = any(d.backend == "cupy" and not d.problem for d in all_devices())
    device = args.device or ("0" if gpu else "cpu")
    lang = "opencl" if device == "cpu" or device.startswith("opencl") else "cuda"
    shape_set = args.shape_set if args.shape_set is not None else ("cpu" if lang == "opencl" else None)
    ref, info = resolve(device, lang)
    ext = ".cu" if lang == "cuda" else ".cl"
    stamp = datetime.date.today().isoformat()
    out = args.out or REPO / "bench" / "results" / f"library-{'cpu' if lang == 'opencl' else 'gpu'}-{stamp}"
    out.parent.mkdir(parents=True, exist_ok=True)
    runs = out.with_name(out.name + "-runs")
    rows, record = [], {"device": info.model_dump(mode="json"), "dtype": args.dtype, "shape_set": shape_set,
                        "strategy": args.strategy, "budget": args.budget, "kernels": {}}
    with DeviceWorker(ref) as worker:
        for name in args.kernels.split(","):
            folder = REPO / "kernels" / "sglang" / name
            kf = load_kernel(folder / f"{name}{ext}", folder / SPEC_FILE[args.dtype])
            template = load_template(REPO / "templates" / "sglang" / f"{name}{ext}.j2")
            run_dir = runs / name
            store = RunStore.in_dir(run_dir, create=not (run_dir / "tuning.db").exists())
            settings = TuneSettings(strategy=args.strategy, budget=args.budget, seed=1, warmup=args.warmup,
                                    repeats=args.repeats, shape_set=shape_set)
            t0 = time.monotonic()
            reason = Tuner(template, kf.loaded, LiveEvaluator(worker), store, settings,
                           original=kf.instance(label=f"{name}{ext}")).run()
            store.set("stop_reason", reason)
            s = summarize(store, str(run_dir), reason)
            base = store.get("baseline")
            copy = base.get("copy_bandwidth") if base else None
            copy_gbs = 2 * copy["bytes_per_copy"] / (copy["stats"]["median_ms"] * 1e-3) / 1e9 if copy else None
            bytes_by_key = {Shape.of(t["shape"]).key: t["bytes_moved"] for t in (base or {}).get("timings", [])}
            print(f"{name}: {s.measured} measured, {s.pruned} pruned, {s.failed} failed, "
                  f"{time.monotonic() - t0:.0f} s; general {s.general.key if s.general else '-'}", file=sys.stderr)
            kernel_rows = []
            for r in s.shapes:
                key = Shape.of(r.shape).key
                moved = bytes_by_key.get(key)
                gbs = moved / (r.best_ms * 1e-3) / 1e9 if moved and r.best_ms else None
                ggbs = moved / (r.general_ms * 1e-3) / 1e9 if moved and r.general_ms else None
                kernel_rows.append({"kernel": name, "shape": r.label, "sizes": r.shape, "baseline_ms": r.baseline_ms,
                                    "best_ms": r.best_ms, "best_speedup": r.speedup, "general_ms": r.general_ms,
                                    "general_speedup": r.general_speedup, "best_gbs": gbs, "general_gbs": ggbs,
                                    "general_pct_copy": 100 * ggbs / copy_gbs if ggbs and copy_gbs else None,
                                    "best_config": r.best_key})
            if lang == "cuda":
                kernel_rows = _production(name, kf, shape_set, args, kernel_rows)
            rows += kernel_rows
            record["kernels"][name] = {"summary": s.model_dump(mode="json"), "copy_gbs": copy_gbs,
                                       "general_geomean": s.general.geomean_speedup if s.general else None}
            record["rows"] = rows
            # written after every kernel: a run stopped part way keeps the kernels it finished
            out.with_suffix(".json").write_text(json.dumps(record, indent=1, default=str) + "\n")
            out.with_suffix(".md").write_text(render(record, info))
            print(f"wrote {out.with_suffix('.md')} and {out.with_suffix('.json')}", file=sys.stderr)
    return 0


def _production(name, kf, shape_set, args, rows):
    from kerntune.spec.shapes import spec_shapes

    try:
        import torch  # noqa: F401
    except ImportError:
        return rows
    sys.path.insert(0, str(REPO / "scripts"))
    from torch_baselines import time_production

    shapes = [s.as_dict() for s in spec_shapes(kf.spec, shape_set)]
    prod = time_production(name, shapes, args.dtype, args.warmup, args.repeats)
    for row in rows:
        key = ",".join(f"{k}={v}" for k, v in row["sizes"].items())
        row["production_ms"] = {impl: times.get(key) for impl, times in prod.items()}
    return rows


def _ms(v):
    return "-" if v is not None and math.isnan(v) else fmt_ms(v)


def render(record, info) -> str:
    rows = record["rows"]
    impls = sorted({k for r in rows for k in (r.get("production_ms") or {})})
    lines = [f"# SGLang kernels: baseline vs tuned template ({record['dtype']})", "",
             f"Device: {info.name} ({info.id}, {info.driver}). Shape set: {record['shape_set'] or 'serving (default)'}. "
             f"Strategy: {record['strategy']}, budget {record['budget'] or 'whole space'} per kernel. "
             "Times are medians of timed runs with the L2 flushed before each; % of copy is the general "
             "configuration's achieved bandwidth over a device-to-device copy measured in the same run "
             "(" + ", ".join(f"{k}: {v['copy_gbs']:.1f} GB/s" for k, v in record["kernels"].items()
                             if v["copy_gbs"]) + ").",
             "", "| kernel | shape | baseline | best (per shape) | speedup | general | speedup | GB/s | % copy |"
             + "".join(f" {i} |" for i in impls),
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |" + " --- |" * len(impls)]
    for r in rows:
        cells = [r["kernel"], r["shape"], _ms(r["baseline_ms"]), _ms(r["best_ms"]),
                 f"{r['best_speedup']:.2f}x" if r["best_speedup"] else "-", _ms(r["general_ms"]),
                 f"{r['general_speedup']:.2f}x" if r["general_speedup"] else "-",
                 f"{r['general_gbs']:.1f}" if r["general_gbs"] else "-",
                 f"{r['general_pct_copy']:.0f}%" if r["general_pct_copy"] else "-"]
        cells += [_ms((r.get("production_ms") or {}).get(i)) for i in impls]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Geometric-mean speedup of the general configuration: " + ", ".join(
        f"{k} {v['general_geomean']:.2f}x" for k, v in record["kernels"].items() if v["general_geomean"]), ""]
    for k, v in record["kernels"].items():
        s = v["summary"]
        if s.get("general"):
            lines.append(f"- {k}: general configuration `{s['general']['key']}`; {s['measured']} measured, "
                         f"{s['pruned']} pruned, {s['failed']} failed")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from script_errors import run

    run(main)
