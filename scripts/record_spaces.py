#!/usr/bin/env python3
"""Record whole search spaces for the strategy comparison: tune a template
exhaustively on a device and export every tuning shape as a Kernel Tuner
cache (gzip) under bench/data/, where scripts/bench_strategies.py replays them.

The spaces are the rule catalog's templates for library kernels (hundreds to
thousands of configurations, many pruned by restrictions) and hand-written
library templates.

    python scripts/record_spaces.py --device cpu            # a few minutes per space on 2 cores

A recording is one draw: on a CPU some spaces' fastest configuration changes from one recording to
the next, with 20 timed runs per configuration or with 100 (docs/search.md, "Are the recorded
landscapes a property of the kernel?"; scripts/compare_recordings.py compares two recordings).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kerntune.agents.rules.catalog import apply_catalog  # noqa: E402
from kerntune.engine.devices import resolve  # noqa: E402
from kerntune.engine.supervisor import DeviceWorker  # noqa: E402
from kerntune.kernelfile import load_kernel  # noqa: E402
from kerntune.tuner.evaluators import LiveEvaluator  # noqa: E402
from kerntune.tuner.kerneltuner import export_cache  # noqa: E402
from kerntune.tuner.run import TuneSettings, Tuner  # noqa: E402
from kerntune.tuner.store import RunStore  # noqa: E402
from kerntune.tuner.template import load_template, parse_template  # noqa: E402

# (name, kernel, spec, shape set, template: "catalog" or a template path)
SPACES = [
    ("silu-catalog", "kernels/sglang/silu_and_mul/silu_and_mul.cl", "kernels/sglang/silu_and_mul/spec.yaml", "cpu",
     "catalog"),
    ("rowsum-catalog", "kernels/examples/row_sum.cl", "kernels/examples/row_sum.yaml", None, "catalog"),
    ("merge-template", "kernels/sglang/merge_attn_states_lse/merge_attn_states_lse.cl",
     "kernels/sglang/merge_attn_states_lse/spec.yaml", "cpu", "templates/sglang/merge_attn_states_lse.cl.j2"),
    ("sgemm-template", "kernels/classic/sgemm/naive.cl", "kernels/classic/sgemm/spec.yaml", "cpu",
     "templates/classic/sgemm.cl.j2"),
    # recorded later as held-out spaces for the default search (docs/search.md: what it was tuned on)
    ("rmsnorm-template", "kernels/sglang/fused_add_rmsnorm/fused_add_rmsnorm.cl",
     "kernels/sglang/fused_add_rmsnorm/spec.yaml", "cpu", "templates/sglang/fused_add_rmsnorm.cl.j2"),
    ("transpose-template", "kernels/classic/transpose/naive.cl", "kernels/classic/transpose/spec.yaml", "cpu",
     "templates/classic/transpose.cl.j2"),
    ("stencil-template", "kernels/classic/stencil7/naive.cl", "kernels/classic/stencil7/spec.yaml", "cpu",
     "templates/classic/stencil7.cl.j2"),
    # recorded on 2026-12-01 as a second held-out set, after every setting of the default was chosen
    ("histogram-template", "kernels/classic/histogram/naive.cl", "kernels/classic/histogram/spec.yaml", "cpu",
     "templates/classic/histogram.cl.j2"),
    ("reduce-template", "kernels/classic/reduce_sum/naive.cl", "kernels/classic/reduce_sum/spec.yaml", "cpu",
     "templates/classic/reduce_sum.cl.j2"),
    ("spmv-template", "kernels/classic/spmv_csr/naive.cl", "kernels/classic/spmv_csr/spec.yaml", "cpu",
     "templates/classic/spmv_csr.cl.j2"),
    ("biasgelu-catalog", "kernels/naive/bias_gelu/bias_gelu.cl", "kernels/naive/bias_gelu/spec.yaml", None,
     "catalog"),
    ("gemvt-catalog", "kernels/naive/gemv_t/gemv_t.cl", "kernels/naive/gemv_t/spec.yaml", None, "catalog"),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "data")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, kernel, spec, shape_set, source in SPACES:
        if args.only and name not in args.only.split(","):
            continue
        kf = load_kernel(REPO / kernel, REPO / spec)
        ref, _ = resolve(args.device, kf.lang)
        with tempfile.TemporaryDirectory() as d, DeviceWorker(ref) as worker:
            info = worker.info   # the listing's info has no vector width: the worker's has
            if source == "catalog":
                text = apply_catalog(kf.source, kf.lang, kf.spec, device=info,
                                     compute_units=0).template   # as recorded: split sizes not bound by the device
                template = parse_template(text, kf.lang, f"{name} (rule catalog)")
            else:
                template = load_template(REPO / source)
            store = RunStore.in_dir(Path(d), create=True)
            t0 = time.monotonic()
            settings = TuneSettings(strategy="exhaustive", seed=0, warmup=args.warmup, repeats=args.repeats,
                                    shape_set=shape_set, stop_factor=0,   # every configuration fully timed:
                                    race_margin=0)                        # no early stop, no racing
            reason = Tuner(template, kf.loaded, LiveEvaluator(worker), store, settings,
                           original=kf.instance(label=Path(kernel).name)).run()
            shapes = [s["label"] for s in store.get("shapes")]
            for label in shapes:
                dest = args.out / f"{name}-{label}.json.gz"
                n = export_cache(store, label, dest)
                print(f"{dest.relative_to(REPO) if dest.is_relative_to(REPO) else dest}: {n} configurations", file=sys.stderr)
            print(f"{name}: {store.counted()} measured, {reason}, {time.monotonic() - t0:.0f} s", file=sys.stderr)
            store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
