"""Docs that run: every fenced block of README.md and docs/*.md is extracted
from the Markdown and checked, so a doc that drifts fails CI.

Every block carries an annotation, an HTML comment on the line before it
(invisible in rendered Markdown); a block without one fails this test:

    <!-- doc: run [cwd=DIR] [skip=N,M-K: why] -->  shell commands, one per line (``\\`` continues, ``#``
                                                   comments); each runs and must exit 0; ``skip`` names
                                                   lines that cannot run here, and why
    <!-- doc: synopsis -->           usage lines: each `kerntune COMMAND` named exists (its --help works),
                                     each `python SCRIPT` exists
    <!-- doc: spec KERNEL -->        a spec: saved beside a copy of KERNEL, then `kerntune check` and
                                     `kerntune bench --shape-set cpu` of KERNEL with it
    <!-- doc: template SPEC -->      a template: parsed, checked against SPEC, every configuration rendered
    <!-- doc: yaml: why -->          a fragment: parsed as YAML
    <!-- doc: python -->             run with this Python, in the scratch folder
    <!-- doc: layout: why -->        a run directory's layout: every entry exists in a real optimize run
    <!-- doc: tree -->               the package layout: every module it names exists
    <!-- doc: output: why -->        sample output: not run (reported as skipped, with the reason)

How commands run (the rules that keep this test to a few minutes):

* in a scratch folder holding copies of kernels/, templates/ and tests/data/ (the checkout is
  never written), with the `kerntune` under test;
* in a ``&&`` chain, ``python3 -m venv``, ``pip install`` and ``.venv/bin/python -m pytest`` are not
  run (this test runs inside an installed environment, and is itself that suite);
  ``.venv/bin/kerntune`` is the installed `kerntune`;
* long runs get a small budget appended (the last value of an option wins): optimize
  ``--rounds 1 --evaluations 4 --repeats 5 --warmup 1 --final-repeats 10``, tune ``--budget 4
  --repeats 5 --warmup 1 --final-repeats 6``, bench ``--repeats 5 --warmup 1``, regress
  ``--batches 3 --repeats 5 --warmup 1 --no-memcheck``; optimize and tune write their run
  directory into the scratch folder unless the command names one.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.conftest import KERNTUNE, REPO

pytestmark = pytest.mark.host   # host-side behaviour: .ci/run's PoCL pass leaves these out

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
ANNOTATION = re.compile(r"^<!--\s*doc:\s*(?P<kind>[a-z]+)(?P<rest>.*?)\s*-->\s*$")
BUDGET = {
    "optimize": ["--rounds", "1", "--evaluations", "4", "--repeats", "5", "--warmup", "1", "--final-repeats", "10"],
    "tune": ["--budget", "4", "--repeats", "5", "--warmup", "1", "--final-repeats", "6"],
    "bench": ["--repeats", "5", "--warmup", "1"],
    "regress": ["--batches", "3", "--repeats", "5", "--warmup", "1", "--no-memcheck"],
}
NOT_RUN = (re.compile(r"^python3? -m venv\b"), re.compile(r"(^|/)pip3? install\b"),
           re.compile(r"(^|/)python3? -m pytest\b"))


@dataclass
class Block:
    doc: Path
    line: int                    # the fence's line
    info: str                    # the fence's info string (bash, yaml, ...)
    kind: str                    # the annotation's kind ("" when there is none)
    rest: str                    # the rest of the annotation
    text: str

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(REPO)}:{self.line}"


def blocks() -> list[Block]:
    out = []
    for doc in DOCS:
        lines = doc.read_text().splitlines()
        i = 0
        while i < len(lines):
            if lines[i].startswith("```"):
                start, info = i, lines[i][3:].strip()
                j = i + 1
                while j < len(lines) and not lines[j].startswith("```"):
                    j += 1
                m = ANNOTATION.match(lines[start - 1]) if start > 0 else None
                out.append(Block(doc, start + 1, info, m["kind"] if m else "", (m["rest"] if m else "").strip(),
                                 "\n".join(lines[start + 1:j])))
                i = j + 1
            else:
                i += 1
    return out


BLOCKS = blocks()


def commands(b: Block) -> list[tuple[int, str]]:
    """(line in the doc, command) for each command of a block; continuation lines joined."""
    out, pending, first = [], "", 0
    for n, line in enumerate(b.text.splitlines(), start=b.line + 1):
        code = line.split(" #")[0].rstrip() if not line.lstrip().startswith("#") else ""
        if not code.strip():
            continue
        if not pending:
            first = n
        if code.endswith("\\"):
            pending += code[:-1] + " "
            continue
        out.append((first, (pending + code).strip()))
        pending = ""
    return out


def _skips(rest: str) -> tuple[set[int], str]:
    m = re.search(r"skip=([\d,\-]+)(?::\s*(.*))?", rest)
    if not m:
        return set(), ""
    wanted: set[int] = set()
    for part in m[1].split(","):
        a, _, b = part.partition("-")
        wanted |= set(range(int(a), int(b or a) + 1))
    return wanted, (m[2] or "").strip()


def _cwd(rest: str) -> str:
    m = re.search(r"cwd=(\S+)", rest)
    return m[1] if m else "."


def run_items():
    items = []
    for b in BLOCKS:
        if b.kind != "run":
            continue
        skip, why = _skips(b.rest)
        for k, (line, cmd) in enumerate(commands(b), start=1):
            marks = [pytest.mark.skip(reason=f"{b.doc.name}:{line}: {why}")] if k in skip else []
            items.append(pytest.param(b, cmd, id=f"{b.doc.name}:{line}", marks=marks))
    return items


def other_items():
    items = []
    for b in BLOCKS:
        if b.kind == "run":
            continue
        marks = [pytest.mark.skip(reason=f"{b.where}: {b.rest.lstrip(':').strip() or 'sample output'}")] \
            if b.kind == "output" else []
        items.append(pytest.param(b, id=f"{b.doc.name}:{b.line}:{b.kind or 'unannotated'}", marks=marks))
    return items


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("docs")
    for sub in ("kernels", "templates", "tests/data"):
        shutil.copytree(REPO / sub, d / sub)
    (d / "bench").mkdir()
    return d


def _argv(cmd: str, scratch: Path) -> list[str]:
    argv = shlex.split(cmd)
    if argv[0].endswith("bin/kerntune") or argv[0] == "kerntune":
        argv = [*KERNTUNE, *argv[1:]]
        sub = argv[len(KERNTUNE)] if len(argv) > len(KERNTUNE) else ""
        argv += BUDGET.get(sub, [])
        if sub in ("optimize", "tune") and "--run-dir" not in argv and "--resume" not in argv \
                and "--dry-run" not in argv:
            argv += ["--run-dir", str(scratch / "runs" / f"{sub}-{len(list((scratch / 'runs').glob('*'))) if (scratch / 'runs').exists() else 0}")]
    elif argv[0] in ("python", "python3"):
        argv = [sys.executable, *argv[1:]]
    return argv


@pytest.mark.parametrize("block,cmd", run_items())
def test_command_runs(block: Block, cmd: str, scratch: Path):
    cwd = scratch / _cwd(block.rest)
    for part in (p.strip() for p in cmd.split("&&")):
        if any(rx.search(part) for rx in NOT_RUN):
            continue
        r = subprocess.run(_argv(part, scratch), cwd=cwd, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, f"{block.where}: `{part}` exited {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
        assert "Traceback" not in r.stderr


@pytest.mark.parametrize("block", other_items())
def test_block(block: Block, scratch: Path, tmp_path: Path):
    assert block.kind, f"{block.where}: a fenced block without a `<!-- doc: ... -->` annotation (see tests/test_docs.py)"
    check = CHECKS.get(block.kind)
    assert check is not None, f"{block.where}: unknown annotation kind {block.kind!r}"
    check(block, scratch, tmp_path)


def _synopsis(b: Block, scratch: Path, tmp: Path) -> None:
    seen = set()
    for line in b.text.splitlines():
        if not line.strip() or line[0].isspace():
            continue                                   # a continuation of the usage above
        words = line.split()
        if words[0] == "kerntune":
            sub = [w.split("|")[0] for w in words[1:3] if re.fullmatch(r"[a-z][a-z-|]*", w)]
            sub = sub[:2] if len(sub) == 2 and sub[0] in ("export", "score", "kt-cache") else sub[:1]
            if tuple(sub) in seen:
                continue
            seen.add(tuple(sub))
            r = subprocess.run([*KERNTUNE, *sub, "--help"], capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, f"{b.where}: `kerntune {' '.join(sub)} --help` exited {r.returncode}: {r.stderr}"
        elif words[0] in ("python", "python3"):
            assert (REPO / words[1]).is_file(), f"{b.where}: {words[1]} does not exist"
        else:
            pytest.fail(f"{b.where}: a synopsis line that is neither kerntune nor python: {line}")
    assert seen or b.text.strip().startswith("python"), f"{b.where}: no command in the synopsis"


def _spec(b: Block, scratch: Path, tmp: Path) -> None:
    kernel = Path(b.rest.split()[0])
    folder = tmp / "spec"
    shutil.copytree(REPO / kernel.parent, folder)
    spec = folder / "doc-spec.yaml"
    spec.write_text(b.text + "\n")
    for args in (["check", str(folder / kernel.name), "--spec", str(spec)],
                 ["bench", str(folder / kernel.name), "--spec", str(spec), "--shape-set", "cpu", *BUDGET["bench"]]):
        r = subprocess.run([*KERNTUNE, *args], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"{b.where}: `kerntune {' '.join(args)}` exited {r.returncode}:\n{r.stderr}"


def _template(b: Block, scratch: Path, tmp: Path) -> None:
    from kerntune.spec.load import load_file
    from kerntune.tuner.space import Space
    from kerntune.tuner.template import check_against_spec, parse_template

    lang = "opencl" if "__kernel" in b.text else "cuda"
    t = parse_template(b.text + "\n", lang, f"{b.where} (template)")
    spec = load_file(REPO / b.rest.split()[0]).spec
    check_against_spec(t, spec)
    space = Space.of(t)
    for config in space.configs():
        assert t.kernel_name(spec, config) in t.render(config, spec)
        t.options(config, spec)


def _yaml(b: Block, scratch: Path, tmp: Path) -> None:
    assert yaml.safe_load(b.text) is not None, f"{b.where}: empty YAML"


def _python(b: Block, scratch: Path, tmp: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-c", b.text], cwd=scratch, capture_output=True, text=True, timeout=600,
                       env=env)
    assert r.returncode == 0, f"{b.where}: the Python example failed:\n{r.stderr[-3000:]}"


def _layout(b: Block, scratch: Path, tmp: Path) -> None:
    run = tmp / "run"
    r = subprocess.run([*KERNTUNE, "optimize", "kernels/examples/vector_add.cl", "--device", "cpu", "--shape-set",
                        "cpu", *BUDGET["optimize"], "--run-dir", str(run)], cwd=scratch, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    for line in b.text.splitlines():
        if not line or line[0] == " ":
            continue                                   # a continuation of the entry above
        entry = line.split()[0]
        pattern = entry.replace("NN", "[0-9][0-9]")
        assert list(run.glob(pattern.rstrip("/"))), f"{b.where}: {entry} is not in a real run ({run})"


def _tree(b: Block, scratch: Path, tmp: Path) -> None:
    folder = None
    named = 0
    for line in b.text.splitlines():
        m = re.match(r"^(\s*)(\S+)", line)
        if not m:
            continue
        head = m[2]
        if line.startswith("kerntune/"):
            continue
        if len(m[1]) == 2:                              # a folder or a module of the package
            folder = head.rstrip("/") if head.endswith("/") else ""
            if not head.endswith("/") and head.endswith(".py"):
                assert (REPO / "kerntune" / head).is_file(), f"{b.where}: kerntune/{head} does not exist"
                named += 1
        elif len(m[1]) == 0:                            # a top-level folder of the checkout
            assert (REPO / head.rstrip("/")).exists(), f"{b.where}: {head} does not exist"
            folder = None
            continue
        if folder:
            for name in re.findall(r"\b([a-z_]+\.py)\b", line):
                assert (REPO / "kerntune" / folder / name).is_file(), f"{b.where}: kerntune/{folder}/{name} is missing"
                named += 1
    assert named > 20, f"{b.where}: the layout names only {named} modules"


CHECKS = {"synopsis": _synopsis, "spec": _spec, "template": _template, "yaml": _yaml, "python": _python,
          "layout": _layout, "tree": _tree}
