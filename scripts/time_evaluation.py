#!/usr/bin/env python3
"""Host time of one evaluation (verification on every distribution, then timing) of a kernel on
one of its spec's shapes, several times in one process: the first makes the inputs and the
reference's outputs, the later ones take them from the worker's cache (kerntune/engine/datacache.py).

    python scripts/time_evaluation.py kernels/sglang/silu_and_mul/silu_and_mul.cl --shape 7b-prefill-T4096
    python scripts/time_evaluation.py K.cu --spec S.yaml --shape LABEL --device 0 --times 3 --profile
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("kernel", type=Path)
    ap.add_argument("--spec", type=Path, default=None, help="default: spec.yaml beside the kernel")
    ap.add_argument("--shape", required=True, help="a shape label of the spec (any shape set)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--times", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5, help="timed runs of the timing stage")
    ap.add_argument("--profile", action="store_true", help="print the last evaluation's profile")
    args = ap.parse_args()

    from kerntune.backends import open_backend
    from kerntune.engine.devices import resolve
    from kerntune.engine.evaluate import EvalRequest, Evaluator, TimingOptions
    from kerntune.kernelfile import load_kernel

    kf = load_kernel(args.kernel, args.spec or args.kernel.parent / "spec.yaml")
    shapes = {s.label: s for s in _all_shapes(kf.spec)}
    if args.shape not in shapes:
        ap.error(f"no shape {args.shape!r} in the spec; it has: {', '.join(shapes)}")
    shape = shapes[args.shape]
    ref, info = resolve(args.device, kf.lang)
    ev = Evaluator(open_backend(ref))
    req = EvalRequest(candidate=kf.instance(), spec=kf.spec, base_dir=str(kf.loaded.base_dir), verify_shapes=(shape,),
                      time_shapes=(shape,), seed=1, timing=TimingOptions(warmup=1, repeats=args.repeats))
    print(f"{kf.path.name} at {shape.label} on {info.name}", file=sys.stderr)
    for i in range(args.times):
        prof = cProfile.Profile() if args.profile and i == args.times - 1 else None
        t0 = time.perf_counter()
        if prof:
            prof.enable()
        r = ev.evaluate(req)
        if prof:
            prof.disable()
        print(f"evaluation {i + 1}: {r.status.value}, {time.perf_counter() - t0:.2f} s "
              f"(kept: {ev.data.hits} taken, {ev.data.misses} made, {ev.data.used / 2**20:.0f} MiB)", file=sys.stderr)
        if prof:
            pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(15)
    ev.backend.close()
    return 0


def _all_shapes(spec):
    from kerntune.spec.shapes import spec_shapes

    yield from spec_shapes(spec)
    for name in spec.shape_sets:
        yield from spec_shapes(spec, name)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from script_errors import run

    run(main)
