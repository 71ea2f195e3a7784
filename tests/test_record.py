"""The optimize run directory as one record (kerntune.record): what the loop
writes is what resume, report and export read; lineage by parent_round; a
versioned format, refused when it is not this kerntune's; resume from any
working directory with the run's own copy of the kernel."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kerntune.record.models import FORMAT, Manifest, RoundStatus, RunStatus
from kerntune.record.outcome import DispatchEntry, OptimizeResult, TestReport
from kerntune.record.store import RunDir
from kerntune.results import Status
from tests.conftest import optimize_run, run_cli, vector_add_folder, vector_add_spec

pytestmark = pytest.mark.host   # host-side behaviour: .ci/run's PoCL pass leaves these out

SMALL = vector_add_spec({"4K": 4096, "256K": 262144})
FAST = ["--repeats", "5", "--warmup", "1", "--final-repeats", "10"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("opt")
    return optimize_run(vector_add_folder(d, SMALL), d / "run", "--rounds", "2", "--evaluations", "10", *FAST)


def test_every_file_reads_back_as_its_record(run):
    rd = RunDir.open(run)
    m = rd.manifest()
    assert m.format == FORMAT and m.status is RunStatus.DONE and m.rounds
    assert m.kernel_file == "vector_add.cl" and (run / "original/vector_add.cl").exists()
    assert (run / "original/reference.py").exists()           # the run is complete in itself
    for rec in m.rounds:
        assert rec.status in (RoundStatus.DONE, RoundStatus.NO_PROPOSAL)
        if rec.status is RoundStatus.DONE:
            p = rd.proposal(rec.round)
            assert p is not None and p.plan is not None and p.transformations == rec.transformations
            assert rd.summary(rec.round).measured == rec.measured
            # lineage: a round's input kernel is its parent's best kernel (or the original)
            parent = rec.parent_round
            want = rd.text(rd.original(m)) if parent is None else rd.text(rd.best_rel(parent, m.lang))
            assert rd.text(rd.input_rel(rec.round, m.lang)) == want
    test = rd.test()
    assert isinstance(test, TestReport) and test.candidates
    for c in test.candidates:
        assert isinstance(c.status, Status) and c.verified == (c.status is Status.OK)
        assert c.verified or (c.stage and c.message and not c.message.startswith(c.status.value))
    result = rd.results()
    assert isinstance(result, OptimizeResult) and result.headline and result.files.best == "best.cl"
    assert all(isinstance(d, DispatchEntry) for d in rd.dispatch())
    assert (run / "report.md").read_text().count(result.headline) >= 1


def test_lineage_follows_parent_round(run):
    m = RunDir.open(run).manifest()
    for rec in m.rounds:
        chain = m.lineage(rec.round)
        assert chain[-1] == rec.round and all(a < b for a, b in zip(chain, chain[1:]))
    r = run_cli("export", "traces", str(run))
    assert r.returncode == 0, r.stderr
    steps = json.loads(r.stdout.splitlines()[0])["steps"]
    assert [s["parent_round"] for s in steps] == [rec.parent_round for rec in m.rounds]


def test_a_run_of_another_format_is_refused_everywhere(run, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(run, old)
    data = json.loads((old / "run.json").read_text())
    data.pop("format")
    data["version"] = 1                     # what kerntune wrote before the run record had a format
    (old / "run.json").write_text(json.dumps(data))
    for args in (["optimize", "--resume", str(old)], ["report", str(old)],
                 ["export", "pairs", str(old), "-o", str(tmp_path / "p.jsonl")], ["score", "fast-p", str(old)]):
        r = run_cli(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "run format kerntune.run/1" in r.stderr and FORMAT in r.stderr and "Traceback" not in r.stderr
    data["format"] = "kerntune.run/99"
    data["kerntune_version"] = "9.9"
    (old / "run.json").write_text(json.dumps(data))
    r = run_cli("report", str(old), "--json")
    err = json.loads(r.stdout)["error"]
    assert r.returncode == 2 and "kerntune 9.9" in err["message"] and "kerntune.run/99" in err["message"]


def test_resume_from_another_directory_uses_the_runs_own_copy(run, tmp_path):
    """A run interrupted before its final test, whose kernel files have since moved away, resumed
    by a relative path from another working directory."""
    copy = tmp_path / "work" / "run"
    shutil.copytree(run, copy)
    for f in ("test.json", "results.json", "best.cl", "report.md", "spec.yaml"):
        (copy / f).unlink()
    m = Manifest.model_validate_json((copy / "run.json").read_text())
    (copy / "run.json").write_text(m.model_copy(update={"status": RunStatus.INTERRUPTED}).model_dump_json())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = run_cli("optimize", "--resume", "../work/run", "--json", cwd=elsewhere)
    assert r.returncode == 0, r.stderr
    result = OptimizeResult.model_validate_json(r.stdout)
    assert result.status is RunStatus.DONE and (copy / "best.cl").exists() and (copy / "test.json").exists()
    assert [x.model_dump() for x in result.rounds] == [x.model_dump() for x in m.rounds]   # nothing redone
    # a finished run is not run again: its recorded result comes back, naming the folder as this command did
    # (the record names it as the resume above did, relative to another working directory)
    again = run_cli("optimize", "--resume", str(copy), "--json")
    assert again.returncode == 0, again.stderr
    answer, recorded = json.loads(again.stdout), json.loads((copy / "results.json").read_text())
    assert Path(answer.pop("run_dir")).resolve() == copy.resolve() and recorded.pop("run_dir") == "../work/run"
    assert answer == recorded


def test_resume_refuses_a_kernel_argument(run):
    r = run_cli("optimize", "kernels/examples/vector_add.cl", "--resume", str(run))
    assert r.returncode == 2 and "not both" in r.stderr
