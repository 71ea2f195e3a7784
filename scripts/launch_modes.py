#!/usr/bin/env python3
"""Time the SGLang kernels on decode shapes three ways, on a CUDA GPU: the way kerntune's tables do,
back to back, and replayed from a CUDA graph.

A decode-shape kernel runs for a few microseconds, about what a launch costs on the host, so how it
is timed decides what the number means:

- ``event`` (what kerntune and scripts/bench_library.py report): CUDA events around one launch, the
  L2 flushed before it; the GPU's time for the kernel alone, from a cold cache.
- ``back-to-back``: events around N launches in a row, no flush, divided by N; the host's launch
  cost shows when it exceeds the kernel's time.
- ``graph``: the same N launches captured in a CUDA graph and replayed, divided by N; what a server
  that replays graphs (as SGLang does in decode) pays per kernel.

Each kernel's original, the template's general configuration from a bench_library results file
(--library) when given, and PyTorch eager / torch.compile beside them.

    python scripts/launch_modes.py --library bench/results/library-gpu-DATE.json --out bench/results/launch-modes-DATE
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

KERNELS = ("silu_and_mul", "fused_add_rmsnorm", "merge_attn_states_lse")
MODES = ("event", "back-to-back", "graph")


def time_cupy(be: Any, run: Callable[[], None], launches: int, repeats: int) -> dict[str, float]:
    """Median ms per launch of ``run`` (launches on CuPy's current stream) in each mode."""
    cp = be.cp
    out: dict[str, float] = {}
    samples, _ = be.measure(run, warmup=10, repeats=repeats, flush=True)
    out["event"] = statistics.median(samples)

    def batch() -> float:
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(launches):
            run()
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) / launches
    batch()
    out["back-to-back"] = statistics.median(batch() for _ in range(repeats))

    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        for _ in range(launches):
            run()
        graph = stream.end_capture()
        graph.launch(stream)
        stream.synchronize()

        def replay() -> float:
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record(stream)
            graph.launch(stream)
            end.record(stream)
            end.synchronize()
            return cp.cuda.get_elapsed_time(start, end) / launches
        out["graph"] = statistics.median(replay() for _ in range(repeats))
    return out


def time_torch(fn: Callable[[], object], launches: int, repeats: int) -> dict[str, float]:
    import torch
    from torch_baselines import _time

    out = {"event": _time(fn, 10, repeats)}

    def batch() -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(launches):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / launches
    batch()
    out["back-to-back"] = statistics.median(batch() for _ in range(repeats))

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):   # warm-up on a side stream before capture, as torch asks
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(launches):
            fn()
    graph.replay()
    torch.cuda.synchronize()

    def replay() -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / launches
    out["graph"] = statistics.median(replay() for _ in range(repeats))
    return out


def _attempt(rows: list[dict], base: dict, timer: Callable[[], dict[str, float]]) -> None:
    try:
        rows.append({**base, **timer()})
    except Exception as e:   # one implementation or mode that cannot run is a row with its reason
        rows.append({**base, "error": f"{type(e).__name__}: {e}"})
        print(f"{base['kernel']} {base['shape']} {base['impl']}: {type(e).__name__}: {e}", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--device", type=int, default=0, help="CUDA ordinal")
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--shapes", default="decode", help="shape labels containing this text (default: decode)")
    ap.add_argument("--library", type=Path, help="a scripts/bench_library.py results file (.json): time its general configurations too")
    ap.add_argument("--launches", type=int, default=100, help="launches per back-to-back batch and per graph")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--no-torch", action="store_true", help="leave PyTorch eager and torch.compile out")
    ap.add_argument("--out", type=Path, required=True, help="results path without suffix (.json and .md are written)")
    args = ap.parse_args()

    from kerntune.backends.cupy import CupyBackend
    from kerntune.engine.evaluate import Evaluator, resolve_launch
    from kerntune.engine.inputs import make_host_args
    from kerntune.kernelfile import load_kernel
    from kerntune.spec.shapes import spec_shapes
    from kerntune.tuner.template import load_template

    library = json.loads(args.library.read_text()) if args.library else {"kernels": {}}
    be = CupyBackend(args.device)
    ev = Evaluator(be)
    rows: list[dict] = []
    for name in args.kernels.split(","):
        folder = REPO / "kernels" / "sglang" / name
        kf = load_kernel(folder / f"{name}.cu", folder / "spec.yaml")
        spec = kf.spec
        instances = {"original": kf.instance()}
        general = ((library["kernels"].get(name) or {}).get("summary") or {}).get("general")
        if general:
            template = load_template(REPO / "templates" / "sglang" / f"{name}.cu.j2")
            instances["tuned (general)"] = template.instance(general["config"], spec)
        shapes = [s for s in spec_shapes(spec) if args.shapes in (s.label or "")]
        for shape in shapes:
            host = make_host_args(spec, kf.loaded.base_dir, shape, seed=1)
            for impl, inst in instances.items():
                kernel = ev.compiled(inst)
                _, kargs = ev.upload(spec, host)
                grid, block, shared = resolve_launch(spec, inst, shape)
                base = {"kernel": name, "shape": shape.label, "impl": impl}
                _attempt(rows, base, lambda: time_cupy(
                    be, lambda: be.launch(kernel, grid, block, kargs, shared), args.launches, args.repeats))
            if not args.no_torch:
                import torch
                from torch_baselines import _impls

                for impl, factory in _impls(name).items():
                    base = {"kernel": name, "shape": shape.label, "impl": impl}
                    _attempt(rows, base, lambda: time_torch(factory(shape.as_dict(), torch.bfloat16),
                                                            args.launches, args.repeats))
            print(f"{name} {shape.label}: done", file=sys.stderr)
    record = {"device": be.info().model_dump(mode="json"), "launches": args.launches, "repeats": args.repeats,
              "library": str(args.library) if args.library else None, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(render(record))
    print(f"wrote {args.out.with_suffix('.md')}", file=sys.stderr)
    return 0


def render(record: dict) -> str:
    def us(v: Any) -> str:
        return f"{1000 * v:.2f}" if isinstance(v, (int, float)) else "-"
    d = record["device"]
    lines = [f"# Decode shapes timed three ways ({d['name']}, {d['driver']})", "",
             f"Microseconds per kernel, median of {record['repeats']}. event: CUDA events around one launch, L2 "
             f"flushed before it (what kerntune's tables use); back-to-back: {record['launches']} launches in a row "
             f"between two events, no flush, per launch; graph: the same {record['launches']} launches replayed "
             "from a CUDA graph, per launch.", "",
             "| kernel | shape | implementation | event | back-to-back | graph | note |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in record["rows"]:
        lines.append(f"| {r['kernel']} | {r['shape']} | {r['impl']} | " + " | ".join(us(r.get(m)) for m in MODES)
                     + f" | {r.get('error', '')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from script_errors import run

    run(main)
