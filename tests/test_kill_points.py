"""An optimize run killed outright (SIGKILL: nothing can be caught) between two of the writes at its
end. The real CLI runs in a subprocess that kills itself the moment a named file has been written
(every file of a run is written by an atomic rename, os.replace, so the kill lands between two
complete writes, as a power cut or the OOM killer would). Then `show`, `report` and `--resume` must
not claim more than the run wrote, and the resume must finish the run without measuring again.

The run's last writes, in order: test.json, best.<ext>, per_shape/*, per_shape/dispatch.json,
spec.yaml, results.json (the answer), report_plots/*.png, report.md, results.json (with its
headline), run.json ("done": the run is finished only once every file is there)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kerntune.record.outcome import OptimizeResult
from tests.conftest import REPO, run_cli, vector_add_folder, vector_add_spec

pytestmark = pytest.mark.host   # host-side behaviour: .ci/run's PoCL pass leaves these out

# the real `kerntune`, killed by SIGKILL right after (or, WITH "-", right before) the n-th atomic write
# of a file whose path ends with NAME and whose text holds WITH ("" for any)
KILLED = """
import os, signal, sys
name, with_, nth = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen = 0
_replace = os.replace

def replace(src, dst, *args, **kwargs):
    global seen
    if with_ != "-":
        _replace(src, dst, *args, **kwargs)
    if os.fspath(dst).endswith(name):
        with open(src if with_ == "-" else dst, "rb") as f:
            held = with_ == "-" or with_.encode() in f.read()
        if held:
            seen += 1
            if seen == nth:
                os.kill(os.getpid(), signal.SIGKILL)
    if with_ == "-":
        _replace(src, dst, *args, **kwargs)

os.replace = replace
from kerntune.cli.app import main
main(sys.argv[4:])
"""

ARGS = ["--device", "cpu", "--rounds", "1", "--evaluations", "3", "--repeats", "5", "--warmup", "1",
        "--final-repeats", "6", "--no-memcheck"]


def killed_after(name: str, with_: str, nth: int, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", KILLED, name, with_, str(nth), *args], capture_output=True,
                          text=True, cwd=REPO, timeout=600)


def _files(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*"))
            if p.is_file() and p.name != ".lock" and "report_plots" not in p.parts}


# (the file, what its text holds, which write of it): each the last write before the kill
POINTS = {
    "after-test": ("test.json", "", 1),
    "after-results": ("results.json", '"headline": ""', 1),
    "after-report": ("report.md", "", 1),
    "after-headline": ("results.json", "faster", 1),
}


@pytest.mark.parametrize("point", list(POINTS))
def test_a_run_killed_at_its_end_is_finished_by_resume_and_claims_nothing_before(tmp_path, point):
    kernel = vector_add_folder(tmp_path, vector_add_spec({"4K": 4096, "256K": 262144}))
    run = tmp_path / "run"
    r = killed_after(*POINTS[point], "optimize", str(kernel), *ARGS, "--run-dir", str(run))
    assert r.returncode == -signal.SIGKILL, r.stderr[-3000:]
    m = json.loads((run / "run.json").read_text())
    # the run is not finished until every file is there
    assert m["status"] == "running", m["status"]
    kept = _files(run)
    # show claims no result of a run that has not finished
    s = run_cli("show", str(run))
    assert s.returncode == 2 and f"--resume {run}" in " ".join(s.stderr.split()), (s.stdout, s.stderr)
    # report reports it as unfinished
    rep = run_cli("report", str(run), "--json")
    assert rep.returncode == 0, rep.stderr
    summary = json.loads(rep.stdout)
    assert summary["partial"] and any("has not finished" in n for n in summary["notes"]), summary["notes"]
    # --resume finishes it; a final test that was written is not run again
    r = run_cli("optimize", "--resume", str(run), "--json")
    assert r.returncode == 0, r.stderr
    result = OptimizeResult.model_validate(json.loads(r.stdout))
    assert result.headline
    assert json.loads((run / "run.json").read_text())["status"] == "done"
    assert (run / "report.md").exists() and result.headline in (run / "report.md").read_text()
    assert "Partial run" not in (run / "report.md").read_text()
    assert OptimizeResult.model_validate_json((run / "results.json").read_text()).headline == result.headline
    now = _files(run)
    for rel in ("baseline.json", "test.json", "best.cl", "per_shape/dispatch.json", "spec.yaml"):
        if rel in kept:
            assert now[rel] == kept[rel], f"{rel} was written again: measured again"
    s = run_cli("show", str(run))
    assert s.returncode == 0 and result.headline in " ".join(s.stdout.split()), (s.stdout, s.stderr)
    # a resume of the finished run changes nothing
    r = run_cli("optimize", "--resume", str(run), "--json")
    assert r.returncode == 0 and OptimizeResult.model_validate(json.loads(r.stdout)).headline == result.headline
    assert _files(run) == now


def test_a_run_left_done_without_its_end_is_finished_by_resume(tmp_path):
    """What a kerntune that wrote run.json's "done" before report.md and the headline left when killed
    between them: show printed it as finished (no headline, report.md named but missing) and --resume
    returned it as it was, report.md never written."""
    kernel = vector_add_folder(tmp_path, vector_add_spec({"4K": 4096, "256K": 262144}))
    run = tmp_path / "run"
    r = run_cli("optimize", str(kernel), *ARGS, "--run-dir", str(run), "--json")
    assert r.returncode == 0, r.stderr
    headline = json.loads(r.stdout)["headline"]
    data = json.loads((run / "results.json").read_text())
    (run / "results.json").write_text(json.dumps({**data, "headline": ""}, indent=2) + "\n")
    (run / "report.md").unlink()
    kept = _files(run)
    s = run_cli("show", str(run))
    said = " ".join(s.stderr.split())
    assert s.returncode == 2 and "results.json has no headline" in said and f"--resume {run}" in said, (s.stdout, said)
    rep = run_cli("report", str(run), "--json", "--out-dir", str(tmp_path / "elsewhere"))
    assert rep.returncode == 0 and any("no headline" in n for n in json.loads(rep.stdout)["notes"]), rep.stdout
    r = run_cli("optimize", "--resume", str(run), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["headline"] == headline, r.stderr
    assert headline in (run / "report.md").read_text() and "Partial run" not in (run / "report.md").read_text()
    assert json.loads((run / "results.json").read_text())["headline"] == headline
    now = _files(run)
    for rel in ("baseline.json", "test.json", "best.cl", "per_shape/dispatch.json", "spec.yaml", "run.json"):
        assert now[rel] == kept[rel], f"{rel} was written again"
    assert run_cli("show", str(run)).returncode == 0


def _tune_killed_before_its_kernels(tmp_path: Path) -> Path:
    """A small `kerntune tune` run of vector_add killed right before it writes best.cl (its final test
    stored); its run folder."""
    kernel = vector_add_folder(tmp_path, vector_add_spec({"4K": 4096, "256K": 262144}))
    run = tmp_path / "run"
    r = killed_after("best.cl", "-", 1, "tune", str(REPO / "templates/examples/vector_add.cl.j2"), "--spec",
                     str(kernel.with_suffix(".yaml")), "--device", "cpu", "--budget", "3", "--repeats", "5",
                     "--warmup", "1", "--final-repeats", "6", "--no-memcheck", "--run-dir", str(run))
    assert r.returncode == -signal.SIGKILL, r.stderr[-3000:]
    return run


def test_a_tune_run_killed_before_its_kernels_is_not_taken_for_finished(tmp_path):
    """`kerntune tune` records its search's stop, runs its final test (kept in tuning.db), then writes
    best.<ext>, per_shape/ and kernels.json and their digests. Killed before the kernels, show printed
    the run as finished (exit 0) and report did not say that its kernels were never written."""
    run = _tune_killed_before_its_kernels(tmp_path)
    assert not (run / "best.cl").exists()
    s = run_cli("show", str(run))
    said = " ".join(s.stderr.split())
    assert s.returncode == 2 and f"kerntune tune --resume {run}" in said, (s.stdout, said)
    rep = run_cli("report", str(run), "--json")
    summary = json.loads(rep.stdout)
    assert rep.returncode == 0 and summary["partial"] and any("has not finished" in n for n in summary["notes"])
    r = run_cli("tune", "--resume", str(run), "--json")
    assert r.returncode == 0, r.stderr
    assert (run / "best.cl").exists() and (run / "kernels.json").exists()
    assert run_cli("show", str(run)).returncode == 0
    assert not json.loads(run_cli("report", str(run), "--json").stdout)["partial"]


def _stored_test(run: Path):
    from kerntune.tuner.store import RunStore

    store = RunStore.in_dir(run, readonly=True)
    try:
        return store.get("test")
    finally:
        store.close()


def test_a_tune_run_resumed_after_its_final_test_keeps_the_test(tmp_path):
    """`tune --resume` of a run killed after its final test was stored (or of a finished run) ran the
    whole final test again: the search cleared the stored test when it restarted from its record. It is
    kept when the search picks the same kernels on the same device with the same confirmation settings,
    and run again when one of those changed (here --final-repeats)."""
    run = _tune_killed_before_its_kernels(tmp_path)
    test = _stored_test(run)
    assert test is not None
    r = run_cli("tune", "--resume", str(run))
    said = " ".join(r.stderr.split())
    assert r.returncode == 0, said
    assert "final test: kept from the run's record, not run again" in said, said
    assert "confirming the winners" not in said and "screening" not in said, said
    assert _stored_test(run) == test
    assert run_cli("show", str(run)).returncode == 0
    # more repeats asked for: the kept test does not speak for them, so it is run again
    r = run_cli("tune", "--resume", str(run), "--final-repeats", "7")
    said = " ".join(r.stderr.split())
    assert r.returncode == 0 and "not run again" not in said, said
    assert _stored_test(run) != test


def test_a_run_that_cannot_write_its_report_says_to_resume(tmp_path):
    """An optimize run whose report.md cannot be written (a full disk, a read-only folder: here a folder
    in report.md's place, which root cannot write either) said `report`'s hint, "choose a writable folder
    with --out-dir", which optimize does not take; the run is finished by --resume once the folder takes
    files again, and the hint says so."""
    kernel = vector_add_folder(tmp_path, vector_add_spec({"4K": 4096, "256K": 262144}))
    run = tmp_path / "run"
    r = killed_after(*POINTS["after-results"], "optimize", str(kernel), *ARGS, "--run-dir", str(run))
    assert r.returncode == -signal.SIGKILL, r.stderr[-3000:]
    assert not (run / "report.md").exists()
    (run / "report.md").mkdir()
    r = run_cli("optimize", "--resume", str(run))
    said = " ".join(r.stderr.split())
    assert r.returncode != 0 and "Traceback" not in r.stderr, said
    assert "cannot write the report" in said and "report.md" in said, said
    assert f"kerntune optimize --resume {run}" in said and "--out-dir" not in said, said
    # `kerntune report` can write elsewhere: its hint keeps --out-dir
    rep = run_cli("report", str(run))
    assert rep.returncode != 0 and "--out-dir" in " ".join(rep.stderr.split()), rep.stderr
    (run / "report.md").rmdir()
    r = run_cli("optimize", "--resume", str(run))
    assert r.returncode == 0, r.stderr
    assert json.loads((run / "run.json").read_text())["status"] == "done"
