"""The tuning loop on the real CPU OpenCL device and on replays of its
records: budgets, time limits, deduplication, resume after a killed process,
replay, Kernel Tuner cache round trips, summaries and the dry run."""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from kerntune.spec.load import load_file
from kerntune.tuner.evaluators import LiveEvaluator, ReplayEvaluator
from kerntune.tuner.kerneltuner import export_cache, import_cache, read_cache
from kerntune.tuner.run import TuneSettings, Tuner, template_from_store
from kerntune.tuner.store import RunStore
from kerntune.tuner.strategies import REGISTRY
from kerntune.tuner.summary import summarize
from kerntune.tuner.template import load_template, parse_template
from tests.conftest import KERNTUNE, REPO, run_cli, vector_add_spec, write

TEMPLATE = REPO / "templates/examples/vector_add.cl.j2"
SMALL_SPEC = vector_add_spec({"4K": 4096, "64K": 65536})
FAST = dict(warmup=1, repeats=5)


@pytest.fixture(scope="module")
def spec_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("spec")
    write(d, "vector_add.yaml", SMALL_SPEC)
    shutil.copy(REPO / "kernels/examples/reference.py", d / "reference.py")
    return d


def tune(worker, spec_dir, run_dir, template=TEMPLATE, baseline=None, **settings):
    store = RunStore.in_dir(run_dir, create=True)
    if baseline is not None:
        store.set("baseline", baseline)
    t = load_template(template) if isinstance(template, Path) else template
    tuner = Tuner(t, load_file(spec_dir / "vector_add.yaml"), LiveEvaluator(worker), store,
                  TuneSettings(**{**FAST, **settings}))
    reason = tuner.run()
    store.set("stop_reason", reason)
    return store, reason


@pytest.fixture(scope="module")
def recorded(worker, spec_dir, tmp_path_factory):
    """An exhaustive run of the whole space, the source of the replay tests."""
    run = tmp_path_factory.mktemp("recorded")
    store, reason = tune(worker, spec_dir, run, strategy="exhaustive")
    assert reason == "space exhausted"
    return run


def test_exhaustive_run_records_everything(recorded):
    store = RunStore.in_dir(recorded)
    rows = list(store.evaluations())
    assert len(rows) == 32 and len({r.key for r in rows}) == 32
    ok = [r for r in rows if r.status == "ok"]
    assert ok and all(r.score is not None and r.result.verification.ok for r in ok)
    assert all(r.result.verification.reference == "numpy" for r in ok)
    pruned = [r for r in rows if r.status == "pruned"]
    assert {r.reason for r in pruned} == {"restriction"}       # BLOCK * EPT <= 2048
    assert all(not r.counted for r in pruned) and store.counted() == len(rows) - len(pruned)
    assert store.get("baseline")["status"] == "ok"


def test_summary_per_shape_best_and_general(recorded):
    s = summarize(RunStore.in_dir(recorded))
    store = RunStore.in_dir(recorded)
    ok = [r for r in store.evaluations() if r.status == "ok"]
    for row in s.shapes:
        times = [t.stats.median_ms for r in ok for t in r.result.timings if t.label == row.label]
        assert row.best_ms == min(times)
        assert row.general_ms >= row.best_ms and row.general_gap_pct >= 0
        assert row.speedup == pytest.approx(row.baseline_ms / row.best_ms)
    best = min(ok, key=lambda r: r.score)
    assert s.general.key == best.key and s.general.geomean_speedup == pytest.approx(1 / best.score)
    assert s.pruned_by_reason == {"restriction": 32 - len(ok)} and s.failed == 0


@pytest.mark.parametrize("strategy", sorted(REGISTRY))
def test_budget_is_honoured_on_replay(recorded, spec_dir, tmp_path, strategy):
    store = RunStore.in_dir(tmp_path / "r", create=True)
    template, loaded = template_from_store(RunStore.in_dir(recorded))
    replay = ReplayEvaluator(RunStore.in_dir(recorded))
    store.set("baseline", replay.baseline.model_dump(mode="json"))
    reason = Tuner(template, loaded, replay, store, TuneSettings(strategy=strategy, budget=7, seed=5)).run()
    assert reason == "budget spent" and store.counted() == 7


@pytest.mark.parametrize("strategy", sorted(REGISTRY))
def test_every_strategy_can_spend_the_whole_space(recorded, tmp_path, strategy):
    """A budget as large as the space: a strategy that converges and keeps proposing what it has
    seen (NSGA-II, TPE, local search) is handed unproposed configurations, so it ends with the
    space exhausted, each configuration measured once, instead of spinning on repeats."""
    template, loaded = template_from_store(RunStore.in_dir(recorded))
    replay = ReplayEvaluator(RunStore.in_dir(recorded))
    store = RunStore.in_dir(tmp_path / "r", create=True)
    store.set("baseline", replay.baseline.model_dump(mode="json"))
    measurable = RunStore.in_dir(recorded).counted()
    reason = Tuner(template, loaded, replay, store, TuneSettings(strategy=strategy, budget=32, seed=3)).run()
    rows = list(store.evaluations())
    assert reason == "space exhausted" and len(rows) == 32 and len({e.key for e in rows}) == 32
    assert store.counted() == measurable


@pytest.mark.host   # host-side behaviour: .ci/run's PoCL pass leaves it out
@pytest.mark.parametrize("strategy", sorted(REGISTRY))
def test_time_limit_is_honoured_live(worker, spec_dir, tmp_path, strategy, recorded):
    # the baseline is already known, so the limit applies to the search alone; each evaluation
    # (verification on 3 shapes, then 300 timed runs on each of 2 shapes) takes far longer than 0.3 s
    baseline = RunStore.in_dir(recorded).get("baseline")
    t0 = time.monotonic()
    store, reason = tune(worker, spec_dir, tmp_path / "r", strategy=strategy, time_limit_s=0.3, repeats=300,
                         baseline=baseline)
    elapsed = time.monotonic() - t0
    longest = max(e.finished - e.started for e in store.evaluations())
    assert reason == "time limit reached"
    assert store.counted() >= 1
    assert elapsed < 0.3 + 2 * longest + 5       # the evaluation in flight finishes, no more start


def test_replay_reproduces_the_recorded_optimum(recorded, tmp_path):
    r = run_cli("tune", "--device", f"replay:{recorded}", "--strategy", "exhaustive", "--run-dir",
                str(tmp_path / "x"), "--json")
    assert r.returncode == 0, r.stderr
    replayed = json.loads(r.stdout)
    original = summarize(RunStore.in_dir(recorded))
    assert replayed["general"]["key"] == original.general.key
    assert replayed["measured"] == original.measured
    r1 = run_cli("tune", "--device", f"replay:{recorded}", "--strategy", "tpe", "--budget", "6", "--seed", "9",
                 "--run-dir", str(tmp_path / "a"), "--json")
    r2 = run_cli("tune", "--device", f"replay:{recorded}", "--strategy", "tpe", "--budget", "6", "--seed", "9",
                 "--run-dir", str(tmp_path / "b"), "--json")
    keys = [[e.key for e in RunStore.in_dir(tmp_path / d).evaluations()] for d in ("a", "b")]
    assert r1.returncode == r2.returncode == 0 and keys[0] == keys[1]


def test_identical_sources_are_measured_once(worker, spec_dir, tmp_path):
    dup = parse_template("""{# kerntune-template
params:
  BLOCK: [256, 128]
  UNUSED: [0, 1]
launch:
  grid: ["ceil_div(n, BLOCK)"]
  block: [BLOCK]
#}
__kernel void vector_add(__global float* c, __global const float* a, __global const float* b, const int n) {
    int i = get_global_id(0);
    if (i < n) c[i] = a[i] + b[i];
}
""", "opencl", "dup.cl.j2")
    store, reason = tune(worker, spec_dir, tmp_path / "r", template=dup, strategy="exhaustive")
    rows = list(store.evaluations())
    dups = [r for r in rows if r.duplicate_of is not None]
    assert len(rows) == 4 and len(dups) == 2 and store.counted() == 2
    firsts = {r.id: r for r in rows}
    for d in dups:
        assert firsts[d.duplicate_of].config["BLOCK"] == d.config["BLOCK"] and d.score == firsts[d.duplicate_of].score


def test_the_baseline_configuration_is_measured_once(worker, spec_dir, tmp_path):
    """Without an original kernel the baseline is the template's baseline configuration: its
    measurement is that configuration's evaluation (counted in the budget), not measured again when
    the search proposes it. A second measurement would score near 1, not exactly 1."""
    store, reason = tune(worker, spec_dir, tmp_path / "r", strategy="surrogate", budget=3, seed=1)
    rows = list(store.evaluations())
    assert reason == "budget spent" and store.counted() == 3
    first = rows[0]
    assert first.config == {"BLOCK": 256, "EPT": 1, "STRIDED": False} and first.counted and first.score == 1.0
    assert [r.key for r in rows].count(first.key) == 1 and len({r.key for r in rows}) == len(rows)
    baseline = store.get("baseline")
    assert [t["stats"]["median_ms"] for t in first.result.model_dump(mode="json")["timings"]] == \
        [t["stats"]["median_ms"] for t in baseline["timings"]]
    # with an original kernel the baseline is the original: the configuration is measured as usual
    from kerntune.engine.evaluate import KernelInstance

    original = KernelInstance(source=(REPO / "kernels/examples/vector_add.cl").read_text(), name="vector_add",
                              lang="opencl", label="original")
    store = RunStore.in_dir(tmp_path / "o", create=True)
    Tuner(load_template(TEMPLATE), load_file(spec_dir / "vector_add.yaml"), LiveEvaluator(worker), store,
          TuneSettings(**FAST, strategy="surrogate", budget=2, seed=1), original=original).run()
    rows = list(store.evaluations())
    assert rows[0].config == {"BLOCK": 256, "EPT": 1, "STRIDED": False} and rows[0].score != 1.0


@pytest.mark.host   # host-side behaviour: .ci/run's PoCL pass leaves it out
def test_resume_after_the_process_is_killed(spec_dir, tmp_path):
    run = tmp_path / "killed"
    cmd = [*KERNTUNE, "tune", str(TEMPLATE), "--spec", str(spec_dir / "vector_add.yaml"),
           "--device", "cpu", "--strategy", "random", "--seed", "4", "--run-dir", str(run), "--repeats", "30",
           "--warmup", "1", "--json"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = run / "tuning.db"
    deadline = time.monotonic() + 300
    before = []
    while time.monotonic() < deadline:
        if db.exists():
            try:
                con = sqlite3.connect(str(db))
                before = con.execute("SELECT key, started, finished FROM evaluations WHERE counted = 1").fetchall()
                con.close()
            except sqlite3.Error:
                before = []
            if len(before) >= 4:
                break
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert len(before) >= 4, "the run never recorded four evaluations"
    con = sqlite3.connect(str(db))
    at_kill = con.execute("SELECT key, started, finished FROM evaluations WHERE counted = 1").fetchall()
    con.close()
    assert set(before) <= set(at_kill)                         # nothing lost at the kill
    r = run_cli("tune", "--resume", str(run), "--json")
    assert r.returncode == 0, r.stderr
    store = RunStore.in_dir(run)
    rows = list(store.evaluations())
    assert len(rows) == 32 and len({e.key for e in rows}) == 32  # the whole space, each configuration once
    after = {(e.key, e.started, e.finished) for e in rows if e.counted}
    assert set(at_kill) <= after                                # nothing re-measured


@pytest.mark.host   # host-side behaviour: .ci/run's PoCL pass leaves it out
def test_resume_extends_the_budget(recorded, tmp_path):
    run = tmp_path / "b"
    r = run_cli("tune", "--device", f"replay:{recorded}", "--strategy", "random", "--budget", "3", "--run-dir",
                str(run), "--json")
    assert r.returncode == 0 and RunStore.in_dir(run).counted() == 3
    r = run_cli("tune", "--resume", str(run), "--budget", "5", "--json")
    assert r.returncode == 0, r.stderr
    assert RunStore.in_dir(run).counted() == 5
    # the resumed run goes on replaying (before 2026-12-02 it measured the rest live on the recorded
    # run's device): every timing is the recorded one
    recorded_ms = {e.key: [t.stats.median_ms for t in e.result.timings]
                   for e in RunStore.in_dir(recorded).evaluations() if e.status == "ok"}
    for e in RunStore.in_dir(run).evaluations():
        if e.counted and e.status == "ok":
            assert [t.stats.median_ms for t in e.result.timings] == recorded_ms[e.key]


def test_a_tune_run_is_written_by_one_process_at_a_time(recorded, tmp_path):
    """A second `tune --resume` of a run still going was not refused: it measured what the first was
    measuring and died on the database's UNIQUE key (exit 70, "a bug in kerntune"), or both finished and
    the second's confirmation and kernels replaced the ones the first had printed."""
    from kerntune.record.store import RunDir

    run = tmp_path / "r"
    r = run_cli("tune", "--device", f"replay:{recorded}", "--strategy", "random", "--budget", "2", "--run-dir",
                str(run), "--json")
    assert r.returncode == 0, r.stderr
    held = RunDir(run)
    held.hold()                  # this test's process stands for the one running it
    r = run_cli("tune", "--resume", str(run), "--budget", "4", "--json")
    assert r.returncode == 2 and f"in progress in another kerntune process (pid {os.getpid()})" in r.stdout, r.stdout
    assert RunStore.in_dir(run, readonly=True).counted() == 2
    held._lock.close()
    r = run_cli("tune", "--resume", str(run), "--budget", "4", "--json")
    assert r.returncode == 0, r.stderr
    assert RunStore.in_dir(run, readonly=True).counted() == 4
    # a round of an optimize run that is still going is that run's to write
    opt = tmp_path / "opt"
    shutil.copytree(run, opt / "rounds/01")
    (opt / "run.json").write_text("{}")
    held = RunDir(opt)
    held.hold()
    r = run_cli("tune", "--resume", str(opt / "rounds/01"), "--budget", "5", "--json")
    assert r.returncode == 2 and "a round of the `kerntune optimize` run" in r.stdout, r.stdout
    assert RunStore.in_dir(opt / "rounds/01", readonly=True).counted() == 4
    held._lock.close()


def test_a_resume_refuses_a_reference_changed_since_the_run_started(worker, tmp_path):
    """The spec's text is recorded, but its reference is read from disk: a reference.py edited between a
    run and its --resume verified the new candidates against another function than the measured ones,
    without a word. The template's baseline is the reference here (no --baseline)."""
    from kerntune.errors import KerntuneError

    spec = tmp_path / "spec"
    spec.mkdir()
    write(spec, "vector_add.yaml", SMALL_SPEC)
    shutil.copy(REPO / "kernels/examples/reference.py", spec / "reference.py")
    run = tmp_path / "run"
    store, _ = tune(worker, spec, run, strategy="random", budget=1)
    store.close()
    original = (spec / "reference.py").read_text()
    (spec / "reference.py").write_text(original.replace("return a + b", "return a - b"))
    for edit in ("changed", "is gone"):
        if edit == "is gone":
            (spec / "reference.py").unlink()
        with pytest.raises(KerntuneError) as caught:
            tune(worker, spec, run, strategy="random", budget=2)
        assert f"reference file {spec / 'reference.py'} {edit} since the run started" in caught.value.message
    assert RunStore.in_dir(run, readonly=True).counted() == 1          # nothing measured against it
    (spec / "reference.py").write_text(original)
    store, _ = tune(worker, spec, run, strategy="random", budget=2)
    assert store.counted() == 2


def test_kernel_tuner_cache_round_trip(recorded, tmp_path):
    out = tmp_path / "kt.json"
    n = export_cache(RunStore.in_dir(recorded), "64K", out)
    doc = read_cache(out)
    assert n == 32 and doc["tune_params_keys"] == ["BLOCK", "EPT", "STRIDED"] and doc["problem_size"] == [65536]
    assert doc["cache"]["256,1,False"]["time"] > 0
    assert any(e["time"] == "InvalidConfig" for e in doc["cache"].values())
    import_cache(out, tmp_path / "imported")
    back = {e.key: e for e in RunStore.in_dir(tmp_path / "imported").evaluations()}
    orig = {e.key: e for e in RunStore.in_dir(recorded).evaluations()}
    assert set(back) == set(orig)
    for key, e in orig.items():
        if e.status == "ok":
            t = next(t for t in e.result.timings if t.label == "64K")
            assert back[key].result.timings[0].stats == t.stats
        else:
            assert back[key].status == e.status


def test_a_cache_with_a_zero_in_its_problem_size_replays(tmp_path):
    """kerntune exports every size of a shape as the problem size, a 0 among them (a histogram's
    skew=0): the imported run's placeholder spec admits it, so the run loads and replays."""
    text = json.dumps({"device_name": "cpu", "kernel_name": "histogram", "problem_size": [1048576, 0],
                       "tune_params_keys": ["BLOCK"], "tune_params": {"BLOCK": [128, 256]}, "objective": "time",
                       "cache": {"128": {"BLOCK": 128, "time": 0.5, "times": [0.5, 0.5]},
                                 "256": {"BLOCK": 256, "time": 0.25, "times": [0.25, 0.26]}}})
    assert import_cache(write(tmp_path, "kt.json", text), tmp_path / "run") == 2
    r = run_cli("tune", "--device", f"replay:{tmp_path / 'run'}", "--strategy", "random", "--run-dir",
                str(tmp_path / "replayed"), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["general"]["key"] == "BLOCK=256"


def test_replay_of_an_imported_cache_writes_no_kernels(recorded, tmp_path):
    """An imported Kernel Tuner cache holds parameters and times, no kernel source: replaying it
    finds a best configuration but writes no (placeholder) kernel files."""
    export_cache(RunStore.in_dir(recorded), "64K", tmp_path / "kt.json")
    import_cache(tmp_path / "kt.json", tmp_path / "imported")
    r = run_cli("tune", "--device", f"replay:{tmp_path / 'imported'}", "--strategy", "random", "--budget", "4",
                "--run-dir", str(tmp_path / "r"), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["general"] is not None and out["kernels"] == []
    assert not (tmp_path / "r/best.cl").exists() and not (tmp_path / "r/kernels.json").exists()


@pytest.mark.host   # host-side behaviour: .ci/run's PoCL pass leaves it out
def test_progress_of_a_replay_with_no_baseline_claims_no_speedup(tmp_path):
    """A Kernel Tuner cache has no baseline: the progress lines give the best time, not a speedup
    over a baseline nobody measured (they said '4.000x over the baseline' here before 2026-12-02)."""
    text = json.dumps({"device_name": "cpu", "kernel_name": "k", "problem_size": [1024],
                       "tune_params_keys": ["BLOCK"], "tune_params": {"BLOCK": [128, 256]}, "objective": "time",
                       "cache": {"128": {"BLOCK": 128, "time": 0.5, "times": [0.5, 0.5]},
                                 "256": {"BLOCK": 256, "time": 0.25, "times": [0.25, 0.26]}}})
    import_cache(write(tmp_path, "kt.json", text), tmp_path / "run")
    r = run_cli("tune", "--device", f"replay:{tmp_path / 'run'}", "--strategy", "exhaustive", "--budget", "2",
                "--run-dir", str(tmp_path / "replayed"))
    assert r.returncode == 0, r.stderr
    shown = r.stdout + r.stderr
    assert "best so far 250.0 µs (geomean time; no baseline was measured), BLOCK=256" in shown
    assert "over the baseline" not in shown
    # with no budget, piped progress counts the configurations visited of the space (it said nothing before)
    r = run_cli("tune", "--device", f"replay:{tmp_path / 'run'}", "--strategy", "exhaustive",
                "--run-dir", str(tmp_path / "whole"))
    assert r.returncode == 0, r.stderr
    assert "1 evaluation, 1 of 2 configurations visited" in r.stderr and "2 of 2 configurations visited" in r.stderr
    assert "looking up the baseline in the replayed run" in r.stderr


@pytest.mark.host   # host-side behaviour: .ci/run's PoCL pass leaves it out
def test_show_of_an_imported_cache_says_why_it_has_no_baseline(tmp_path):
    """`show` of an imported Kernel Tuner cache titled its table 'baseline: template baseline configuration'
    (there is none), said '(no baseline was measured)' as if a step had failed, and 'stopped'; it says the
    cache holds no baseline measured by kerntune, also for a replay of it."""
    text = json.dumps({"device_name": "cpu", "kernel_name": "k", "problem_size": [1024],
                       "tune_params_keys": ["BLOCK"], "tune_params": {"BLOCK": [128, 256]}, "objective": "time",
                       "cache": {"128": {"BLOCK": 128, "time": 0.5, "times": [0.5, 0.5]},
                                 "256": {"BLOCK": 256, "time": 0.25, "times": [0.25, 0.26]}}})
    import_cache(write(tmp_path, "kt.json", text), tmp_path / "run")
    r = run_cli("show", str(tmp_path / "run"))
    assert r.returncode == 0, r.stderr
    shown = " ".join(r.stdout.split())     # the table's title may wrap
    assert "BLOCK=256 (imported from a Kernel Tuner cache, which holds no baseline measured by kerntune)." in shown
    assert "baseline: none: a Kernel Tuner cache holds no baseline measured by kerntune" in shown
    assert "template baseline configuration" not in shown and "no baseline was measured" not in shown
    assert "strategy imported: read from the cache, nothing searched" in shown
    assert "geomean time 250.0 µs (no baseline: times, not speedups)" in shown
    r = run_cli("show", str(tmp_path / "run"), "--json")
    assert json.loads(r.stdout)["baseline"].startswith("none: a Kernel Tuner cache holds no baseline")
    r = run_cli("tune", "--device", f"replay:{tmp_path / 'run'}", "--strategy", "exhaustive",
                "--run-dir", str(tmp_path / "replayed"))
    assert r.returncode == 0, r.stderr
    shown = " ".join(run_cli("show", str(tmp_path / "replayed")).stdout.split())
    assert "baseline: none: a Kernel Tuner cache holds no baseline measured by kerntune" in shown


@pytest.mark.host   # host-side behaviour: .ci/run's PoCL pass leaves it out
def test_a_malformed_kernel_tuner_cache_is_refused_or_read_around(tmp_path):
    """Entries that are not objects or whose parameter values are not plain values are left out, bad timing
    fields fall back to the time; a file with no usable entry, or not a cache at all, is refused in one line."""
    junk = {"tune_params_keys": ["a"], "cache": {
        "1": 5, "2": {"a": 2, "time": 1.0, "times": 3}, "3": {"a": [1], "time": 2},
        "4": {"a": 4, "time": -1}, "5": {"a": 5, "time": 0.5, "kerntune_stats": {"x": 1}}}}
    assert import_cache(write(tmp_path, "junk.json", json.dumps(junk)), tmp_path / "run") == 3
    got = {e.key: e for e in RunStore.in_dir(tmp_path / "run").evaluations()}
    assert set(got) == {"a=2", "a=4", "a=5"} and got["a=4"].status != "ok"
    assert got["a=5"].result.timings[0].stats.median_ms == 0.5
    # the command says how many it left out (it said "imported 3 entries" and nothing of the other 2)
    r = run_cli("kt-cache", "import", str(tmp_path / "junk.json"), "--run-dir", str(tmp_path / "run2"))
    assert r.returncode == 0 and "left out 2 entries" in r.stderr and "imported 3 entries" in r.stderr, r.stderr
    for text, message in [(json.dumps({"tune_params_keys": ["a"], "cache": {"1": 5}}), "holds no usable entry"),
                          ("[1, 2]", "a JSON list, not an object"),
                          (json.dumps({"tune_params_keys": ["a"], "cache": 3}), "'cache' must be an object"),
                          ('{"a": 1', "invalid JSON")]:
        r = run_cli("kt-cache", "import", str(write(tmp_path, "bad.json", text)), "--run-dir", str(tmp_path / "b"))
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr
        assert not (tmp_path / "b").exists()


def test_kernel_tuner_cache_written_by_kernel_tuner(tmp_path):
    # the shape of a cache Kernel Tuner leaves behind when interrupted: no closing braces, a trailing comma
    text = ('{\n"device_name": "NVIDIA A100",\n"kernel_name": "vector_add",\n"problem_size": [1000000],\n'
            '"tune_params_keys": ["block_size_x", "tile"],\n"tune_params": {"block_size_x": [128, 256], '
            '"tile": [1, 2]},\n"objective": "time",\n"cache": {\n'
            '"128,1": {"block_size_x": 128, "tile": 1, "time": 0.5, "times": [0.5, 0.51], "compile_time": 10},\n'
            '"128,2": {"block_size_x": 128, "tile": 2, "time": "CompilationFailedConfig"},\n'
            '"256,1": {"block_size_x": 256, "tile": 1, "time": 0.25, "times": [0.25, 0.26]},\n'
            '"256,2": {"block_size_x": 256, "tile": 2, "time": "InvalidConfig"},')
    src = write(tmp_path, "kt.json", text)
    assert import_cache(src, tmp_path / "run") == 4
    r = run_cli("show", str(tmp_path / "run"), "--json")
    s = json.loads(r.stdout)
    assert s["general"]["key"] == "block_size_x=256,tile=1" and s["general"]["geomean_ms"] == 0.25
    assert s["failed_by_status"] == {"compile_error": 1} and s["pruned_by_reason"] == {"kernel_tuner_invalid": 1}
    r = run_cli("tune", "--device", f"replay:{tmp_path / 'run'}", "--strategy", "random", "--run-dir",
                str(tmp_path / "replayed"), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["general"]["key"] == "block_size_x=256,tile=1"


@pytest.mark.host   # host-side behaviour: .ci/run's PoCL pass leaves it out
def test_tune_cli_and_show(spec_dir, tmp_path):
    run = tmp_path / "cli"
    r = run_cli("tune", str(TEMPLATE), "--spec", str(spec_dir / "vector_add.yaml"), "--device", "cpu",
                "--strategy", "local", "--budget", "4", "--repeats", "5", "--warmup", "1", "--run-dir", str(run))
    assert r.returncode == 0, r.stderr
    assert "general configuration" in r.stdout and "Per shape" in r.stdout
    r = run_cli("show", str(run), "--json")
    s = json.loads(r.stdout)
    assert s["measured"] == 4 and s["strategy"] == "local" and len(s["shapes"]) == 2
    r = run_cli("tune", str(TEMPLATE), "--spec", str(spec_dir / "vector_add.yaml"), "--device", "cpu",
                "--run-dir", str(run))
    assert r.returncode == 2 and "already holds a run" in r.stderr and "--resume" in r.stderr


@pytest.mark.parametrize("args,needle", [
    (["--strategy", "anneal"], "unknown strategy"),
    (["--strategy", "tpe", "--option", "bogus=1"], "has no option bogus"),
    (["--time-limit", "soon"], "cannot understand the duration"),
    (["--shape-set", "gpu"], "no shape set 'gpu'"),
])
def test_tune_rejects_bad_options(spec_dir, tmp_path, args, needle):
    r = run_cli("tune", str(TEMPLATE), "--spec", str(spec_dir / "vector_add.yaml"), "--device", "cpu",
                "--run-dir", str(tmp_path / "x"), *args)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr


def test_show_errors(tmp_path):
    r = run_cli("show", str(tmp_path / "nothing"))
    assert r.returncode == 2 and "run directory not found" in r.stderr
    kernel = tmp_path / "k.cl"
    kernel.write_text("__kernel void k() {}\n")
    r = run_cli("show", str(kernel))                 # it said "run directory not found" of a file that exists
    assert r.returncode == 2 and "is a file, not a run directory" in r.stderr and "kerntune bench" in r.stderr
    (tmp_path / "run/rounds/01").mkdir(parents=True)
    (tmp_path / "run/rounds/01/tuning.db").write_bytes(b"")
    r = run_cli("show", str(tmp_path / "run/rounds"))   # the rounds folder, not a round: the hint names one
    assert r.returncode == 2 and f"pass one ({tmp_path}/run/rounds/01)" in r.stderr, r.stderr
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "tuning.db").write_text("not a database")
    r = run_cli("show", str(tmp_path / "bad"))
    assert r.returncode == 2 and "not a readable kerntune database" in r.stderr


def test_dry_run_compiles_every_feasible_cuda_instance(tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    t = (REPO / "templates/examples/vector_add.cu.j2").read_text().replace(
        "BLOCK: [256, 64, 128, 512, 1024]", "BLOCK: [256, 64, 128, 512, 1024, 2048]")
    tp = write(tmp_path, "va.cu.j2", t)
    r = run_cli("tune", str(tp), "--spec", str(REPO / "kernels/examples/vector_add.yaml"), "--dry-run",
                "--target", "h100", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    statuses = {e["status"] for e in report["entries"]}
    assert statuses <= {"compiled", "pruned"} and report["space_size"] == 48
    pruned = {e["reason"] for e in report["entries"] if e["status"] == "pruned"}
    assert pruned == {"threads_per_block", "restriction"}
    compiled = [e for e in report["entries"] if e["status"] == "compiled"]
    assert compiled and all(e["resources"]["source"] == "ptxas" and e["resources"]["registers"] for e in compiled)
    r = run_cli("tune", str(tp), "--spec", str(REPO / "kernels/examples/vector_add.yaml"), "--dry-run")
    assert r.returncode == 0 and "threads_per_block" in r.stdout and "compiled" in r.stdout


def test_dry_run_refuses_what_it_would_ignore():
    """`tune --dry-run --device cpu` compiled for the H100 profile and never said that --device was not
    used; an OpenCL template's hint told a user who had passed --device cpu to pass --device cpu."""
    spec = str(REPO / "kernels/examples/vector_add.yaml")
    cu, cl = str(REPO / "templates/examples/vector_add.cu.j2"), str(REPO / "templates/examples/vector_add.cl.j2")
    for extra, named in ((["--device", "cpu"], "--device"), (["--budget", "5", "--strategy", "random"],
                                                              "--strategy, --budget")):
        r = run_cli("tune", cu, "--spec", spec, "--dry-run", *extra)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert f"--dry-run uses no device and measures nothing: {named} would be ignored" in r.stderr
        assert "hint: a dry run compiles every feasible CUDA instance offline" in r.stderr and not r.stdout
    r = run_cli("tune", cl, "--spec", spec, "--dry-run", "--device", "cpu")
    assert r.returncode == 2 and "is OpenCL, which compiles only on an OpenCL device" in r.stderr, r.stderr
    assert f"kerntune tune {cl} --spec {spec} --device cpu --budget 5" in r.stderr


def test_compile_pool_builds_ahead(worker, spec_dir, tmp_path):
    store = RunStore.in_dir(tmp_path / "r", create=True)
    evaluator = LiveEvaluator(worker, compile_workers=1)
    submitted = []
    original_prefetch = evaluator.prefetch

    def spy(inst):   # count what reaches the pool, then let it compile for real
        submitted.append(inst.digest)
        original_prefetch(inst)

    evaluator.prefetch = spy
    try:
        reason = Tuner(load_template(TEMPLATE), load_file(spec_dir / "vector_add.yaml"), evaluator, store,
                       TuneSettings(strategy="random", budget=6, seed=2, lookahead=2, **FAST)).run()
        assert reason == "budget spent" and store.counted() == 6
        assert len(submitted) >= 6 and len(evaluator._compilers) == 1    # one compile process did the building
        assert all(e.status == "ok" for e in store.evaluations() if e.counted)
    finally:
        evaluator.close()


def test_tune_writes_drop_in_kernels(spec_dir, tmp_path):
    """best.cl (the general configuration) and one kernel per shape, each of which verifies against
    the original when launched as kernels.json says."""
    import yaml

    run = tmp_path / "run"
    r = run_cli("tune", str(TEMPLATE), "--spec", str(spec_dir / "vector_add.yaml"), "--device", "cpu",
                "--strategy", "random", "--budget", "4", "--seed", "2", "--repeats", "5", "--warmup", "1",
                "--run-dir", str(run), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["kernels"][0] == "best.cl" and sorted(out["kernels"][1:]) == ["per_shape/4K.cl", "per_shape/64K.cl"]
    launches = json.loads((run / "kernels.json").read_text())
    general = out["test"]["general"]      # the confirmation's pick, which the headline and best.cl are about
    # the search's three fastest (--top-k's default) were confirmed beside each shape's best
    assert {t["key"] for t in out["top"][:3]} <= {c["key"] for c in out["test"]["candidates"]}
    assert len(out["top"]) >= 3
    assert launches["best.cl"]["config"] == general["config"]
    # the JSON's answer is the file handed back and the confirmed claim about it
    assert out["best"] == {"file": "best.cl", "key": general["key"], "config": general["config"], "confirmed": True,
                           "speedup": general["geomean"], "faster": out["test"]["improved"], "estimate": None}
    assert general["key"] in out["headline"] and "confirmed by the tester" in out["headline"] or \
        out["headline"].startswith("No configuration")
    best = (run / "best.cl").read_text()
    assert best.startswith("// kerntune tune: general configuration " + general["key"])
    assert "{{" not in best and "kerntune-template" not in best            # rendered, not a template
    spec = yaml.safe_load(SMALL_SPEC)
    d = tmp_path / "bench"
    d.mkdir()
    shutil.copy(REPO / "kernels/examples/reference.py", d / "reference.py")
    shutil.copy(REPO / "kernels/examples/vector_add.cl", d / "vector_add.cl")
    for rel, launch in launches.items():
        stem = Path(rel).stem.replace("-", "_") + "_tuned"
        shutil.copy(run / rel, d / f"{stem}.cl")
        spec.setdefault("launches", {})[stem] = {k: launch[k] for k in ("grid", "block", "shared_mem")}
        (d / "spec.yaml").write_text(yaml.safe_dump(spec))
        r = run_cli("bench", str(d / "vector_add.cl"), "--against", str(d / f"{stem}.cl"), "--spec",
                    str(d / "spec.yaml"), "--device", "cpu", "--repeats", "3", "--warmup", "1", "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["against"]["verification"]["ok"], rel


def _confirmed_a_runner_up(spec_dir, tmp_path):
    """A tune run's summary where the confirmation picked a runner-up as the general configuration (not the
    search's pick) and confirmed no candidate faster on the 4K shape."""
    from kerntune.record.outcome import CandidateResult, ShapeWinner, TestReport
    from kerntune.speedup import Interval
    from kerntune.tuner.summary import Ranked, ShapeResult, TuneSummary

    searched = {"BLOCK": 128, "EPT": 4, "STRIDED": False}
    runner_up = {"BLOCK": 64, "EPT": 2, "STRIDED": True}
    key = "BLOCK=64,EPT=2,STRIDED=True"
    faster = Interval(ratio=1.3, lo=1.2, hi=1.4, n=10, method="t")
    return TuneSummary(
        run_dir=str(tmp_path), template=str(TEMPLATE), spec="vector_add.yaml", device="cpu", strategy="surrogate",
        space_size=32, measured=8, ok=8, failed=0, pruned=0, duplicates=0,
        general=Ranked(key="BLOCK=128,EPT=4,STRIDED=False", config=searched, geomean_ms=1.0, geomean_speedup=1.4),
        shapes=[ShapeResult(label=label, shape={"n": n}, best_key="BLOCK=128,EPT=4,STRIDED=False",
                            best_config=searched) for label, n in (("4K", 4096), ("64K", 65536))],
        test=TestReport(seed=0, general=CandidateResult(round=0, key=key, config=runner_up, geomean=faster),
                        improved=True,
                        candidates=[CandidateResult(round=0, key=key, config=runner_up, geomean=faster)],
                        per_shape=[ShapeWinner(label="4K", shape={"n": 4096}, baseline_ms=1.0, winner="original",
                                               best_ms=1.0, speedup=1.0),
                                   ShapeWinner(label="64K", shape={"n": 65536}, baseline_ms=1.0, winner=key, round=0,
                                               best_ms=0.8, speedup=1.3, interval=faster)]))


def test_tune_hands_back_what_the_confirmation_picked(spec_dir, tmp_path):
    """The confirmation may pick another general configuration than the search did (a runner-up timed
    again), and confirm no candidate faster on a shape: best.cl is the configuration the headline names,
    with its confirmed interval, and that shape's file is the baseline, said so in its header."""
    from kerntune.spec.load import load_file
    from kerntune.tuner.kernel_files import write_tuned_kernels

    summary = _confirmed_a_runner_up(spec_dir, tmp_path)
    key, runner_up = summary.test.general.key, summary.test.general.config
    written = write_tuned_kernels(tmp_path, load_template(TEMPLATE), load_file(spec_dir / "vector_add.yaml").spec,
                                  summary)
    assert written == ["best.cl", "per_shape/4K.cl", "per_shape/64K.cl"]
    done = summary.model_copy(update={"kernels": written})
    assert done.best.key == key != summary.general.key and done.best.file == "best.cl" and done.best.confirmed
    assert done.best.speedup == summary.test.general.geomean and done.best.faster
    assert done.headline.startswith(f"The general configuration {key} makes vector_add.cl.j2 1.30x [1.20, 1.40]")
    assert json.loads(done.model_dump_json())["best"]["key"] == key
    launches = json.loads((tmp_path / "kernels.json").read_text())
    assert launches["best.cl"]["config"] == runner_up and launches["per_shape/64K.cl"]["config"] == runner_up
    assert (tmp_path / "best.cl").read_text().startswith(f"// kerntune tune: general configuration {key}, 1.30x")
    assert launches["per_shape/4K.cl"]["config"] == {"BLOCK": 256, "EPT": 1, "STRIDED": False}   # the baseline
    assert "no configuration was confirmed faster than the baseline" in (tmp_path / "per_shape/4K.cl").read_text()


def test_the_report_names_the_configuration_its_interval_is_about(spec_dir, tmp_path):
    """`kerntune report` on a tune run: the general configuration it names (and shows the source of) is
    the one whose confirmed interval it quotes."""
    from kerntune.reporting.load_tune import general_pick

    summary = _confirmed_a_runner_up(spec_dir, tmp_path)
    assert general_pick(summary) == (summary.test.general.key, summary.test.general.config)
    unconfirmed = summary.model_copy(update={"test": None})
    assert general_pick(unconfirmed) == (summary.general.key, summary.general.config)
    b = unconfirmed.best
    assert not b.confirmed and b.speedup is None and b.faster is None and b.estimate == 1.4
    assert "the search's own estimate, not confirmed" in unconfirmed.headline
    slower = unconfirmed.model_copy(update={"general": unconfirmed.general.model_copy(update={"geomean_speedup": 0.73})})
    assert "at 0.730x the speed of" in slower.headline and "faster" not in slower.headline   # was "0.730x faster"


def test_a_replay_on_shapes_the_run_did_not_record_is_refused(recorded, spec_dir, tmp_path):
    """The recorded run timed 4K and 64K; replaying it with a spec of other shapes searched empty cells
    ('No configuration was timed on every shape') and exited 0. It is refused, names what the run has,
    and leaves no empty run folder behind (a second try would have hit 'already holds a run')."""
    write(tmp_path, "other.yaml", vector_add_spec({"4K": 4096, "1M": 1048576}))
    shutil.copy(REPO / "kernels/examples/reference.py", tmp_path / "reference.py")
    run = tmp_path / "r"
    r = run_cli("tune", str(TEMPLATE), "--spec", str(tmp_path / "other.yaml"), "--device", f"replay:{recorded}",
                "--run-dir", str(run))
    assert r.returncode == 2 and "recorded no timing for 1M (n=1048576)" in r.stderr, r.stderr
    assert "it has 4K (n=4096), 64K (n=65536)" in r.stderr and "hint:" in r.stderr
    assert not run.exists()
    # its own shapes replay as before
    r = run_cli("tune", str(TEMPLATE), "--spec", str(spec_dir / "vector_add.yaml"), "--device", f"replay:{recorded}",
                "--strategy", "random", "--budget", "3", "--run-dir", str(run))
    assert r.returncode == 0, r.stderr


def test_a_new_run_that_fails_before_measuring_leaves_nothing(spec_dir, tmp_path):
    kept = tmp_path / "mine"
    kept.mkdir()
    (kept / "notes.txt").write_text("the user's")
    for run, left in ((tmp_path / "new", False), (kept, True)):
        r = run_cli("tune", str(TEMPLATE), "--spec", str(spec_dir / "vector_add.yaml"), "--device", "opencl:9:0",
                    "--run-dir", str(run))
        assert r.returncode == 3 and "no device opencl:9:0" in r.stderr, r.stderr
        assert run.exists() == left and not (run / "tuning.db").exists()
    assert (kept / "notes.txt").read_text() == "the user's"
