"""A finished run's record is checked when it is read back (kerntune.record.audit): a record edited
by hand, a test file lost, or a kernel file changed after the run is not shown as verified by
`show`, `report`, `optimize --resume`, nor used by `score fast-p` and `export` (found by an
adversarial tour: an edited results.json showed 9.78x, with an interval whose low end was above
its high end; a deleted test.json still said "verified again"). Every case edits a copy of one
real optimize run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kerntune.record.audit import audit
from kerntune.record.store import RunDir
from tests.conftest import REPO, run_cli


def _json(p: Path, edit) -> None:
    data = json.loads(p.read_text())
    edit(data)
    p.write_text(json.dumps(data))


def _general(d: dict) -> dict:
    """The general candidate's entry in the test's candidate list."""
    g = d["general"]
    return next(c for c in d["candidates"] if c["key"] == g["key"] and c["round"] == g["round"])


def _both(run: Path, edit) -> None:
    """The same edit of the final test in test.json and in results.json (a careful forger)."""
    _json(run / "test.json", edit)
    test = json.loads((run / "test.json").read_text())
    _json(run / "results.json", lambda r: r.update(test=test))


def _ratio(r: dict) -> None:
    r["general_interval"].update(ratio=9.78, lo=9.5, hi=10.1)
    r["general_speedup"] = 9.78


def _low(t: dict) -> None:          # the interval no longer clears the bar, the verdict still says faster
    for c in (t["general"], _general(t)):
        c["geomean"]["lo"] = 0.5


def _inverted(t: dict) -> None:
    for c in (t["general"], _general(t)):
        c["geomean"]["lo"] = c["geomean"]["hi"] * 2


def _unverified_winner(t: dict) -> None:
    w = next(w for w in t["per_shape"] if w["winner"] != "original")
    c = next(c for c in t["candidates"] if c["key"] == w["winner"] and c["round"] == w["round"])
    c["status"], c["stage"] = "wrong_result", "verify"


TAMPERING = {
    "results-ratio": (lambda run: _json(run / "results.json", _ratio), "results.json's general kernel"),
    "test-removed": (lambda run: (run / "test.json").unlink(), "test.json is missing"),
    "test-only": (lambda run: _json(run / "test.json", _low), "disagree on the final test"),
    "verdict": (lambda run: _both(run, _low), "does not follow from its interval"),
    "inverted": (lambda run: _both(run, _inverted), "is not an interval"),
    "winner": (lambda run: _both(run, _unverified_winner), "is not a verified candidate"),
    "config": (lambda run: _json(run / "results.json", lambda r: r["general_config"].update(EPT=999)),
               "results.json's general configuration"),
    "device": (lambda run: _json(run / "results.json", lambda r: r.update(device="NVIDIA H100 (cuda:0)")),
               "results.json names the device"),
    "files-best": (lambda run: _json(run / "results.json", lambda r: r["files"].update(best="rounds/01/input.cl")),
                   "as its best file"),
    "digest-dropped": (lambda run: _json(run / "results.json", lambda r: r["files"]["digests"].pop("best.cl")),
                       "has no digest for best.cl"),
    "kernel-edited": (lambda run: (run / "best.cl").write_text((run / "best.cl").read_text() + "// edited\n"),
                      "best.cl was changed after the run"),
    "kernel-removed": (lambda run: next((run / "per_shape").glob("*.cl")).unlink(), "is missing: the run wrote it"),
}


@pytest.fixture
def copy(improved_run, tmp_path) -> Path:
    dest = tmp_path / "run"
    shutil.copytree(improved_run, dest)
    return dest


def test_the_untouched_record_holds_together(copy):
    assert json.loads((copy / "results.json").read_text())["files"]["digests"], "the run records its files' digests"
    assert audit(RunDir.open(copy)) == []
    r = run_cli("show", str(copy))
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("case", sorted(TAMPERING))
def test_a_changed_record_is_found(copy, case):
    tamper, expected = TAMPERING[case]
    tamper(copy)
    problems = audit(RunDir.open(copy))
    assert any(expected in p for p in problems), problems


def test_show_and_resume_refuse_an_edited_record(copy):
    _json(copy / "results.json", _ratio)
    r = run_cli("show", str(copy))
    assert r.returncode == 2 and "does not hold together" in r.stderr and "9.780" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    r = run_cli("show", str(copy), "--json")
    assert r.returncode == 2 and json.loads(r.stdout)["error"]["code"] == "run"
    r = run_cli("optimize", "--resume", str(copy))
    assert r.returncode == 2 and "does not hold together" in r.stderr, r.stderr


def test_report_marks_an_edited_record_and_fails(copy):
    _both(copy, _low)
    r = run_cli("report", str(copy), "--json")
    assert r.returncode == 2, r.stderr
    data = json.loads(r.stdout)            # one document: the report's summary with the error in it
    assert data["record_problems"] and data["error"]["code"] == "run"
    assert data["headline"].startswith("Not to be trusted")
    md = (copy / "report.md").read_text()
    assert "**Not trusted.**" in md and "does not follow from its interval" in md


def test_scoring_and_export_leave_an_edited_run_out(copy, improved_run, tmp_path):
    _both(copy, _low)
    r = run_cli("score", "fast-p", str(copy), "--json")     # nothing else to score: an error that says why
    error = json.loads(r.stdout)["error"]                   # (show's words: record/ending.py, audit)
    assert r.returncode == 2 and "does not hold together" in error["message"], r.stdout
    assert "restore the run directory" in error["hint"] and "does not follow from its interval" in error["detail"]
    r = run_cli("export", "pairs", str(copy), "-o", str(tmp_path / "pairs.jsonl"))   # alone: refused, as show does
    assert r.returncode == 2 and "does not hold together" in r.stdout + r.stderr, r.stdout + r.stderr
    # beside a run that holds together: left out and listed, the other one's pairs written
    r = run_cli("export", "pairs", str(copy), str(improved_run), "-o", str(tmp_path / "pairs.jsonl"))
    assert r.returncode == 0 and "does not hold together" in r.stdout + r.stderr, r.stdout + r.stderr
    pairs = [json.loads(line) for line in (tmp_path / "pairs.jsonl").read_text().splitlines()]
    assert pairs and all(str(copy) not in json.dumps(p) for p in pairs)


def test_a_copied_runs_round_names_its_own_template(copy, improved_run):
    """`kerntune show RUN/rounds/01` of a copied or moved run named the template in the folder the run was
    made in."""
    r = run_cli("show", str(copy / "rounds" / "01"))
    assert r.returncode == 0, r.stderr
    assert str(copy / "rounds" / "01" / "template") in r.stdout and str(improved_run) not in r.stdout, r.stdout


@pytest.mark.parametrize("command", [["show"], ["optimize", "--resume"]])
def test_show_and_resume_rederive_the_headline(copy, command):
    """results.json's headline (the sentence `show` prints first, and `--resume` of a finished run
    prints again) is derived again from the numbers."""
    _json(copy / "results.json", lambda r: r.update(headline=r["headline"].replace("faster", "faster (edited)")))
    r = run_cli(*command, str(copy))
    assert r.returncode == 2 and "headline is not what its numbers say" in r.stderr, r.stderr


def _tuned(tmp_path, budget: int):
    """A short `kerntune tune` run of the example vector_add template, in tmp_path/tune, that `show` reads."""
    run = tmp_path / "tune"
    r = run_cli("tune", str(REPO / "templates/examples/vector_add.cl.j2"), "--spec",
                str(REPO / "kernels/examples/vector_add.yaml"), "--device", "cpu", "--shape-set", "cpu", "--budget",
                str(budget), "--repeats", "5", "--final-repeats", "6", "--no-memcheck", "--run-dir", str(run))
    assert r.returncode == 0, r.stderr
    assert run_cli("show", str(run)).returncode == 0
    return run


def test_a_tune_runs_final_test_is_audited_too(tmp_path):
    """`kerntune tune` keeps its final test in tuning.db: a forged general interval (a verdict of
    'faster' on [0.40, 9.60]) was shown and reported as confirmed (second tour)."""
    import sqlite3

    run = _tuned(tmp_path, 6)
    db = sqlite3.connect(run / "tuning.db")
    test = json.loads(db.execute("select value from meta where key='test'").fetchone()[0])
    if test.get("general") is None:
        pytest.skip("the run has no general kernel to forge")
    test["general"]["geomean"].update(ratio=9.5, lo=0.4, hi=9.6)
    test["general"]["geomean_speedup"] = 9.5
    test["general"]["verdict"] = "faster"
    db.execute("update meta set value=? where key='test'", (json.dumps(test),))
    db.commit()
    db.close()
    r = run_cli("show", str(run))
    assert r.returncode == 2 and "the final test in tuning.db" in r.stderr, r.stderr
    r = run_cli("report", str(run), "--out-dir", str(tmp_path / "rep"))
    assert r.returncode == 2 and "does not hold together" in r.stderr, r.stderr
    assert "Not trusted" in (tmp_path / "rep" / "report.md").read_text()


def test_a_tune_runs_kernel_files_are_checked_against_their_digests(tmp_path):
    """best.<ext>, per_shape/* and kernels.json of a `kerntune tune` run have the SHA-256 digests
    recorded in tuning.db when they were written: an edited kernel is found by show and report
    (before, only an optimize run's files had digests)."""
    run = _tuned(tmp_path, 4)
    assert run_cli("report", str(run), "--out-dir", str(tmp_path / "clean")).returncode == 0
    best = run / "best.cl"
    best.write_text(best.read_text() + "// edited after the run\n")
    per_shape = sorted((run / "per_shape").iterdir())
    per_shape[0].unlink()
    r = run_cli("show", str(run))
    assert r.returncode == 2 and "best.cl was changed after the run" in r.stderr, r.stderr
    assert "per_shape" not in r.stderr, r.stderr       # a file removed is no claim: a database is often copied alone
    r = run_cli("report", str(run), "--out-dir", str(tmp_path / "rep"))
    assert r.returncode == 2 and "best.cl was changed after the run" in r.stderr, r.stderr


def test_show_of_a_run_still_going_says_so_instead_of_suggesting_resume(copy):
    """`show` of an optimize run another process is still running suggested `--resume`, which that run's
    lock refuses (a user tour)."""
    (copy / "results.json").unlink()
    held = RunDir(copy)
    held.hold()                  # this test's process stands for the one running it
    r = run_cli("show", str(copy))
    assert r.returncode == 2, r.stdout
    assert "still going, in another kerntune process" in r.stderr and "--resume" not in r.stderr, r.stderr
    # its rounds are still being searched: what show points at is each round's search so far (the words
    # were lost when the check moved to record/ending.py)
    assert "each round's search so far: `kerntune show " in " ".join(r.stderr.split()), r.stderr
    held._lock.close()           # released: the run is interrupted, and --resume is what to do
    r = run_cli("show", str(copy))
    assert r.returncode == 2 and "--resume" in r.stderr, r.stderr


def test_resuming_a_copied_finished_run_says_where_it_is(copy, improved_run):
    """`cp -r RUN RUN2; kerntune optimize --resume RUN2` printed "wrote RUN/best.cl ...": the folder the
    run was made in (results.json's run_dir), not the one it was resumed in."""
    r = run_cli("optimize", "--resume", str(copy))
    said = " ".join(r.stdout.split())
    assert r.returncode == 0 and f"wrote {copy}/best.cl" in said, (said, r.stderr)
    assert str(improved_run) not in said, said
    r = run_cli("optimize", "--resume", str(copy), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["run_dir"] == str(copy), r.stdout[:400]
