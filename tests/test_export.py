"""`kerntune export pairs|traces` on a real optimize run made on the CPU."""

import json
import math
import shutil

import pytest

from kerntune.source.normalize import normalize, strip_header
from tests.conftest import run_cli


@pytest.fixture(scope="module")
def run(improved_run):
    return improved_run


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _pairs(tmp_path, *runs, extra=()):
    out = tmp_path / "pairs.jsonl"
    r = run_cli("export", "pairs", *map(str, runs), "-o", str(out), "--json", "--force", *extra)   # one file, rewritten
    assert r.returncode == 0, r.stderr
    return _lines(out), json.loads(r.stdout)


def test_pairs_are_the_testers_verified_improvements(run, tmp_path):
    pairs, summary = _pairs(tmp_path, run)
    test = json.loads((run / "test.json").read_text())
    results = json.loads((run / "results.json").read_text())
    manifest = json.loads((run / "run.json").read_text())
    assert pairs, "the optimize run of vector_add found no verified improvement"
    assert summary["pairs"] == len(pairs) and summary["written"].endswith("pairs.jsonl")
    base = {t["label"]: t["stats"]["median_ms"] for t in test["baseline"]}
    for p in pairs:
        assert p["format"] == "kerntune.pair/1" and p["language"] == "opencl" and p["kernel"] == "vector_add"
        assert p["original_source"] == (run / "original/vector_add.cl").read_text()
        assert p["spec"] == (run / "original/spec.yaml").read_text()
        assert p["device"]["name"] == manifest["device"]["name"] and p["kerntune_version"]
        assert p["run_id"] and p["verification"]["verified"] is True and p["speedup"] >= 1.02
        cand = next(c for c in test["candidates"] if c["round"] == p["round"] and c["config"] == p["config"])
        assert cand["verified"]
        mine = {t["label"]: t["stats"]["median_ms"] for t in cand["timings"]}
        for s in p["shapes"]:
            assert s["original_ms"] == base[s["label"]] and s["optimized_ms"] == mine[s["label"]]
            # the tester's paired estimate, as `show` gives it (not the ratio of two sessions' medians)
            assert s["speedup"] == pytest.approx(cand["intervals"][s["label"]]["ratio"])
            assert s["speedup_interval"]["lo"] <= s["speedup"] <= s["speedup_interval"]["hi"]
        if p["kind"] != "per_shape":     # the pair's speedup is the geomean of its shapes'
            logs = [math.log(s["speedup"]) for s in p["shapes"]]
            assert p["speedup"] == pytest.approx(math.exp(sum(logs) / len(logs)), rel=1e-6)
        rules = [t["rule"] for t in p["transformations"]]
        assert rules and {r["rule"] for r in manifest["rounds"][p["round"] - 1]["transformations"]} <= set(rules)
        assert p["description"].startswith("vector_add (opencl)")
        assert p["original_hash"] != p["optimized_hash"]
    kinds = [p["kind"] for p in pairs]
    assert kinds.count("general") == (1 if results["improved"] else 0)
    if results["improved"]:
        g = next(p for p in pairs if p["kind"] == "general")
        assert g["optimized_source"] == strip_header((run / "best.cl").read_text())
        assert g["speedup"] == pytest.approx(results["general_speedup"])
        assert g["optimized_launch"] == manifest_launch(run, "best")
    assert len({p["id"] for p in pairs}) == len(pairs)


def manifest_launch(run, stem):
    import yaml

    spec = yaml.safe_load((run / "spec.yaml").read_text())
    launch = spec["launches"][stem]
    return {"grid": launch["grid"], "block": launch["block"], "shared_mem": launch["shared_mem"]}


def test_pairs_are_drop_in(run, tmp_path):
    """Every exported optimized kernel, with its launch and options, verifies against its original."""
    import yaml

    pairs, _ = _pairs(tmp_path, run)
    assert pairs
    for i, p in enumerate(pairs):
        d = tmp_path / f"pair{i}"
        d.mkdir()
        (d / "original.cl").write_text(p["original_source"])
        (d / "optimized.cl").write_text(p["optimized_source"])
        shutil.copy(run / "original/reference.py", d / "reference.py")
        spec = yaml.safe_load(p["spec"])
        spec["launches"] = {"optimized": p["optimized_launch"], "original": p["original_launch"]}
        spec["compile_options"] = {"opencl": p["optimized_compile_options"]}
        (d / "spec.yaml").write_text(yaml.safe_dump(spec))
        r = run_cli("bench", str(d / "original.cl"), "--against", str(d / "optimized.cl"), "--device", "cpu",
                    "--repeats", "3", "--warmup", "1", "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["against"]["verification"]["ok"]


def test_pairs_are_deduplicated(run, tmp_path):
    alone, first = _pairs(tmp_path, run)
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    # the run named twice is read once; its copy adds only duplicates (within a run, the general
    # best may also be a round's best or a shape's winner: those are dropped the same way)
    pairs, summary = _pairs(tmp_path, run, copy, run)
    assert len(pairs) == len(alone)
    assert summary["duplicates_dropped"] == 2 * first["duplicates_dropped"] + len(alone)
    # the same kernels with comments and blank lines changed are still duplicates
    assert normalize("// x\nint  a;\n\n/* y */ int b;") == normalize("int a; int b; // z")


def test_runs_without_pairs_are_listed(run, tmp_path):
    pairs, summary = _pairs(tmp_path, run, extra=("--min-speedup", "1000"))
    assert pairs == [] and "1000x" in summary["skipped"][0]["reason"]
    unfinished = tmp_path / "unfinished"
    shutil.copytree(run, unfinished)
    m = json.loads((unfinished / "run.json").read_text())
    m["status"] = "running"
    (unfinished / "run.json").write_text(json.dumps(m))
    # beside a finished run, an unfinished one is left out and listed; alone, it is refused (below)
    pairs, summary = _pairs(tmp_path, run, unfinished)
    assert pairs and any("not finished" in s["reason"] and s["run_dir"] == str(unfinished)
                         for s in summary["skipped"]), summary["skipped"]
    r = run_cli("export", "traces", str(run), str(unfinished), "-o", str(tmp_path / "t.jsonl"), "--json")
    assert r.returncode == 0 and "not finished" in json.loads(r.stdout)["skipped"][0]["reason"]


def _broken(run, tmp_path, name, edit):
    copy = tmp_path / name
    shutil.copytree(run, copy)
    edit(copy)
    return copy


def _no_headline(d):
    results = json.loads((d / "results.json").read_text())
    (d / "results.json").write_text(json.dumps({**results, "headline": ""}))


# run.json says done, the rest does not: what `show` refuses, and what export and score refuse
BROKEN = {
    "no-results": (lambda d: (d / "results.json").unlink(), "no result yet", "kerntune optimize --resume"),
    "no-headline": (_no_headline, "results.json has no headline", "kerntune optimize --resume"),
    "no-best": (lambda d: (d / "best.cl").unlink(), "best.cl is missing", "restore the run directory"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_run_said_done_with_missing_files_is_refused_as_show_refuses_it(run, tmp_path, case):
    """export and score read run.json's status only: a run that said done with results.json deleted was
    exported (2 pairs, exit 0), and one whose best.cl was lost wrote "0 pairs" and exited 0. Each is
    refused now with show's message and hint (exit 2), and no file is written."""
    edit, why, hint = BROKEN[case]
    broken = _broken(run, tmp_path, case, edit)
    assert json.loads((broken / "run.json").read_text())["status"] == "done"
    shown = run_cli("show", str(broken))
    out = tmp_path / "out.jsonl"
    for args in (["export", "pairs", str(broken), "-o", str(out)], ["export", "traces", str(broken), "-o", str(out)],
                 ["score", "fast-p", str(broken)]):
        r = run_cli(*args)
        said = " ".join(r.stderr.split())
        assert r.returncode == 2 and "Traceback" not in r.stderr, (args, r.stderr)
        assert why in said and hint in said, (args, said)
        assert said.split("hint:")[1] in " ".join(shown.stderr.split()), (args, said, shown.stderr)
        assert not out.exists()


def test_traces(run, tmp_path):
    out = tmp_path / "traces.jsonl"
    r = run_cli("export", "traces", str(run), str(run), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "wrote 1 traces" in r.stderr
    (trace,) = _lines(out)
    manifest = json.loads((run / "run.json").read_text())
    test = json.loads((run / "test.json").read_text())
    assert trace["format"] == "kerntune.trace/1" and trace["kernel"] == "vector_add"
    assert trace["original_source"] == (run / "original/vector_add.cl").read_text()
    assert [s["round"] for s in trace["steps"]] == [x["round"] for x in manifest["rounds"]]
    for step, rec in zip(trace["steps"], manifest["rounds"]):
        d = run / "rounds" / f"{step['round']:02d}"
        assert step["template"] == (d / "template.cl.j2").read_text()
        assert step["input_source"] == (d / "input.cl").read_text()
        assert step["best_source"] == (d / "best.cl").read_text()
        assert step["transformations"] == rec["transformations"] and step["best_key"] == rec["best_key"]
        parent = step["parent_round"]
        if parent is None:
            assert normalize(step["input_source"]) == normalize(trace["original_source"])
        else:
            assert step["input_source"] == (run / "rounds" / f"{parent:02d}/best.cl").read_text()
            assert next(s for s in trace["steps"] if s["round"] == parent)["adopted"]
        assert [s["label"] for s in step["shapes"]] == ["4K", "256K"]
        cand = next((c for c in test["candidates"] if c["round"] == step["round"] and c["key"] == step["best_key"]),
                    None)
        assert (step["confirmed"] is None) == (cand is None)
        if cand is not None:
            assert step["confirmed"]["verified"] == cand["verified"]
    assert trace["final_source"] == strip_header((run / "best.cl").read_text())
    assert [b["label"] for b in trace["baseline"]] == ["4K", "256K"]
    # stdout when there is no -o
    r = run_cli("export", "traces", str(run))
    assert r.returncode == 0 and json.loads(r.stdout.splitlines()[0])["run_id"] == trace["run_id"]


def test_folders_of_runs(run, tmp_path):
    many = tmp_path / "many"
    many.mkdir()
    shutil.copytree(run, many / "a")
    r = run_cli("export", "traces", str(many), "-o", str(tmp_path / "t.jsonl"), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["traces"] == 1


def test_bad_inputs(run, tmp_path):
    r = run_cli("export", "pairs", str(tmp_path / "missing"))
    assert r.returncode == 2 and "no such run directory" in r.stderr and "hint:" in r.stderr
    (tmp_path / "empty").mkdir()
    r = run_cli("export", "pairs", str(tmp_path / "empty"))
    assert r.returncode == 2 and "no optimize run" in r.stderr
    tune = tmp_path / "tune"
    tune.mkdir()
    (tune / "tuning.db").write_bytes(b"")
    r = run_cli("export", "traces", str(tune))
    assert r.returncode == 2 and "`kerntune tune` run" in r.stderr
    r = run_cli("export", "pairs", str(run), "--json")
    assert r.returncode == 2 and json.loads(r.stdout)["error"]["hint"] == "add -o FILE.jsonl"
    r = run_cli("export", "pairs", str(run), "-o", str(tmp_path))
    assert r.returncode == 2 and "is a folder" in r.stderr
    # an output that would replace one of a run's own files is refused (it wrote over best.cl, exit 0)
    mine = tmp_path / "mine"
    shutil.copytree(run, mine)
    for cmd, target in (("pairs", "best.cl"), ("traces", "run.json")):
        before = (mine / target).read_bytes()
        r = run_cli("export", cmd, str(mine), "-o", str(mine / target))
        assert r.returncode == 2 and "refusing to overwrite" in r.stderr and "hint:" in r.stderr, r.stderr
        assert (mine / target).read_bytes() == before
    corrupt = tmp_path / "corrupt"
    shutil.copytree(run, corrupt)
    (corrupt / "test.json").write_text("{ nope")
    r = run_cli("export", "pairs", str(corrupt), "-o", str(tmp_path / "p.jsonl"))
    assert r.returncode == 2 and "test.json is corrupt" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "p.jsonl").exists()
    (corrupt / "test.json").write_text('{"seed": "x"}')
    r = run_cli("export", "pairs", str(corrupt), "-o", str(tmp_path / "p.jsonl"))
    assert r.returncode == 2 and "not a valid kerntune record" in r.stderr


@pytest.mark.parametrize("cmd", ["pairs", "traces"])
def test_an_existing_output_is_replaced_only_with_force(run, tmp_path, cmd):
    """`export pairs|traces -o FILE` wrote over an existing FILE without a word (exit 0), where init and
    extract refuse one without --force."""
    mine = tmp_path / "mine.jsonl"
    mine.write_text("my own data\n")
    r = run_cli("export", cmd, str(run), "-o", str(mine))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert f"error: {mine} already exists\nhint: pass --force to overwrite it" in r.stderr
    assert mine.read_text() == "my own data\n"
    r = run_cli("export", cmd, str(run), "-o", str(mine), "--force", "--json")
    assert r.returncode == 0, r.stderr
    assert _lines(mine) and all(line["format"] == f"kerntune.{cmd[:-1]}/1" for line in _lines(mine))


def test_a_kernel_changed_after_the_run_is_not_exported_as_verified(run, tmp_path):
    """best.cl edited after the run (a bug planted in it): the pair would carry the edited kernel under
    `verified: true`; the run is left out (its record no longer holds together: record.audit), and the
    export says why."""
    results = json.loads((run / "results.json").read_text())
    if not results["improved"]:
        pytest.skip("the run has no general pair to tamper with")
    edited = tmp_path / "edited"
    shutil.copytree(run, edited)
    lines = (edited / "best.cl").read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "+" in line and not line.lstrip().startswith("//"))
    lines[at] = lines[at].replace("+", "-", 1)          # a plus in the code (not a comment) made a minus
    (edited / "best.cl").write_text("".join(lines))
    out = tmp_path / "p.jsonl"
    r = run_cli("export", "pairs", str(edited), "-o", str(out), "--json")    # alone: refused, as show refuses it
    assert r.returncode == 2 and "best.cl was changed after the run" in r.stdout + r.stderr, (r.stdout, r.stderr)
    assert not out.exists()
    r = run_cli("export", "pairs", str(edited), str(run), "-o", str(out), "--json")   # beside another: left out
    assert r.returncode == 0, r.stderr
    reasons = [s["reason"] for s in json.loads(r.stdout)["skipped"]]
    assert any("best.cl was changed after the run" in why for why in reasons), reasons
    assert all(p["kind"] != "general" for p in _lines(out) if p["run_dir"] == str(edited))
    changed = strip_header((edited / "best.cl").read_text())
    assert all(normalize(p["optimized_source"]) != normalize(changed) for p in _lines(out))
    # a run written before the digests (none in results.json, none promised by run.json): its pairs are
    # re-rendered and compared
    results = json.loads((edited / "results.json").read_text())
    results["files"].pop("digests", None)
    (edited / "results.json").write_text(json.dumps(results))
    manifest = json.loads((edited / "run.json").read_text())
    manifest.pop("digests", None)
    (edited / "run.json").write_text(json.dumps(manifest))
    r = run_cli("export", "pairs", str(edited), str(run), "-o", str(out), "--json", "--force")
    assert r.returncode == 0, r.stderr
    reasons = [s["reason"] for s in json.loads(r.stdout)["skipped"]]
    assert any("best.cl is not the kernel the tester verified" in why for why in reasons), reasons
    assert all(p["kind"] != "general" for p in _lines(out) if p["run_dir"] == str(edited))
