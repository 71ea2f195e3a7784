"""A configuration that crashes its worker inside `tune` or `optimize` leaves its kernel in the run folder,
and the run prints a command that runs that kernel under the memory checker (before, the run said
"failed: crash 2" and nothing the user could run to see why). Real runs on the CPU's OpenCL device."""

import shlex

import pytest

from kerntune.engine.checker import oclgrind_library
from tests.conftest import REPO, run_cli

TEMPLATE = REPO / "tests/data/vector_add_crash.cl.j2"     # WILD=True reads through a null pointer
SPEC = REPO / "kernels/examples/vector_add.yaml"
QUICK = ["--device", "cpu", "--shape-set", "cpu", "--repeats", "5", "--warmup", "1", "--final-repeats", "6",
         "--no-memcheck"]

pytestmark = pytest.mark.skipif(oclgrind_library() is None, reason="Oclgrind is not installed")


def _command(said: str) -> str:
    assert "memory checker (Oclgrind)" in said and "`kerntune bench " in said, said
    return said.split("`kerntune bench ", 1)[1].split("`", 1)[0]


def _runs_under_the_checker(command: str, cwd) -> None:
    """The command as printed executes, and the memory checker says where the kernel reads out of bounds."""
    b = run_cli("bench", *shlex.split(command), "--repeats", "5", "--warmup", "1", cwd=cwd)
    assert b.returncode != 0 and "Traceback" not in b.stderr, b.stderr
    assert "memory error under oclgrind" in b.stdout and "Invalid read" in b.stdout, b.stdout


def test_a_crashed_tune_configuration_is_kept_with_a_checker_command(tmp_path):
    run = tmp_path / "run"
    r = run_cli("tune", str(TEMPLATE), "--spec", str(SPEC), "--strategy", "exhaustive", "--run-dir", str(run), *QUICK)
    said = " ".join(r.stdout.split())
    assert r.returncode == 0 and "failed: crash 2" in said, (said, r.stderr)
    crashed = run / "crashed"
    assert crashed.is_dir(), f"no crashed/ in {sorted(p.name for p in run.iterdir())}; the run said: {said}"
    assert sorted(p.name for p in crashed.iterdir()) == ["BLOCK_128_WILD_True.cl", "BLOCK_256_WILD_True.cl"]
    text = (crashed / "BLOCK_256_WILD_True.cl").read_text()
    assert text.startswith("// kerntune: configuration BLOCK=256,WILD=True crashed its worker: "), text
    assert "block [256]" in text and "p[i]" in text, text
    command = _command(said)
    words = shlex.split(command)      # this file, the run's spec and shape set, the device it ran on
    assert words[:3] == [str(crashed / "BLOCK_256_WILD_True.cl"), "--spec", str(SPEC)], command
    assert words[3] == "--device" and words[4].startswith("opencl:") and words[5:] == ["--shape-set", "cpu"], command
    assert said.count("`kerntune bench ") == 1, said           # once per run
    s = run_cli("show", str(run))
    assert s.returncode == 0 and _command(" ".join(s.stdout.split())) == command, s.stdout
    rep = run_cli("report", str(run))        # and the report written from the run
    assert rep.returncode == 0 and _command(" ".join((run / "report.md").read_text().split())) == command, rep.stderr
    _runs_under_the_checker(command, tmp_path)


def test_a_crashed_optimize_configuration_is_kept_with_a_checker_command(tmp_path):
    """optimize: the round's template comes from an LLM (a scripted local endpoint), whose WILD=True
    instance crashes the worker; the run's result, `show` and report.md name the command."""
    from tests.test_llm import FakeLLM, answer, kerntune

    spec = tmp_path / "vector_add.yaml"
    spec.write_text(SPEC.read_text())
    (tmp_path / "reference.py").write_text((SPEC.parent / "reference.py").read_text())
    body = TEMPLATE.read_text().split("#}\n", 1)
    template = (body[0].replace("description: vector_add whose", "description: a candidate whose") + "#}\n"
                + body[1].replace("void vector_add(", "void {{ kernel_name }}("))
    run = tmp_path / "run"
    with FakeLLM() as fake:
        fake.push(("reply", answer(template)))
        r = kerntune("optimize", str(REPO / "kernels/examples/vector_add.cl"), "--spec", str(spec), *QUICK, "--llm", "openai", "--llm-base-url", fake.url,
                     "--model", "test", "--rounds", "1", "--evaluations", "4", "--strategy", "exhaustive",
                     "--run-dir", str(run))
    said = " ".join(r.stdout.split())
    assert r.returncode == 0, (said, r.stderr)
    crashed = run / "rounds" / "01" / "crashed"
    assert crashed.is_dir(), f"no {crashed}; the run said: {said}"
    assert sorted(p.name for p in crashed.iterdir()) == ["BLOCK_128_WILD_True.cl", "BLOCK_256_WILD_True.cl"]
    command = _command(said)
    assert said.count("`kerntune bench ") == 1, said           # once per run
    assert shlex.split(command)[0] == str(crashed / "BLOCK_256_WILD_True.cl"), command
    s = run_cli("show", str(run))
    assert s.returncode == 0 and _command(" ".join(s.stdout.split())) == command, s.stdout
    assert _command(" ".join((run / "report.md").read_text().split())) == command
    _runs_under_the_checker(command, tmp_path)


def test_a_run_keeps_at_most_twenty_crashed_kernels(tmp_path):
    """A space where every configuration crashes does not fill the run folder: the first MAX_FILES, in the
    order measured, and the count of all. A real run store and template; the crashes are recorded rows."""
    from kerntune.spec.load import load_file
    from kerntune.tuner.crashed import read_crashed, write_crashed
    from kerntune.tuner.store import RunStore
    from kerntune.tuner.template import load_template

    blocks = list(range(1, 31))
    path = tmp_path / "wide.cl.j2"
    path.write_text(TEMPLATE.read_text().replace("BLOCK: [256, 128]", f"BLOCK: {blocks}"))
    run = tmp_path / "run"
    store = RunStore.in_dir(run, create=True)
    for b in blocks:
        store.add(f"BLOCK={b},WILD=True", {"BLOCK": b, "WILD": True}, "crash", True,
                  message="the worker was killed by SIGSEGV")
    store.add("BLOCK=1,WILD=False", {"BLOCK": 1, "WILD": False}, "ok", True)
    c = write_crashed(run, store, load_template(path), load_file(SPEC), "opencl:0:0", "cpu")
    assert c is not None and c.total == 30, c
    assert c.files == [f"crashed/BLOCK_{b}_WILD_True.cl" for b in blocks[:20]], c.files
    assert sorted(p.name for p in (run / "crashed").iterdir()) == sorted(f.split("/")[1] for f in c.files)
    assert read_crashed(store) == c
    hint = c.hint(run)
    assert hint.startswith(f"30 configurations crashed the worker (kernel files with their launch: {run / 'crashed'}, "
                           "the first 20 of them)"), hint
