#!/usr/bin/env python3
"""Where does the add_rows process effect come from? One worker process times
bench/proof/flat/add_rows.cl (work-groups of 1024) against the same kernel with
work-groups of 128 at 2048x2048 in N comparison sessions and prints each
session's speedup. With --recompile, every session compiles both kernels
afresh (a comment with the session number appended to the source, so neither
kerntune's nor the runtime's cache can hand back the earlier binary).

    python bench/proof/flat/probe_sessions.py --sessions 8
    python bench/proof/flat/probe_sessions.py --sessions 8 --recompile

Results and what they show: bench/proof/flat/README.md.
"""

from __future__ import annotations

import argparse
import sys
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from kerntune import speedup as sp
from kerntune.engine.devices import resolve
from kerntune.engine.evaluate import TimingOptions
from kerntune.engine.supervisor import DeviceWorker
from kerntune.engine.timed import CompareRequest
from kerntune.errors import KerntuneError
from kerntune.kernelfile import load_kernel
from kerntune.spec.shapes import spec_shapes

HERE = Path(__file__).resolve().parent


def main() -> None:
    try:
        probe()
    except KerntuneError as e:
        sys.exit(f"error: {e.message}" + (f"\nhint: {e.hint}" if e.hint else ""))


def probe() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=60)
    ap.add_argument("--recompile", action="store_true", help="compile both kernels afresh for every session")
    ap.add_argument("--device", default="cpu")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for f in ("add_rows.cl", "add_rows.yaml"):
            shutil.copy(HERE / f, work / f)
        shutil.copy(HERE / "add_rows.cl", work / "add_rows_b128.cl")
        spec = (HERE / "add_rows.yaml").read_text().replace("../reference.py", str(HERE.parent / "reference.py"))
        spec += '\nlaunches:\n  add_rows_b128: {grid: ["ceil_div(cols, 128)", rows], block: [128, 1]}\n'
        (work / "add_rows.yaml").write_text(spec)
        a = load_kernel(work / "add_rows.cl", work / "add_rows.yaml")
        b = load_kernel(work / "add_rows_b128.cl", work / "add_rows.yaml")
        shape = next(s for s in spec_shapes(a.spec, None) if s.label == "2048x2048")
        ref, _ = resolve(opts.device, a.lang)
        ratios = []
        with DeviceWorker(ref) as worker:
            for i in range(opts.sessions):
                ka, kb = a.instance(), b.instance(label="b128")
                if opts.recompile:
                    ka, kb = (replace(k, source=k.source + f"\n// session {i}\n") for k in (ka, kb))
                cmp = worker.compare(CompareRequest(kernels=(ka, kb), spec=a.spec, base_dir=str(work), shape=shape,
                                                    seed=1000 + 7 * i, timing=TimingOptions(warmup=10,
                                                                                            repeats=opts.repeats)), 600)
                ratios.append(sp.paired(cmp.kernels[0].samples_ms, cmp.kernels[1].samples_ms).ratio)
        print(("recompiled " if opts.recompile else "one compile ") + " ".join(f"{r:.3f}" for r in ratios))


if __name__ == "__main__":
    main()
