"""Every kernel of the corpus verified alone against its spec's NumPy reference at the shapes
beyond its CPU shape set that the final test verifies candidates at (kerntune.engine.checker.
reach_shapes), at the odd and random spread shapes of a few seeds (spread_shapes), and at the shapes
below the run's of every shape set (low_shapes): a shape within the spec's bounds must be one the
original kernel handles.

    python scripts/check_reach_shapes.py [--out FILE] [--spread-seeds N] [--only-low]

Prints one line per kernel and shape; exit 1 when an original fails at a reach shape."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kerntune.engine.checker import REACH_ELEMENTS, _largest_array, low_shapes, reach_shapes, spread_shapes  # noqa: E402
from kerntune.engine.devices import resolve  # noqa: E402
from kerntune.engine.evaluate import EvalRequest  # noqa: E402
from kerntune.engine.supervisor import DeviceWorker  # noqa: E402
from kerntune.errors import KerntuneError  # noqa: E402
from kerntune.kernelfile import load_kernel  # noqa: E402
from kerntune.results import Status  # noqa: E402
from kerntune.spec.shapes import shape_set_names  # noqa: E402


def originals() -> list[Path]:
    """One OpenCL kernel per spec file: the directory's naive or only kernel."""
    out = []
    for spec in sorted(REPO.glob("kernels/*/*/*.yaml")):
        kernels = sorted(p for p in spec.parent.glob("*.cl"))
        pick = [p for p in kernels if p.stem in ("naive", spec.stem)] or kernels[:1]
        out += [(p, spec) for p in pick[:1]]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--spread-seeds", type=int, default=3, help="also the random spread shape of seeds 0..N-1")
    ap.add_argument("--only-low", action="store_true", help="only the shapes below the run's (low_shapes)")
    args = ap.parse_args()
    ref, _ = resolve("cpu", "opencl")
    lines, failed = [], 0
    with DeviceWorker(ref) as worker:
        for path, spec_path in originals():
            try:
                kf = load_kernel(path, spec_path)
            except KerntuneError as e:
                lines.append(f"skip  {path.relative_to(REPO)}: {e.message}")
                continue
            spec = kf.loaded.spec
            if "cpu" not in shape_set_names(spec) or spec.reference is None:
                continue
            reach = () if args.only_low else tuple(reach_shapes(spec, "cpu"))
            more = {} if args.only_low else \
                {s.key: s for seed in range(args.spread_seeds) for s in spread_shapes(spec, "cpu", seed)}
            # below the run's: of every set (a GPU set's low shapes come from the CPU set's sizes), those that fit
            more.update({s.key: s for name in shape_set_names(spec) for s in low_shapes(spec, name)
                         if _largest_array(spec, s.as_dict()) <= REACH_ELEMENTS})
            reach += tuple(more.values())
            for shape in reach:
                req = EvalRequest(candidate=kf.instance(), spec=spec, base_dir=str(kf.loaded.base_dir),
                                  verify_shapes=(shape,), time_shapes=(), seed=1, timing=None,
                                  distributions=("spec",))
                try:
                    r = worker.evaluate(req, 600)
                    ok, why = r.status is Status.OK, r.message
                except KerntuneError as e:
                    ok, why = False, e.message
                failed += not ok
                line = f"{'ok   ' if ok else 'FAIL '} {str(path.relative_to(REPO)):52s} {shape.label:34s}" + \
                    ("" if ok else f" {why}")
                print(line, flush=True)
                lines.append(line)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
