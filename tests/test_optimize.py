"""`kerntune optimize` with the rule catalog, on the real CPU OpenCL device."""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time

import pytest

from kerntune.agents.loop import OptimizeResult
from kerntune.agents.planner import Budget, Planner
from kerntune.agents.tester import Tester
from kerntune.hardware import cache_floor
from kerntune.results import DeviceInfo, EvalResult, ShapeTiming, Status, TimingStats
from kerntune.tuner.strategies import DEFAULT_STRATEGY
from tests.conftest import KERNTUNE, REPO, run_cli, write

SMALL = (REPO / "kernels/examples/vector_add.yaml").read_text().split("shapes:")[0] + """shapes:
  - {label: 4K, n: 4096}
  - {label: 256K, n: 262144}
reference: reference.py:vector_add
"""
FAST = ["--repeats", "5", "--warmup", "1", "--final-repeats", "10"]


@pytest.fixture()
def kernel(tmp_path):
    shutil.copy(REPO / "kernels/examples/vector_add.cl", tmp_path / "vector_add.cl")
    shutil.copy(REPO / "kernels/examples/reference.py", tmp_path / "reference.py")
    write(tmp_path, "vector_add.yaml", SMALL)
    return tmp_path / "vector_add.cl"


@pytest.mark.runtime   # the whole optimize flow once on each OpenCL runtime (.ci/run's PoCL pass)
def test_optimize_end_to_end(kernel, tmp_path):
    run = tmp_path / "run"
    r = run_cli("optimize", str(kernel), "--device", "cpu", "--rounds", "2", "--evaluations", "10", *FAST,
                "--run-dir", str(run), "--json")
    assert r.returncode == 0, r.stderr
    result = OptimizeResult.model_validate(json.loads(r.stdout))
    for f in ("run.json", "baseline.json", "rounds/01/template.cl.j2", "rounds/01/tuning.db", "rounds/01/proposal.json",
              "test.json", "best.cl", "per_shape/dispatch.json", "report.md", "results.json", "spec.yaml"):
        assert (run / f).exists(), f
    rounds = result.rounds
    assert rounds and rounds[0].source == "rules" and rounds[0].measured >= 1
    assert {t.rule for t in rounds[0].transformations} >= {"launch-config", "elements-per-thread"}
    assert result.test is not None and all(c.verified for c in result.test.candidates if not c.message)
    assert len(result.per_shape) == 2
    # the kernels it hands back are drop-in: each verifies against the original with the spec it wrote
    b = run_cli("bench", str(run / "original/vector_add.cl"), "--against", str(run / "best.cl"),
                "--spec", str(run / "spec.yaml"), "--repeats", "3", "--warmup", "1", "--json")
    assert b.returncode == 0, b.stderr
    assert json.loads(b.stdout)["against"]["verification"]["reference"] == "kernel"
    import yaml

    written = yaml.safe_load((run / "spec.yaml").read_text())
    fast = bool(result.general_config.get("FAST_FLAGS"))
    assert ("-cl-fast-relaxed-math" in written["launches"]["best"].get("compile_options", [])) == fast
    dispatch = json.loads((run / "per_shape/dispatch.json").read_text())
    assert [d["label"] for d in dispatch] == ["4K", "256K"]
    report = (run / "report.md").read_text()
    assert "## Per shape" in report and "## Rounds" in report and "fresh shapes" in report
    # `kerntune show` of the run prints its result (not "no tuning database"), and names each round's search
    s = run_cli("show", str(run))
    assert s.returncode == 0, s.stderr
    assert result.headline in " ".join(s.stdout.split()) and f"kerntune show {run}/rounds/01" in s.stdout
    s = run_cli("show", str(run), "--json")
    assert s.returncode == 0 and OptimizeResult.model_validate(json.loads(s.stdout)).headline == result.headline
    # a run folder kept without its rounds' databases (scripts/optimize_naive.py's, for size) points at
    # the rounds' summaries instead of saying that no round has a search
    for db in (run / "rounds").glob("*/tuning.db"):
        db.unlink()
    s = run_cli("show", str(run))
    assert s.returncode == 0 and "rounds/01/summary.json" in s.stdout and "has a search yet" not in s.stdout, s.stdout
    (run / "results.json").unlink()
    s = run_cli("show", str(run))
    assert s.returncode == 2 and "no result yet" in s.stderr and f"--resume {run}" in s.stderr


@pytest.mark.host   # host-side behaviour: .ci/run's PoCL pass leaves it out
def test_a_run_starts_from_an_earlier_one(kernel, tmp_path):
    """optimize --prior: each round starts from the earlier run's rounds whose template declares the same
    parameters and values (round 1's here: the same kernel gives the same first template), and says so."""
    from kerntune.tuner.store import RunStore

    first, second = tmp_path / "first", tmp_path / "second"
    args = ["--device", "cpu", "--rounds", "1", "--evaluations", "6", *FAST]
    r = run_cli("optimize", str(kernel), *args, "--run-dir", str(first))
    assert r.returncode == 0, r.stderr
    store = RunStore.in_dir(first / "rounds/01")
    valid = sum(1 for e in store.evaluations() if e.score is not None)
    store.close()
    r = run_cli("optimize", str(kernel), *args, "--run-dir", str(second), "--prior", str(first))
    assert r.returncode == 0, r.stderr
    assert f"starting from earlier runs: {first} (1 round)" in r.stderr
    assert f"round 1: starting from {valid} earlier measurements ({(first / 'rounds/01').resolve()})" in r.stderr
    store = RunStore.in_dir(second / "rounds/01")
    assert store.get("prior") == {"paths": [str((first / "rounds/01").resolve())], "used": valid}
    store.close()
    assert json.loads((second / "run.json").read_text())["settings"]["priors"] == [str(first.resolve())]
    report = (second / "report.md").read_text()
    assert f"Round 1: the search started from {valid} earlier measurements (`--prior`)." in report
    assert f"Round 1: prior {(first / 'rounds/01').resolve()}: " in report
    r = run_cli("optimize", str(kernel), *args, "--run-dir", str(tmp_path / "third"), "--prior", str(tmp_path))
    assert r.returncode == 2 and "no run here" in r.stderr and not (tmp_path / "third").exists()
    (tmp_path / "corrupt").mkdir()
    write(tmp_path / "corrupt", "tuning.db", "not a database")
    r = run_cli("optimize", str(kernel), *args, "--run-dir", str(tmp_path / "third"), "--prior", str(tmp_path / "corrupt"))
    assert r.returncode == 2 and "not a readable kerntune database" in r.stderr and not (tmp_path / "third").exists()


@pytest.mark.host   # host-side behaviour: .ci/run's PoCL pass leaves it out
def test_resume_after_kill_redoes_nothing(kernel, tmp_path):
    run = tmp_path / "run"
    cmd = [*KERNTUNE, "optimize", str(kernel), "--device", "cpu", "--rounds", "1",
           "--evaluations", "12", "--repeats", "40", "--warmup", "1", "--final-repeats", "10", "--run-dir", str(run),
           "--json"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = run / "rounds/01/tuning.db"
    before = []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(before) < 3:
        if db.exists():
            try:
                con = sqlite3.connect(str(db))
                before = con.execute("SELECT key, started FROM evaluations WHERE counted = 1").fetchall()
                con.close()
            except sqlite3.Error:
                pass
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert len(before) >= 3
    baseline = (run / "baseline.json").read_text()
    # a run another process still writes cannot be resumed (the killed one's lock went with it)
    from kerntune.record.store import RunDir

    held = RunDir(run)
    held.hold()
    r = run_cli("optimize", "--resume", str(run), "--json")
    assert r.returncode == 2 and f"in progress in another kerntune process (pid {os.getpid()})" in r.stdout, r.stdout
    held._lock.close()
    r = run_cli("optimize", "--resume", str(run), "--json")
    assert r.returncode == 0, r.stderr
    assert (run / "baseline.json").read_text() == baseline            # not measured again
    con = sqlite3.connect(str(db))
    after = set(con.execute("SELECT key, started FROM evaluations WHERE counted = 1").fetchall())
    con.close()
    assert set(before) <= after and len(after) == 12
    assert json.loads((run / "run.json").read_text())["status"] == "done"


def test_the_runs_copy_of_the_original_edited_after_it_started_is_refused(kernel, tmp_path):
    """original/ is what a resume verifies against: an interrupted run whose copy of the kernel was
    edited (a + b made a - b) resumed without a word, found all its verified candidates 'wrong' against
    it, and handed the edited kernel back as best.cl, "the original kernel stays" (show: exit 0)."""
    run = tmp_path / "run"
    r = run_cli("optimize", str(kernel), "--device", "cpu", "--rounds", "1", "--evaluations", "2", *FAST,
                "--run-dir", str(run), "--json")
    assert r.returncode == 0, r.stderr
    assert run_cli("show", str(run)).returncode == 0
    copy = run / "original" / kernel.name
    copy.write_text(copy.read_text().replace("a[i] + b[i]", "a[i] - b[i]"))
    r = run_cli("optimize", "--resume", str(run))
    assert r.returncode == 2 and "changed since the run started" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = run_cli("show", str(run))
    assert r.returncode == 2 and f"original/{kernel.name} was changed after the run started" in r.stderr, r.stderr
    (run / "original/reference.py").unlink()
    r = run_cli("show", str(run))
    assert "original/reference.py was lost after the run started" in r.stderr, r.stderr


def test_a_wrong_original_is_refused(kernel, tmp_path):
    kernel.write_text(kernel.read_text().replace("a[i] + b[i]", "a[i] * b[i]"))
    r = run_cli("optimize", str(kernel), "--device", "cpu", *FAST, "--run-dir", str(tmp_path / "run"))
    assert r.returncode == 1 and "the original kernel fails" in r.stderr and "Traceback" not in r.stderr
    # nothing was measured: the run is gone, so the next try (the kernel fixed) may use the same --run-dir;
    # a folder that was there before the run stays, emptied of what the run made
    assert "the run was removed" in r.stderr and not (tmp_path / "run").exists()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("the user's")
    r = run_cli("optimize", str(kernel), "--device", "cpu", *FAST, "--run-dir", str(tmp_path / "mine"))
    assert r.returncode == 1 and [p.name for p in (tmp_path / "mine").iterdir()] == ["notes.txt"]
    r = run_cli("optimize", str(kernel), "--device", "cpu", *FAST, "--run-dir", str(tmp_path / "new" / "sub"))
    assert r.returncode == 1 and not (tmp_path / "new").exists()        # the parent it made goes too
    kernel.write_text(kernel.read_text().replace("a[i] * b[i]", "a[i] + b[i]"))
    r = run_cli("optimize", str(kernel), "--device", "cpu", *FAST, "--rounds", "1", "--evaluations", "2",
                "--run-dir", str(tmp_path / "mine"))
    assert r.returncode == 0 and (tmp_path / "mine" / "baseline.json").exists(), r.stderr


def test_a_missing_reference_is_found_before_the_run_directory_exists(kernel, tmp_path):
    (kernel.parent / "reference.py").unlink()
    r = run_cli("optimize", str(kernel), "--device", "cpu", *FAST, "--run-dir", str(tmp_path / "run"))
    assert r.returncode == 2 and "reference file not found" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert "run directory:" not in r.stderr and not (tmp_path / "run").exists()


def test_existing_run_dir_is_not_overwritten(kernel, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text("{}")
    r = run_cli("optimize", str(kernel), "--device", "cpu", "--run-dir", str(run))
    assert r.returncode == 2 and "already holds an optimize run" in r.stderr


def test_a_run_dir_of_the_other_command_is_not_overwritten(kernel, tmp_path):
    """optimize into a `kerntune tune` run's folder, and tune into an optimize run's, were not refused:
    each wrote its files over the other's, and the earlier run could no longer be shown (user tour)."""
    tuned = tmp_path / "tuned"
    tuned.mkdir()
    (tuned / "tuning.db").write_bytes(b"a tune run")
    r = run_cli("optimize", str(kernel), "--device", "cpu", "--run-dir", str(tuned))
    assert r.returncode == 2 and "already holds a `kerntune tune` run" in r.stderr, r.stderr
    assert sorted(p.name for p in tuned.iterdir()) == ["tuning.db"]
    optimized = tmp_path / "optimized"
    optimized.mkdir()
    (optimized / "run.json").write_text("{}")
    r = run_cli("tune", str(REPO / "templates/examples/vector_add.cl.j2"), "--spec",
                str(REPO / "kernels/examples/vector_add.yaml"), "--device", "cpu", "--run-dir", str(optimized))
    assert r.returncode == 2 and "already holds a `kerntune optimize` run" in r.stderr, r.stderr
    assert sorted(p.name for p in optimized.iterdir()) == ["run.json"]


def _timing(label, ms, pct, moved=1 << 30):
    stats = TimingStats.from_samples([ms], warmup=0)
    return ShapeTiming(shape={"n": 1}, label=label, stats=stats, bytes_moved=moved, achieved_gbs=1.0, pct_of_copy=pct)


def test_planner_stopping_rules():
    slow = EvalResult(status=Status.OK, timings=[_timing("a", 1.0, 20.0)])
    p = Planner(Budget(evaluations=20, rounds=5), patience=1)
    d = p.decide(1, slow, None, "cuda")
    assert not d.stop and d.plan.evaluations == 4 and d.plan.directions[0].startswith("vectorize")
    p.record_round(10, 0, 1.5)
    p.record_round(10, 0, 1.5)
    assert p.decide(3, slow, None, "cuda").reason == "evaluation budget spent"
    q = Planner(Budget(evaluations=None, rounds=5), patience=1)
    q.record_round(5, 0, 1.30)
    q.record_round(5, 0, 1.30 * 1.019)                # below the one threshold (speedup.THRESHOLD, +2%)
    assert "no gain of 2%" in q.decide(3, slow, None, "cuda").reason
    q = Planner(Budget(evaluations=None, rounds=5), patience=1)
    q.record_round(5, 0, 1.30)
    q.record_round(5, 0, 1.30 * 1.021)
    assert not q.decide(3, slow, None, "cuda").stop
    q = Planner(Budget(evaluations=None, rounds=5), patience=1)      # two rounds without a usable template
    q.record_round(0, 3, 1.0)
    q.record_round(0, 3, 1.0)
    assert q.decide(3, slow, None, "cuda").reason == "no usable template in the last 2 round(s)"
    fast = EvalResult(status=Status.OK, timings=[_timing("a", 1.0, 95.0)])
    assert "hardware limit" in Planner(Budget()).decide(1, fast, None, "cuda").reason
    # a shape small enough to stay in the caches can look faster than the copy: it does not decide
    cached = EvalResult(status=Status.OK, timings=[_timing("a", 1.0, 150.0, moved=1 << 20), _timing("b", 1.0, 40.0)])
    assert Planner(Budget()).decide(1, cached, None, "cuda").stop is False
    only_cached = EvalResult(status=Status.OK, timings=[_timing("a", 1.0, 150.0, moved=1 << 20)])
    assert Planner(Budget()).decide(1, only_cached, None, "cuda").stop is False
    assert Planner(Budget(rounds=1, evaluations=None)).decide(1, slow, None, "cuda").stop is False
    # the tuner's default unless told otherwise, whatever the space size (as `kerntune tune`)
    assert Planner(Budget()).strategy_for(50, 60) == DEFAULT_STRATEGY == "surrogate"
    assert Planner(Budget()).strategy_for(5000, 60) == DEFAULT_STRATEGY
    assert Planner(Budget(), strategy="local").strategy_for(50, 60) == "local"


def test_plausibility_flags():
    base = {"k": _timing("a", 1.0, 50.0)}
    floor = cache_floor(DeviceInfo(id="opencl:0:0", backend="opencl", lang="opencl", name="cpu", kind="cpu", l2_bytes=1 << 20))
    assert Tester._plausibility(base, {"k": _timing("a", 0.05, 60.0)}, floor)[0].startswith("a: 20.0x")
    assert "faster than the bytes" in Tester._plausibility(base, {"k": _timing("a", 0.9, 140.0)}, floor)[0]
    assert Tester._plausibility(base, {"k": _timing("a", 0.8, 60.0)}, floor) == []
    # a shape whose bytes the caches hold can beat the copy (measured on a buffer larger than them):
    # an honest float4 copy of 256 KiB ran at 205% of it; that is not too good to be true
    assert Tester._plausibility(base, {"k": _timing("a", 0.9, 205.0, moved=1 << 19)}, floor) == []
