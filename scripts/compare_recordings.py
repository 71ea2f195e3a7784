#!/usr/bin/env python3
"""Is a recorded space's landscape a property of the kernel, or of one recording? Compare recordings of
the same space (Kernel Tuner cache files, as scripts/record_spaces.py writes them) with a reference.

For each recording: the device, its fastest configuration, where the reference's fastest one lands in
it (as a fraction of its fastest: 1.000 is its fastest too) and where its fastest lands in the
reference, how many configurations are within 0.95 of its own fastest, and the rank correlation (Spearman) of its times with the reference's over the
configurations both measured. Given folders, it compares every space recorded in all of them.

    python scripts/record_spaces.py --device cpu --only stencil-template --out /tmp/again
    python scripts/compare_recordings.py bench/data/stencil-template-cube64.json.gz /tmp/again/stencil-template-cube64.json.gz
    python scripts/compare_recordings.py bench/data /tmp/again --only stencil --out bench/results/again.md
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path


def times(path: Path) -> tuple[str, dict[str, float]]:
    """(device name, configuration -> recorded time) of the configurations that ran."""
    data = json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes())
    out = {k: float(v["time"]) for k, v in data["cache"].items()
           if isinstance(v.get("time"), (int, float)) and 0 < v["time"] < 1e9}
    return data.get("device_name", "?"), out


def ranks(values: list[float]) -> list[float]:
    """Ranks from 1, ties given their mean rank."""
    order = sorted(range(len(values)), key=values.__getitem__)
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a: list[float], b: list[float]) -> float:
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    var = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return cov / var if var else float("nan")


def compare(reference: Path, others: list[Path]) -> list[dict]:
    _, ref = times(reference)
    ref_best = min(ref, key=ref.get)
    rows = []
    for path in [reference, *others]:
        device, t = times(path)
        common = sorted(set(ref) & set(t))
        best = min(t, key=t.get)
        rows.append({"file": str(path), "device": device, "configurations": len(t), "best": best,
                     "reference_best_at": t[best] / t[ref_best] if ref_best in t else float("nan"),
                     "best_in_reference": ref[ref_best] / ref[best] if best in ref else float("nan"),
                     "near_optimal": sum(1 for v in t.values() if t[best] / v >= 0.95),
                     "spearman": spearman([ref[k] for k in common], [t[k] for k in common]) if len(common) > 2
                     else float("nan")})
    return rows


def render(rows: list[dict]) -> str:
    lines = ["| recording | device | configurations | fastest | the reference's fastest, here | its fastest, in the "
             "reference | within 0.95 of its fastest | rank correlation with the reference |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['file']} | {r['device']} | {r['configurations']} | {r['best']} | "
                     f"{r['reference_best_at']:.3f} | {r['best_in_reference']:.3f} | {r['near_optimal']} | "
                     f"{r['spearman']:.2f} |")
    return "\n".join(lines) + "\n"


def pairs(reference: Path, others: list[Path], only: str) -> list[tuple[str, Path, list[Path]]]:
    """(space name, reference file, the other files) for files, or for every space in all the folders."""
    if not reference.is_dir():
        return [(reference.name, reference, others)]
    out = []
    for path in sorted(reference.glob("*.json.gz")):
        if only and not any(o in path.name for o in only.split(",")):
            continue
        if all((o / path.name).exists() for o in others):
            out.append((path.name, path, [o / path.name for o in others]))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reference", type=Path, help="a recorded space (Kernel Tuner cache, .json or .json.gz), or a "
                                                 "folder of them")
    ap.add_argument("others", type=Path, nargs="+", help="other recordings of the same space (or folders)")
    ap.add_argument("--only", default="", help="with folders: comma-separated substrings of the spaces' file names")
    ap.add_argument("--out", type=Path, default=None, help="write the tables to this Markdown file")
    args = ap.parse_args()
    if args.reference.is_dir() != all(o.is_dir() for o in args.others) or \
            any(o.is_dir() != args.others[0].is_dir() for o in args.others):
        print("error: give files or folders, not both\nhint: compare_recordings.py REF.json.gz OTHER.json.gz, or "
              "compare_recordings.py REF_DIR OTHER_DIR", file=sys.stderr)
        return 2
    jobs = pairs(args.reference, args.others, args.only)
    if not jobs:
        print("error: no space is recorded in every folder given" + (f" (with --only {args.only})" if args.only else ""),
              file=sys.stderr)
        return 2
    parts = []
    try:
        for name, ref, others in jobs:
            table = render(compare(ref, others))
            parts.append(f"## {name.split('.')[0]}\n\n{table}" if len(jobs) > 1 or ref.is_dir() else table)
    except (OSError, ValueError, KeyError, gzip.BadGzipFile) as e:
        print(f"error: not a recorded space: {e}\nhint: pass Kernel Tuner cache files, as scripts/record_spaces.py "
              "writes them", file=sys.stderr)
        return 2
    text = "\n".join(parts)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        print(f"wrote {args.out}")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
