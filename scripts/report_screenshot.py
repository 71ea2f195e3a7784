"""Regenerate docs/report.png: a screenshot of `kerntune report --html` for an
optimize run of a library kernel, taken in headless Chromium (Debian's
`chromium` package, driven by playwright; nothing is downloaded).

    python scripts/report_screenshot.py                  # optimize fused_add_rmsnorm on the CPU (~30 s), then shoot
    python scripts/report_screenshot.py --run RUN_DIR    # shoot the report of an existing optimize run
    python scripts/report_screenshot.py --until convergence --out /tmp/report.png

The report is written to a scratch folder (--out-dir), so an existing run is
left as it is. The PNG keeps the page from the top down to the end of the
--until section (default: the run time figure and its table) and is reduced
to 256 colours to stay small.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KERNEL = "kernels/sglang/fused_add_rmsnorm/fused_add_rmsnorm.cl"
OPTIMIZE = ["--shape-set", "cpu", "--device", "cpu", "--rounds", "3", "--evaluations", "60", "--repeats", "30",
            "--final-repeats", "60"]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def kerntune(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "kerntune", *args], cwd=REPO, check=True, stdout=subprocess.DEVNULL)


def shoot(page: Path, out: Path, width: int, until: str, chromium: str) -> None:
    from PIL import Image
    from playwright.sync_api import sync_playwright

    full = out.with_suffix(".full.png")
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        ctx = p.chromium.launch_persistent_context(profile, executable_path=chromium, args=CHROMIUM_ARGS,
                                                   headless=True, viewport={"width": width, "height": 900})
        tab = ctx.new_page()
        tab.goto(page.resolve().as_uri(), wait_until="load")
        height = tab.evaluate(f"Math.ceil(document.getElementById({until!r}).getBoundingClientRect().bottom "
                              "+ window.scrollY + 16)")
        tab.screenshot(path=str(full), full_page=True)
        ctx.close()
    with Image.open(full) as im:
        im = im.convert("RGB").crop((0, 0, width, min(height, im.height)))
        im.quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(out, optimize=True)
    full.unlink()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", type=Path, help="an existing optimize run directory (default: make one)")
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "report.png")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--until", default="times", help="the last section to keep (an id: speedup, times, "
                                                     "convergence, bandwidth, failures, trace, diff)")
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kerntune-shot-") as tmp:
        run = args.run
        if run is None:
            run = Path(tmp) / "fused_add_rmsnorm"
            print(f"optimizing {KERNEL} on the CPU into {run} ...")
            kerntune("optimize", KERNEL, *OPTIMIZE, "--run-dir", str(run), "--json")
        kerntune("report", str(run), "--html", "--out-dir", str(Path(tmp) / "report"))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        shoot(Path(tmp) / "report" / "report.html", args.out, args.width, args.until, args.chromium)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
