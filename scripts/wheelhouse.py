#!/usr/bin/env python3
"""Build an offline wheelhouse of kerntune's dependencies for a machine that cannot reach a package index.

Downloads binary wheels for the target's Python and platform (not this machine's), with every
dependency resolved, then drops the packages the target already has. Copy the folder over and
install it there with no index:

    # here (online): the target runs Python 3.12 and already has what `pip list` printed there
    python scripts/wheelhouse.py --python 3.12 --have have.txt --without pyopencl --dest .whl
    # there (offline), from the checkout:
    python3 -m pip install --no-index --no-deps --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site:$PWD

``have.txt`` is the target's ``python3 -m pip list --format=freeze`` (or one name per line).
``--without`` leaves a requirement out with everything only it needs (pyopencl and its PoCL
runtime, about 40 MB, serve only the OpenCL backend; a CUDA box runs CuPy).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64")


def norm(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(extras: list[str]) -> list[str]:
    """kerntune's dependencies (and those of ``extras``) as written in pyproject.toml."""
    text = (REPO / "pyproject.toml").read_text()
    try:
        import tomllib
        project = tomllib.loads(text)["project"]
        reqs = list(project["dependencies"])
        for extra in extras:
            if extra not in project.get("optional-dependencies", {}):
                raise SystemExit(f"error: kerntune has no extra {extra!r}")
            reqs += project["optional-dependencies"][extra]
        return reqs
    except ModuleNotFoundError:   # Python 3.10: the dependency list is one flat array of strings
        block = re.search(r"^dependencies\s*=\s*\[(.*?)^\]", text, re.S | re.M)
        if extras or block is None:
            raise SystemExit("error: reading extras needs Python 3.11+ (tomllib)") from None
        return re.findall(r'"([^"]+)"', block.group(1))


def have_names(path: Path | None) -> set[str]:
    if path is None:
        return set()
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise SystemExit(f"error: cannot read {path}: {e.strerror}") from None
    return {norm(re.split(r"[=<>!~ ;\[]", ln.strip(), maxsplit=1)[0]) for ln in lines
            if ln.strip() and not ln.startswith(("#", "Package", "---"))}


def wheel_name(path: Path) -> str:
    return norm(path.name.split("-")[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--dest", type=Path, default=REPO / ".whl", help="folder for the wheels (default: .whl, git-ignored)")
    ap.add_argument("--python", default="3.12", help="the target's Python version (default: 3.12)")
    ap.add_argument("--platform", action="append", help=f"wheel platform tag (repeatable; default: {', '.join(PLATFORMS)})")
    ap.add_argument("--extra", action="append", default=[], help="also kerntune's extra NAME (e.g. test, cuda13)")
    ap.add_argument("--without", default="", help="comma-separated requirements to leave out (e.g. pyopencl,openai)")
    ap.add_argument("--have", type=Path, help="the target's `pip list --format=freeze`: those packages are not downloaded")
    args = ap.parse_args()
    if not re.fullmatch(r"3\.\d+", args.python):
        ap.error(f"--python takes a version like 3.12, not {args.python!r}")

    without = {norm(w) for w in args.without.split(",") if w.strip()}
    reqs = [r for r in requirements(args.extra) if norm(re.split(r"[=<>!~ ;\[]", r, maxsplit=1)[0]) not in without]
    have = have_names(args.have)
    args.dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "--python-version", args.python,
               "--implementation", "cp", "-d", tmp]
        for p in args.platform or PLATFORMS:
            cmd += ["--platform", p]
        print("$ " + " ".join(cmd + reqs), file=sys.stderr)
        if subprocess.run(cmd + reqs).returncode != 0:
            print("error: pip could not download every wheel (see above); a package with no binary wheel for this "
                  "platform needs another --platform tag, or --without", file=sys.stderr)
            return 1
        kept, skipped = [], []
        for whl in sorted(Path(tmp).glob("*.whl")):
            if wheel_name(whl) in have:
                skipped.append(whl.name)
                continue
            target = args.dest / whl.name
            target.write_bytes(whl.read_bytes())
            kept.append(target)
    size = sum(p.stat().st_size for p in kept)
    print(f"{len(kept)} wheels, {size / 2**20:.1f} MiB, in {args.dest}"
          + (f" ({len(skipped)} the target has were left out)" if skipped else ""), file=sys.stderr)
    for p in kept:
        print(p.name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
