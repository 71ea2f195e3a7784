"""What people see: every command's output piped (captured, as in CI logs), in
an 80-column terminal and in a wide one. Terminals are real pseudo-terminals,
read back through a terminal emulator (tests/terminal.py): what is checked is
the screen the person is left with."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from tests.conftest import REPO, run_cli, vector_add_folder, vector_add_spec, write
from tests.terminal import run_tty

# long labels on purpose: they must come out whole everywhere
SPEC = vector_add_spec({"small-4096-elements": 4096, "large-262144-elements": 262144})
LABELS = ("small-4096-elements", "large-262144-elements")
OPTIMIZE = ["--device", "cpu", "--rounds", "2", "--evaluations", "8", "--repeats", "5", "--warmup", "1",
            "--final-repeats", "10"]
PROGRESS = ("best so far", "tuning:", "evaluations (", "interleaved (", "is writing a template")
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    return vector_add_folder(tmp_path_factory.mktemp("k"), SPEC)


def _no_cut(text: str) -> None:
    assert "…" not in text, text


def _squeeze(text: str) -> str:
    return "".join(text.split())


def _result(run) -> dict:
    return json.loads((run / "results.json").read_text())


@pytest.mark.host   # host-side behaviour: .ci/run's PoCL pass leaves it out
def test_optimize_piped(kernel, tmp_path):
    run = tmp_path / "run"
    r = run_cli("optimize", str(kernel), *OPTIMIZE, "--run-dir", str(run))
    assert r.returncode == 0, r.stderr
    for stream in (r.stdout, r.stderr):
        assert "\r" not in stream and not ANSI.search(stream.encode())     # plain lines, nothing redrawn
        _no_cut(stream)
    out = r.stdout.splitlines()
    assert out[0] == _result(run)["headline"]                  # the result first, whole, on its own line
    assert not any(p in line for line in out for p in PROGRESS)  # progress stays on stderr
    err = r.stderr.splitlines()
    assert err[0].startswith("run directory: ") and any(line.startswith("round 1/2: ") for line in err)
    assert len(err) == len(set(err))                           # each step once
    for label in LABELS:                                       # the table, or its records: labels whole
        assert any(line.lstrip().startswith(label) for line in out), label
    assert out[-1].startswith(f"wrote {run}/best.cl")


@pytest.mark.parametrize("columns", [80, pytest.param(200, marks=pytest.mark.host)])   # 80: a long device name wraps
def test_optimize_in_a_terminal(kernel, tmp_path, columns):
    run = tmp_path / "run"
    s = run_tty("optimize", str(kernel), *OPTIMIZE, "--run-dir", str(run), columns=columns)
    assert s.returncode == 0, s.text
    _no_cut(s.text)
    assert not any(p in line for line in s.lines for p in PROGRESS), s.text   # the live panel was erased
    result = _result(run)
    assert _squeeze(result["headline"]) in _squeeze(s.text)       # the terminal wraps long lines
    # the result right after the run's title (which the terminal may wrap: PoCL's device name is long)
    manifest = json.loads((run / "run.json").read_text())
    title = _squeeze(f"optimizing {kernel.name} on {manifest['device']['name']} with the rules generator")
    first = next(i for i, line in enumerate(s.lines) if line.startswith("optimizing "))
    assert _squeeze("".join(s.lines[first:])).startswith(title + _squeeze(result["headline"][:40])), s.text
    for w in result["per_shape"]:
        assert w["label"] in s.text
        if w["winner"] != "original":
            assert w["winner"] in "".join(s.lines)
    table = [line for line in s.lines if line.split()[:2] == ["shape", "original"]]
    assert table or columns < 200                   # a table where it fits (else one record per shape)
    assert all(len(line) <= columns for line in s.lines)


@pytest.mark.host   # host-side behaviour: .ci/run's PoCL pass leaves it out
def test_ctrl_c_leaves_no_progress_on_screen(kernel, tmp_path):
    run = tmp_path / "run"
    s = run_tty("optimize", str(kernel), "--device", "cpu", "--rounds", "2", "--evaluations", "60", "--repeats", "20",
                "--warmup", "1", "--run-dir", str(run), columns=100, interrupt_when=b"tuning:", interrupt_after=1)
    assert s.returncode == 130, s.text
    assert not any(p in line for line in s.lines for p in PROGRESS), s.text
    said = f"interrupted: the run is kept in {run}; continue it with `kerntune optimize --resume {run}`"
    assert _squeeze(said) in _squeeze("".join(s.lines[-4:]))      # the terminal wrapped it; read it back
    assert json.loads((run / "run.json").read_text())["status"] == "interrupted"


@pytest.mark.parametrize("columns", [80, 200, None])
def test_devices_ids_come_out_whole(columns):
    if columns is None:
        r = run_cli("devices", "--profiles")
        assert r.returncode == 0
        text = r.stdout
    else:
        s = run_tty("devices", "--profiles", columns=columns)
        assert s.returncode == 0
        text = s.text
    _no_cut(text)
    ids = [d["id"] for d in json.loads(run_cli("devices", "--json").stdout)["devices"]]
    assert ids and all(re.search(rf"(^|\s){re.escape(i)}(:|\s|$)", text, re.M) for i in ids), text
    for profile in ("h100", "titan-rtx", "rtx4090"):
        assert re.search(rf"(^|\s){profile}(:|\s)", text, re.M), profile


@pytest.mark.parametrize("columns", [80, 200, None])
def test_bench_against_labels_come_out_whole(kernel, columns, tmp_path):
    other = write(tmp_path, "vector_add.cl", kernel.read_text().replace("a[i] + b[i]", "b[i] + a[i]"))
    shutil.copy(kernel.parent / "vector_add.yaml", tmp_path / "vector_add.yaml")
    shutil.copy(kernel.parent / "reference.py", tmp_path / "reference.py")
    args = ["bench", str(kernel), "--against", str(other), "--repeats", "5", "--warmup", "1", "--no-memcheck"]
    if columns is None:
        r = run_cli(*args)
        assert r.returncode == 0, r.stderr
        text = r.stdout
        assert not ANSI.search(r.stderr.encode()) and "\r" not in r.stderr
    else:
        s = run_tty(*args, columns=columns)
        assert s.returncode == 0, s.text
        text = s.text
        assert not any(p in line for line in s.lines for p in ("timing vector_add", "starting the worker"))
    _no_cut(text)
    for label in LABELS:
        assert label in text
    assert "geometric-mean speedup" in text


def test_an_error_after_progress_is_on_its_own_line(tmp_path):
    """A template mistake found while the progress panel is up: piped, the error is a line of its own."""
    t = write(tmp_path, "va.cl.j2", (REPO / "templates/examples/vector_add.cl.j2").read_text()
              .replace("{{ EPT }} element", "{{ NOPE }} element"))
    r = run_cli("tune", str(t), "--spec", str(REPO / "kernels/examples/vector_add.yaml"), "--device", "cpu",
                "--budget", "2", "--repeats", "3", "--warmup", "1", "--run-dir", str(tmp_path / "run"))
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert any(line.startswith("error: ") and "va.cl.j2:13" in line for line in lines), r.stderr
    s = run_tty("tune", str(t), "--spec", str(REPO / "kernels/examples/vector_add.yaml"), "--device", "cpu",
                "--budget", "2", "--repeats", "3", "--warmup", "1", "--run-dir", str(tmp_path / "run2"), columns=80)
    assert s.returncode == 2 and any(line.startswith("error: ") for line in s.lines), s.text
    assert not any("evaluations" in line for line in s.lines), s.text


@pytest.mark.host   # host-side behaviour: .ci/run's PoCL pass leaves it out
@pytest.mark.parametrize("width", [72, 100, 120])
def test_a_record_too_long_for_the_width_breaks_between_values_never_inside_one(width):
    """A piped table too wide for $COLUMNS falls back to one record per row; a record longer than the
    width continues on the next line, and every value (a configuration key with no spaces, a phrase
    with spaces) stays whole on one line."""
    from io import StringIO

    from kerntune.cli.output import _Console, grid, print_table

    key = "round 1: BLOCK=1024,EPT=1,RESTRICT=False,FAST_MATH=True"
    phrase = "the best configuration of round two"
    rows = [[f"shape-{i}", "519.5 µs", "106.8 µs", "4.66x [4.06, 5.35]", "248%", key, phrase] for i in range(3)]
    g = grid(["shape", "original", "best", "speedup [95% CI]", "% of copy", "winner", "note"], rows)
    buf = StringIO()
    print_table(g, _Console(file=buf, width=width, highlight=False, soft_wrap=True))
    lines = buf.getvalue().splitlines()
    assert all(len(line) <= width for line in lines), lines
    for value in ("4.66x [4.06, 5.35]", key, phrase):
        assert sum(value in line for line in lines) == 3, (value, lines)     # whole, once per record
    assert sum(line.startswith("  shape-") for line in lines) == 3


def test_every_help_names_each_option_in_full_in_80_columns(monkeypatch):
    """In an 80-column terminal, and piped with COLUMNS=80, rich shrank the option-name column of the help
    panels and cut names with an ellipsis ('--allow-device-…' in `regress --help`), and a URL in a help
    text ('http://localhost…' in `optimize --help`): no help may show a cut word."""
    import typer

    from kerntune.cli.app import app

    monkeypatch.setenv("COLUMNS", "80")
    todo = [((), typer.main.get_command(app))]
    while todo:
        path, cmd = todo.pop()
        todo += [((*path, name), sub) for name, sub in getattr(cmd, "commands", {}).items()]
        names = [opt for param in cmd.params for opt in param.opts + param.secondary_opts if opt.startswith("--")]
        piped = run_cli(*path, "--help")
        screen = run_tty(*path, "--help", columns=80, rows=400)
        for seen in (piped.stdout, screen.text):
            for name in names:
                assert re.search(rf"{re.escape(name)}(?![\w-])", seen), (path, name, seen)
            assert "…" not in seen and max(map(len, seen.splitlines())) <= 80, (path, seen)
