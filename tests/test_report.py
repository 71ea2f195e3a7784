"""`kerntune report`: report.md and a self-contained report.html from real
optimize and tuning runs on the CPU OpenCL device, the HTML checked in a real
headless Chromium (installed by `.ci/run`), partial runs, and bad input."""

from __future__ import annotations

import json
import math
import os
import shutil
import sqlite3
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from kerntune.results import EvalResult
from tests.conftest import KERNTUNE, REPO, run_cli, vector_add_folder, vector_add_spec, write

SMALL = vector_add_spec({"4K": 4096, "256K": 262144})
FAST = ["--repeats", "5", "--warmup", "1"]
PLOTS = ["speedup", "times", "convergence", "bandwidth", "failures", "trace"]

# a template with a wrong variant (WRONG=1 subtracts) and a restriction that prunes, so the run has failures
TEMPLATE = """\
{# kerntune-template
description: vector_add test space with a wrong variant
params:
  BLOCK: [256, 64, 128]
  WRONG: [0, 1]
  EPT: [1, 2, 16]
restrictions:
  - "BLOCK * EPT <= 1024"
launch:
  grid: ["ceil_div(n, BLOCK * EPT)"]
  block: [BLOCK]
#}
__kernel void vector_add(__global float* c, __global const float* a, __global const float* b, const int n)
{
    const int base = get_global_id(0) * {{ EPT }};
{% for k in range(EPT) %}
    if (base + {{ k }} < n) c[base + {{ k }}] = a[base + {{ k }}] {{ '-' if WRONG else '+' }} b[base + {{ k }}];
{% endfor %}
}
"""

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


# --- runs, made once per module ------------------------------------------------------------
@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("kernel")
    vector_add_folder(d, SMALL)
    write(d, "space.cl.j2", TEMPLATE)
    return d


@pytest.fixture(scope="module")
def opt_run(improved_run):
    return improved_run


@pytest.fixture(scope="module")
def tune_run(kernel_dir, tmp_path_factory):
    run = tmp_path_factory.mktemp("tune") / "run"
    r = run_cli("tune", str(kernel_dir / "space.cl.j2"), "--spec", str(kernel_dir / "vector_add.yaml"),
                "--baseline", str(kernel_dir / "vector_add.cl"), "--device", "cpu", "--strategy", "exhaustive",
                "--budget", "14", *FAST, "--run-dir", str(run), "--json")
    assert r.returncode == 0, r.stderr
    return run


def report(run: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*KERNTUNE, "report", str(run), *args], capture_output=True,
                          text=True, cwd=REPO, timeout=300, env=env)


def report_json(run: Path, *args: str) -> dict:
    r = report(run, "--json", *args)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def is_png(path: str | Path) -> bool:
    data = Path(path).read_bytes()
    return data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def interrupted_copy(run: Path, dest: Path) -> Path:
    """The state a run killed during the final test leaves behind: rounds tuned, the manifest still
    'running', no test.json and none of the outputs written after it."""
    shutil.copytree(run, dest)
    for f in ("test.json", "results.json", "best.cl", "report.md", "spec.yaml"):
        (dest / f).unlink(missing_ok=True)
    shutil.rmtree(dest / "per_shape")
    m = json.loads((dest / "run.json").read_text())
    m.update(status="running", stop_reason="")
    m["rounds"][-1]["status"] = "running"
    (dest / "run.json").write_text(json.dumps(m))
    return dest


# --- a real headless browser -------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():   # .ci/run installs it and fails without it, so CI never skips this
        pytest.skip(f"no Chromium here ({CHROMIUM} is missing): the HTML report is checked in a real headless browser; "
                    "install it with `apt-get install -y chromium` (as .ci/run does) to run these tests")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: it is in the `test` extra (pip install -e '.[test]'), which "
                    "`.ci/run` installs")
    with sync_playwright() as p, tempfile.TemporaryDirectory(prefix="kerntune-chromium-") as profile:
        ctx = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                                   headless=True, viewport={"width": 1280, "height": 900})
        ctx.set_default_timeout(30_000)
        yield ctx
        ctx.close()


def open_page(ctx, page_path: Path, width: int = 1280):
    """Load the report from its file:// URL; returns the page, console errors and every URL it requested."""
    page = ctx.new_page()
    page.set_viewport_size({"width": width, "height": 900})
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(page_path.resolve().as_uri(), wait_until="load")
    return page, errors, requests


def check_page(ctx, page_path: Path, plots: list[str]) -> dict:
    page, errors, requests = open_page(ctx, page_path)
    images = page.evaluate("""() => Array.from(document.querySelectorAll('img.plot')).map(i => ({
        id: i.id, complete: i.complete, w: i.naturalWidth, h: i.naturalHeight,
        shown: i.getBoundingClientRect().width, inline: i.src.startsWith('data:image/png;base64,')}))""")
    assert [i["id"] for i in images] == [f"plot-{p}" for p in plots]
    for i in images:   # decoded by the browser, and laid out at a readable size
        assert i["complete"] and i["w"] > 300 and i["h"] > 150 and i["shown"] > 300 and i["inline"], i
    facts = page.evaluate("""() => ({
        sections: Array.from(document.querySelectorAll('section')).map(s => s.id),
        h1: document.querySelector('h1').textContent,
        headline: document.querySelector('.headline').textContent,
        diffRows: document.querySelectorAll('#diff table.diff tbody tr').length,
        added: document.querySelectorAll('#diff td.add').length,
        traceRows: document.querySelectorAll('#trace table tbody tr').length,
        external: document.querySelectorAll('link, script, iframe, object, [src^="http"], [href^="http"]').length})""")
    assert facts["external"] == 0
    assert not errors, errors
    page_url = page_path.resolve().as_uri()
    assert all(u == page_url or u.startswith("data:") for u in requests), requests   # nothing fetched
    page.close()
    # responsive: on a phone-sized window the page itself never scrolls sideways
    page, errors, _ = open_page(ctx, page_path, width=390)
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    assert page.evaluate("document.querySelector('img.plot') ? "
                         "document.querySelector('img.plot').getBoundingClientRect().width : 390") <= 390
    assert not errors, errors
    page.close()
    return facts


# --- optimize runs ---------------------------------------------------------------------------
def test_optimize_report_markdown_and_numbers(opt_run):
    old = (opt_run / "report.md").read_text()            # written by the loop
    out = report_json(opt_run)
    results = json.loads((opt_run / "results.json").read_text())
    baseline = EvalResult.model_validate_json((opt_run / "baseline.json").read_text())
    assert out["kind"] == "optimize" and not out["partial"] and out["confirmed"]
    assert out["files"]["html"] is None and sorted(out["files"]["plots"]) == sorted(PLOTS)
    assert all(is_png(p) for p in out["files"]["plots"].values())
    # the numbers are the tester's, and a shape's floor is bytes moved / the copy measured in the session
    # that timed its best kernel, so "best / floor" and its % of copy say the same
    assert out["improved"] == results["improved"]
    if results["improved"]:
        assert out["general_speedup"] == pytest.approx(results["general_speedup"])
        assert out["general_key"] == results["general_key"]
    else:       # the original stays the answer; the report still names the best candidate it did not claim
        assert results["general_speedup"] is None and out["general_interval"]["lo"] < 1.02
    copy = 2 * baseline.copy_bandwidth.bytes_per_copy / (baseline.copy_bandwidth.stats.median_ms * 1e-3) / 1e9
    assert out["copy_gbs"] == pytest.approx(copy)
    winners = {w["label"]: w for w in results["per_shape"]}
    for s in out["shapes"]:
        w = winners[s["label"]]
        assert s["best_speedup"] == pytest.approx(w["speedup"]) and s["baseline_ms"] == pytest.approx(w["baseline_ms"])
        assert s["general_speedup"] == pytest.approx(results["test"]["general"]["speedups"][s["label"]])
        assert s["best_ms"] / s["floor_ms"] == pytest.approx(100 / s["best_pct"], rel=0.01)
        session = s["bytes_moved"] / (s["floor_ms"] * 1e-3) / 1e9
        assert session in [pytest.approx(c) for c in s["copies_gbs"]]
    md = (opt_run / "report.md").read_text()
    for pid in PLOTS:
        assert f"(report_plots/{pid}.png)" in md
    assert out["headline"] in md
    # one writer of report.md: the loop's is the one `kerntune report` writes
    assert old == md
    for heading in ("## Per shape", "## Rounds", "## Final test", "## Files"):
        assert heading in md
    assert "**Result:" in md and "Every candidate was verified" in md and "- best: `best.cl`" in md
    # the command that reproduces the comparison, naming the real kernel file
    assert (f"kerntune bench {opt_run}/original/vector_add.cl --against {opt_run}/best.cl "
            f"--spec {opt_run}/spec.yaml") in md
    from kerntune.fmt import interval
    from kerntune.speedup import Interval

    for w in results["per_shape"]:
        assert f"| {w['label']} |" in md and interval(Interval.model_validate(w["interval"])) in md
    for c in results["test"]["candidates"]:
        assert f"`{c['key']}`" in md
    # the trace names the rules of the winning round's proposal, and the diff is of the kernel handed back
    proposal = json.loads((opt_run / f"rounds/{results['general_round']:02d}/proposal.json").read_text())
    trace = md.split("## Transformation trace")[1].split("## ")[0]
    assert all(f"`{t['rule']}`" in trace for t in proposal["transformations"])
    assert "```diff" in md and "+++ best.cl" in md and "--- original/vector_add.cl" in md


def test_optimize_report_html_in_a_real_browser(opt_run, browser):
    r = report(opt_run, "--html")
    assert r.returncode == 0, r.stderr
    assert "report.html (self-contained" in r.stdout and "report.md" in r.stdout
    page = opt_run / "report.html"
    text = page.read_text()
    assert "<script" not in text and "<link" not in text and "http://" not in text and "https://" not in text
    facts = check_page(browser, page, PLOTS)
    assert {"speedup", "times", "convergence", "bandwidth", "failures", "trace", "diff", "details"} <= \
        set(facts["sections"])
    assert "vector_add" in facts["h1"] and "faster" in facts["headline"]
    assert facts["diffRows"] > 5 and facts["added"] > 0 and facts["traceRows"] >= 2


def test_an_interrupted_optimize_run_is_reported_as_partial(opt_run, tmp_path, browser):
    run = interrupted_copy(opt_run, tmp_path / "run")
    out = report_json(run, "--html")
    assert out["partial"] and not out["confirmed"] and out["improved"] is None
    assert out["headline"].startswith("Partial run") and "not yet confirmed" in out["headline"]
    assert any("has not finished" in n and "--resume" in n for n in out["notes"])
    assert any("tuning estimates" in n for n in out["notes"])
    # the estimate is the best general configuration any round found while tuning
    rounds = [json.loads(p.read_text()) for p in sorted(run.glob("rounds/*/summary.json"))]
    assert out["general_speedup"] == pytest.approx(max(s["general"]["geomean_speedup"] for s in rounds))
    assert sorted(out["files"]["plots"]) == sorted(PLOTS)
    md = (run / "report.md").read_text()
    assert "**Partial run.**" in md and "tuning measurements, not yet re-timed" in md
    assert "## Final test" not in md and "A tuning estimate" in md
    facts = check_page(browser, run / "report.html", PLOTS)
    assert facts["diffRows"] > 0


def test_a_run_killed_before_any_measurement(opt_run, tmp_path, browser):
    run = tmp_path / "run"
    run.mkdir()
    shutil.copytree(opt_run / "original", run / "original")
    m = json.loads((opt_run / "run.json").read_text())
    m.update(status="running", stop_reason="", rounds=[])
    (run / "run.json").write_text(json.dumps(m))
    out = report_json(run, "--html")
    assert out["partial"] and out["files"]["plots"] == {} and out["general_speedup"] is None
    assert "nothing has been measured" in out["headline"]
    assert any("has not been measured" in n for n in out["notes"])
    md = (run / "report.md").read_text()
    assert "Nothing measured for this yet" in md and "No round has started yet" in md
    page, errors, _ = open_page(browser, run / "report.html")
    assert not errors and page.evaluate("document.querySelectorAll('img.plot').length") == 0
    assert page.evaluate("document.querySelector('.banner').textContent").count("--resume") == 1
    page.close()


# --- tuning runs -------------------------------------------------------------------------------
def db_meta(run: Path, *keys: str) -> list:
    db = sqlite3.connect(str(run / "tuning.db"))
    try:
        return [json.loads(db.execute("SELECT value FROM meta WHERE key = ?", (k,)).fetchone()[0]) for k in keys]
    finally:
        db.close()


def test_tune_report(tune_run, browser):
    out = report_json(tune_run, "--html")
    assert out["kind"] == "tune" and not out["partial"]
    assert sorted(out["files"]["plots"]) == sorted(p for p in PLOTS if p != "trace")
    # failures and prunings as the database recorded them
    db = sqlite3.connect(str(tune_run / "tuning.db"))
    wrong = db.execute("SELECT COUNT(*) FROM evaluations WHERE status = 'wrong_result'").fetchone()[0]
    pruned = db.execute("SELECT COUNT(*) FROM evaluations WHERE status = 'pruned' AND reason != 'set_aside'"
                        ).fetchone()[0]
    aside = db.execute("SELECT COUNT(*) FROM evaluations WHERE status = 'pruned' AND reason = 'set_aside'").fetchone()[0]
    best = db.execute("SELECT MIN(score) FROM evaluations WHERE status = 'ok'").fetchone()[0]
    db.close()
    # WRONG=1 fails verification every time: 3 measured failures, then it is set aside (kerntune.tuner.setaside)
    assert wrong == 3 and pruned >= 1 and aside >= 1
    md = (tune_run / "report.md").read_text()
    failures = md.split("## Failures by reason")[1].split("## ")[0]
    assert f"wrong_result {wrong}" in failures and f"restriction {pruned}" in failures
    assert f"set_aside {aside}" in failures
    convergence = md.split("## Search convergence")[1].split("## ")[0]
    assert f"{1 / best:.3f}x" in convergence                # the best geomean speedup the search reached
    # the speedup reported is the tester's confirmation, not the search's own estimate
    (test,) = db_meta(tune_run, "test")
    assert out["confirmed"] and out["general_speedup"] == pytest.approx(test["general"]["geomean"]["ratio"])
    assert out["general_interval"] == test["general"]["geomean"]
    assert "## The winning configuration" in md and "`WRONG`" in md
    assert "## Transformation trace" not in md and "## Rounds" not in md
    assert "```diff" in md and "+ " in md
    facts = check_page(browser, tune_run / "report.html", [p for p in PLOTS if p != "trace"])
    assert "trace" not in facts["sections"] and {"params", "diff"} <= set(facts["sections"])
    assert facts["diffRows"] > 0


def test_a_tuning_run_with_no_evaluations(tune_run, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(tune_run / "tuning.db", run / "tuning.db")
    db = sqlite3.connect(str(run / "tuning.db"))
    db.execute("DELETE FROM evaluations")
    db.execute("DELETE FROM meta WHERE key = 'stop_reason'")
    db.commit()
    db.close()
    out = report_json(run)
    assert out["partial"] and out["general_speedup"] is None and out["headline"].startswith("Partial run")
    assert sorted(out["files"]["plots"]) == ["bandwidth", "times"]      # the baseline was measured: only it
    assert any("No configuration has been evaluated" in n for n in out["notes"])
    assert any(f"kerntune tune --resume {run}" in n for n in out["notes"])


def test_the_report_names_the_general_configuration_the_tester_confirmed(tune_run, tmp_path):
    """When the tester's screening picks another general configuration than the search's, the report names
    that one (and shows its source): the configuration its confirmed interval is about."""
    from kerntune.record.outcome import TestReport
    from kerntune.tuner.store import RunStore
    from kerntune.tuner.summary import summarize

    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(tune_run / "tuning.db", run / "tuning.db")
    store = RunStore.in_dir(run)
    searched = summarize(store).general.key
    other = next(e for e in store.evaluations() if e.status == "ok" and e.key != searched)
    test = TestReport.model_validate(store.get("test"))
    general = test.general.model_copy(update={"key": other.key, "config": other.config})
    # a consistent record: the tester's general configuration is one of its candidates (record.audit)
    store.set("test", test.model_copy(update={"general": general, "candidates": [
        c for c in test.candidates if c.key != other.key] + [general]}).model_dump(mode="json"))
    store.close()
    from kerntune.reporting.load_tune import load_tune

    loaded = load_tune(run)
    assert loaded.general_key == other.key and loaded.general_config == other.config
    assert loaded.winner.name == f"general configuration {other.key}"
    report_json(run)
    assert f"general configuration {other.key}" in (run / "report.md").read_text()


def test_a_run_imported_from_a_kernel_tuner_cache(tune_run, tmp_path):
    cache, run = tmp_path / "cache.json", tmp_path / "run"
    assert run_cli("kt-cache", "export", str(tune_run), "-o", str(cache), "--shape", "256K").returncode == 0
    assert run_cli("kt-cache", "import", str(cache), "--run-dir", str(run)).returncode == 0
    out = report_json(run)
    assert not out["partial"] and out["general_speedup"] is None       # no baseline: times, not speedups
    assert out["headline"].startswith("The fastest configuration") and out["general_key"] in out["headline"]
    assert sorted(out["files"]["plots"]) == ["convergence", "failures", "times"]
    assert any("Kernel Tuner cache" in n for n in out["notes"])
    assert "```diff" not in (run / "report.md").read_text()             # the cache holds no kernel source


# --- opening and bad input ---------------------------------------------------------------------------
def test_open_without_a_display_says_so(opt_run, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")}
    r = report(opt_run, "--open", "--out-dir", str(tmp_path / "out"), env=env)
    assert r.returncode == 0, r.stderr
    assert "no display" in r.stderr and (tmp_path / "out/report.html").exists()


def test_open_uses_the_system_browser(opt_run, tmp_path):
    seen = tmp_path / "seen.txt"
    browser = write(tmp_path, "browser.sh", f'#!/bin/sh\necho "$1" > {seen}\n')
    browser.chmod(browser.stat().st_mode | stat.S_IEXEC)
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["BROWSER"] = str(browser)
    r = report(opt_run, "--open", "--json", "--out-dir", str(tmp_path / "out"), env=env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["opened"] is True
    assert seen.read_text().strip() == (tmp_path / "out/report.html").resolve().as_uri()


def _corrupt_test_json(run: Path) -> None:
    (run / "test.json").write_text('{"seed": 1, "candidates": [')


def _corrupt_manifest(run: Path) -> None:
    (run / "run.json").write_text("not json")


def _corrupt_round_db(run: Path) -> None:
    db = run / "rounds/01/tuning.db"
    for extra in ("-wal", "-shm"):
        Path(str(db) + extra).unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 100)


def _empty_round_db(run: Path) -> None:
    db = run / "rounds/01/tuning.db"
    for extra in ("-wal", "-shm"):
        Path(str(db) + extra).unlink(missing_ok=True)
    db.write_bytes(b"")


@pytest.mark.parametrize("damage,needle", [
    (_corrupt_test_json, "test.json is corrupt"),
    (_corrupt_manifest, "run.json is corrupt"),
    (_corrupt_round_db, "is not a readable kerntune database"),
    (_empty_round_db, "is not a readable kerntune database"),
])
def test_a_damaged_run_is_a_clear_error(opt_run, tmp_path, damage, needle):
    run = tmp_path / "run"
    shutil.copytree(opt_run, run)
    damage(run)
    r = report(run)
    assert r.returncode == 2, r.stdout + r.stderr
    assert needle in r.stderr and "hint:" in r.stderr and "Traceback" not in r.stderr


def test_bad_run_directories(tmp_path):
    cases = [(tmp_path / "nope", "run directory not found"), (write(tmp_path, "file.txt", "x"), "is a file"),
             (tmp_path, "holds no kerntune run")]
    for path, needle in cases:
        r = report(path)
        assert r.returncode == 2 and needle in r.stderr and "hint:" in r.stderr and "Traceback" not in r.stderr, \
            (path, r.stderr)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad/tuning.db").write_bytes(b"garbage" * 200)
    r = report(tmp_path / "bad", "--json")
    error = json.loads(r.stdout)["error"]
    assert r.returncode == 2 and error["code"] == "run" and "not a readable kerntune database" in error["message"]
    assert error["hint"]


def test_an_unwritable_destination(opt_run, tmp_path):
    blocker = write(tmp_path, "blocker", "a file where a folder should be")
    r = report(opt_run, "--out-dir", str(blocker / "sub"))
    assert r.returncode == 2 and "cannot write the report" in r.stderr and "--out-dir" in r.stderr
    assert "Traceback" not in r.stderr


def test_plot_values_are_finite(opt_run):
    from kerntune.reporting.load import load_run

    r = load_run(opt_run)
    for s in r.shapes:
        for v in (s.baseline_ms, s.general_ms, s.best_ms, s.floor_ms, s.best_pct):
            assert v is not None and math.isfinite(v) and v > 0
    assert [p.n for series in r.convergence for p in series.points] == list(range(1, r.measured + 1))


def test_the_speedup_caption_says_how_the_numbers_were_taken():
    """A confirmed run's (optimize or tune) numbers come from confirmation blocks in several processes with a
    pooled spread; the caption said 'interleaved with the original in one session' until 2026-12-02, and a tune
    run's confirmed numbers were called 'measured while tuning'."""
    from kerntune.agents.tester import CONFIRM_PROCESSES
    from kerntune.reporting.model import RunReport
    from kerntune.reporting.sections import caption

    for kind in ("optimize", "tune"):
        text = caption("speedup", RunReport(kind=kind, run_dir="r", kernel="k", confirmed=True))
        assert f"blocks spread over {CONFIRM_PROCESSES} new worker processes" in text
        assert "same relative width on every shape" in text and "one session" not in text
    assert "not yet re-timed" in caption("speedup", RunReport(kind="optimize", run_dir="r", kernel="k"))
    assert "measured while tuning" in caption("speedup", RunReport(kind="tune", run_dir="r", kernel="k"))


def test_reading_a_run_writes_nothing_into_it(opt_run, tmp_path):
    """show, report (elsewhere) and export only read: no -wal/-shm files, no schema written into an
    empty database (show used to turn a 0-byte tuning.db into an empty run and say nothing), which is
    also what lets a run on read-only storage be read."""
    run = tmp_path / "run"
    shutil.copytree(opt_run, run)
    for extra in ("-wal", "-shm"):
        for db in run.rglob("tuning.db"):
            Path(str(db) + extra).unlink(missing_ok=True)

    def files():
        return {p.relative_to(run): p.read_bytes() for p in run.rglob("*") if p.is_file()}

    before = files()
    for args in (("show", str(run)), ("show", str(run / "rounds/01")),
                 ("report", str(run), "--out-dir", str(tmp_path / "out")),
                 ("export", "pairs", str(run), "-o", str(tmp_path / "p.jsonl"))):
        r = run_cli(*args)
        assert r.returncode == 0, (args, r.stderr)
        assert files() == before, args
    (run / "rounds/01/tuning.db").write_bytes(b"")
    r = run_cli("show", str(run / "rounds/01"))
    assert r.returncode == 2 and "not a readable kerntune database" in r.stderr and "hint:" in r.stderr
    assert (run / "rounds/01/tuning.db").read_bytes() == b""
    # a round whose database is gone: the report still comes, and says what it lacks
    (run / "rounds/01/tuning.db").unlink()
    out = report_json(run, "--out-dir", str(tmp_path / "out2"))
    assert any("rounds/01/tuning.db) is missing" in n for n in out["notes"]), out["notes"]


def test_kt_cache_export_does_not_write_over_the_runs_files(tune_run, tmp_path):
    """`kt-cache export RUN -o RUN/tuning.db` wrote the cache over the run's database (exit 0), after
    which show said 'file is not a database'; a folder as the output was a Python error."""
    before = (tune_run / "tuning.db").read_bytes()
    r = run_cli("kt-cache", "export", str(tune_run), "-o", str(tune_run / "tuning.db"))
    assert r.returncode == 2 and "refusing to overwrite" in r.stderr and "hint:" in r.stderr, r.stderr
    assert (tune_run / "tuning.db").read_bytes() == before
    r = run_cli("kt-cache", "export", str(tune_run), "-o", str(tmp_path))
    assert r.returncode == 2 and "is a folder" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("kt-cache", "export", str(tune_run), "-o", str(tmp_path / "cache.json"))
    assert r.returncode == 0 and json.loads((tmp_path / "cache.json").read_text())["cache"]


def test_show_names_a_moved_run_where_it_is_and_quotes_the_commands_it_suggests(opt_run, tmp_path):
    """A run copied to a folder whose name has a space: show named the files under the folder the run
    was written in, and suggested `kerntune show moved run/rounds/01`, which a shell splits."""
    moved = tmp_path / "moved run é"
    shutil.copytree(opt_run, moved)
    r = run_cli("show", str(moved))
    assert r.returncode == 0, r.stderr
    assert f"files: {moved}/best.cl" in r.stdout
    assert f"`kerntune show '{moved}/rounds/01'`" in r.stdout
    assert f"--against '{moved}/best.cl'" in (report(moved) and (moved / "report.md").read_text())


def test_kt_cache_import_into_an_optimize_run_is_refused(tune_run, opt_run, tmp_path):
    """It left a stray tuning.db at the top of the optimize run (exit 0); inside a round it was refused."""
    cache = tmp_path / "cache.json"
    assert run_cli("kt-cache", "export", str(tune_run), "-o", str(cache)).returncode == 0
    run = tmp_path / "opt"
    shutil.copytree(opt_run, run)
    for target, needle in ((run, "already holds a run"), (run / "sub", "is inside the kerntune run")):
        r = run_cli("kt-cache", "import", str(cache), "--run-dir", str(target))
        assert r.returncode == 2 and needle in r.stderr and f"{run}-kt" in r.stderr, r.stderr
    assert not (run / "tuning.db").exists() and not (run / "sub").exists()


def test_the_headline_names_per_shape_kernels_when_the_original_stays_general():
    """A confirmed run whose general candidate missed the margin but whose per-shape kernel for one shape
    cleared it hands that kernel back (per_shape/, dispatch.json); its headline said only 'the original
    kernel stays' (a newcomer's tour of an int8 GEMV: large 1.66x [1.07, 2.56])."""
    from kerntune.reporting.model import RunReport, ShapeRow, headline
    from kerntune.speedup import Interval

    rows = [ShapeRow(label="small", shape={"n": 64}, baseline_ms=1.0, best_ms=1.0, best_winner="original",
                     best_speedup=1.0),
            ShapeRow(label="large", shape={"n": 4096}, baseline_ms=3.09, best_ms=2.71, best_winner="BLOCK=64",
                     best_round=1, best_speedup=1.66, best_interval=Interval(ratio=1.66, lo=1.07, hi=2.56))]
    r = RunReport(kind="optimize", run_dir="run", kernel="w8_gemv", device="AMD EPYC (cpu)", status="done",
                  confirmed=True, improved=False, general_speedup=1.01, shapes=rows)
    text = headline(r)
    assert "on 1 of 2 shapes a per-shape kernel is faster (large 1.66x [1.07, 2.56])" in text, text
    assert "the original stays the general kernel" in text, text
    # with no per-shape kernel either, the original stays, and the headline says only that
    r.shapes[1] = rows[1].model_copy(update={"best_winner": "original", "best_interval": None})
    assert headline(r).startswith("No candidate made w8_gemv faster on AMD EPYC by the required margin"), headline(r)
