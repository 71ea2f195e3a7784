"""`kerntune score fast-p|reward` and the library reward, on the real CPU OpenCL device."""

import json
import shutil

import pytest

from kerntune.scoring import Reward, RewardSettings, fast_p, reward
from kerntune.scoring.fastp import KernelOutcome
from tests.conftest import REPO, VECTOR_ADD, SLOW_BLOCK, optimize_run, run_cli, slowed_vector_add, vector_add_spec, write

SPEC = vector_add_spec({"4K": 4096, "64K": 65536}, block=SLOW_BLOCK)   # the scored kernels' spec
FAST = VECTOR_ADD.read_text()
SLOW = slowed_vector_add(256)
WRONG = FAST.replace("a[i] + b[i]", "a[i] - b[i]")
BROKEN = "__kernel void vector_add(__global float* c) { c[0] = ; }\n"
# reads through a null pointer the compiler cannot see coming (c == a is false only at run time):
# the worker process dies (SIGSEGV) on every OpenCL CPU runtime
CRASH = """\
__kernel void vector_add(__global float* c, __global const float* a, __global const float* b, const int n)
{
    int i = get_global_id(0);
    __global const float* p = (__global const float*)((size_t)(c == (__global float*)a) * 64);
    if (i < n)
        c[i] = a[i] + b[i] + p[i];
}
"""
HANG = """\
__kernel void vector_add(__global float* c, __global const float* a, __global const float* b, const int n)
{
    int i = get_global_id(0);
    volatile int spin = 1;
    while (spin) { }
    if (i < n)
        c[i] = a[i] + b[i];
}
"""
QUICK = ["--repeats", "10", "--warmup", "2", "--device", "cpu"]


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    d = tmp_path_factory.mktemp("k")
    for name, text in (("fast", FAST), ("slow", SLOW), ("wrong", WRONG), ("broken", BROKEN), ("crash", CRASH)):
        (d / f"{name}.cl").write_text(text)
    write(d, "spec.yaml", SPEC)
    shutil.copy(REPO / "kernels/examples/reference.py", d / "reference.py")
    return d


def _reward(kernels, candidate, baseline, *extra):
    r = run_cli("score", "reward", str(kernels / f"{candidate}.cl"), "--baseline", str(kernels / f"{baseline}.cl"),
                *QUICK, *extra, "--json")
    assert r.returncode == 0, r.stderr
    return Reward.model_validate(json.loads(r.stdout))


def test_reward_faster_kernel_scores_one(kernels):
    r = _reward(kernels, "fast", "slow")
    assert (r.compiles, r.correct, r.faster, r.score) == (True, True, True, 1.0)
    assert r.speedup > 2 and set(r.speedups) == {"4K", "64K"} and r.stage == "done"


def test_reward_slower_kernel_scores_point_eight(kernels):
    r = _reward(kernels, "slow", "fast")
    assert (r.compiles, r.correct, r.faster, r.score) == (True, True, False, 0.8)
    assert r.speedup < 0.5


def test_reward_wrong_broken_and_crashing_kernels(kernels):
    r = _reward(kernels, "wrong", "fast")
    assert (r.compiles, r.correct, r.score, r.status, r.stage) == (True, False, 0.4, "wrong_result", "verify")
    r = _reward(kernels, "broken", "fast")
    assert (r.compiles, r.score, r.status, r.stage) == (False, 0.0, "compile_error", "compile")
    r = _reward(kernels, "crash", "fast")
    assert (r.compiles, r.correct, r.score, r.status) == (True, False, 0.4, "crash")
    assert "SIGSEGV" in r.message or "killed" in r.message


@pytest.mark.skipif(__import__("kerntune.engine.checker", fromlist=["x"]).oclgrind_library() is None,
                    reason="Oclgrind is not installed (apt-get install oclgrind; .ci/run does)")
def test_a_memory_error_is_named_as_one(kernels, tmp_path):
    """A read past the inputs' ends (values unchanged: verification passes) fails at the checker, and
    its stage line says memory_error (it said "check: ok: oclgrind: Invalid read ...")."""
    oob = kernels / "fast.cl"
    text = oob.read_text().replace("a[i] + b[i]", "a[i] + b[i] + fmin(fabs(a[i + 64]), 0.0f)")
    (tmp_path / "oob.cl").write_text(text)
    shutil.copy(kernels / "spec.yaml", tmp_path / "spec.yaml")
    shutil.copy(kernels / "reference.py", tmp_path / "reference.py")
    shutil.copy(kernels / "fast.cl", tmp_path / "fast.cl")
    r = run_cli("score", "reward", str(tmp_path / "oob.cl"), "--baseline", str(tmp_path / "fast.cl"), *QUICK)
    assert r.returncode == 0, r.stderr
    assert "check: memory error: oclgrind: Invalid read" in r.stdout, r.stdout


def test_a_candidate_file_without_the_specs_kernel_scores_zero(kernels):
    # a reward is asked of whatever a model wrote: bytes that are not text, or a kernel of another
    # name, score 0 (it does not compile against the spec), not a usage error that stops a batch
    (kernels / "bytes.cl").write_bytes(bytes(range(256)) * 4)
    (kernels / "renamed.cl").write_text(FAST.replace("vector_add", "vadd"))
    for name, needle in (("bytes", "cannot read kernel file"), ("renamed", "no kernel named 'vector_add'")):
        r = _reward(kernels, name, "fast")
        assert (r.score, r.compiles, r.stage, r.status) == (0.0, False, "load", "compile_error"), r
        assert needle in r.message
    human = run_cli("score", "reward", str(kernels / "bytes.cl"), "--baseline", str(kernels / "fast.cl"), *QUICK)
    assert human.returncode == 0 and "reward 0.0" in human.stdout and "--seed" not in human.stdout


def test_reward_human_output(kernels):
    r = run_cli("score", "reward", str(kernels / "wrong.cl"), "--baseline", str(kernels / "fast.cl"), *QUICK)
    assert r.returncode == 0, r.stderr
    assert "reward 0.4" in r.stdout and "wrong result" in r.stdout and "--seed" in r.stdout


def test_library_reward_survives_crashes_and_reuses_its_worker(kernels, worker):
    spec = kernels / "spec.yaml"
    settings = RewardSettings(repeats=5, warmup=1, seed=3)
    crashed = reward(CRASH, FAST, spec, lang="opencl", worker=worker, settings=settings)
    assert crashed.score == 0.4 and crashed.status == "crash"
    assert worker.restarts >= 1
    ok = reward(FAST, SLOW, str(spec), lang="opencl", worker=worker, settings=settings)   # the next call just works
    assert ok.score == 1.0 and ok.seed == 3
    # a launch of its own: the candidate with 64-thread groups
    launched = reward(FAST, FAST, spec, lang="opencl", worker=worker, settings=settings,
                      candidate_launch={"grid": ["ceil_div(n, 64)"], "block": [64]})
    assert launched.correct
    bad_launch = reward(FAST, FAST, spec, lang="opencl", worker=worker, settings=settings,
                        candidate_launch={"grid": ["ceil_div(n, 64)"], "block": [99999999]})
    assert bad_launch.compiles and not bad_launch.correct and bad_launch.status == "resource_limit"
    hung = reward(HANG, FAST, spec, lang="opencl", worker=worker,
                  settings=RewardSettings(repeats=5, warmup=1, timeout_s=4))
    assert (hung.compiles, hung.correct, hung.score, hung.status) == (True, False, 0.4, "timeout")
    assert reward(FAST, FAST, spec, lang="opencl", worker=worker, settings=settings).correct
        # without a worker, one is started for the call
    own = reward(WRONG, FAST, spec, lang="opencl", device="cpu", settings=settings)
    assert own.score == 0.4


def test_library_reward_setup_errors(kernels, worker):
    from kerntune.errors import ErrorCode, KerntuneError

    with pytest.raises(KerntuneError) as e:
        reward(FAST, FAST, kernels / "spec.yaml", lang="fortran", worker=worker)
    assert e.value.code is ErrorCode.USAGE
    with pytest.raises(KerntuneError) as e:
        reward(FAST, BROKEN, kernels / "spec.yaml", lang="opencl", worker=worker,
               settings=RewardSettings(repeats=2, warmup=0))
    assert e.value.code is ErrorCode.COMPILE and "reference kernel" in e.value.message
    with pytest.raises(KerntuneError) as e:
        reward(FAST, FAST, kernels / "nope.yaml", lang="opencl", worker=worker)
    assert e.value.code is ErrorCode.FILE


def test_fast_p_function():
    ks = [KernelOutcome(name="a", source="x", correct=True, speedup=2.0),
          KernelOutcome(name="b", source="x", correct=True, speedup=1.2),
          KernelOutcome(name="c", source="x", correct=False, speedup=5.0),
          KernelOutcome(name="d", source="x", correct=True, speedup=None)]
    assert fast_p(ks, 0.0) == 0.5 and fast_p(ks, 1.0) == 0.5 and fast_p(ks, 1.5) == 0.25 and fast_p(ks, 2.0) == 0.0
    assert fast_p([], 1.0) == 0.0
    rewards = [Reward(score=1.0, compiles=True, correct=True, faster=True, speedup=1.3),
               Reward(score=0.4, compiles=True, correct=False, faster=False)]
    assert fast_p(rewards, 1.0) == 0.5


@pytest.fixture(scope="module")
def run(improved_run):
    return improved_run


def test_fast_p_from_runs_and_pairs(run, tmp_path):
    results = json.loads((run / "results.json").read_text())
    r = run_cli("score", "fast-p", str(run), "--p", "1.0", "--p", "1.5", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    speed = results["general_speedup"] if results["improved"] else 1.0
    lo = results["general_interval"]["lo"] if results["improved"] else 1.0
    assert rep["total"] == 1 and rep["correct"] == 1 and rep["kernels"][0]["speedup"] == pytest.approx(speed)
    # a kernel counts as faster than p only when its interval's lower bound is
    assert [x["fraction"] for x in rep["fast_p"]] == [float(lo > 1.0), float(lo > 1.5)]
    # from pairs: one kernel per problem (a run's general pair, else its first), not one per line: the
    # general kernel, each round's best and each shape's are several pairs of one problem
    pairs = tmp_path / "pairs.jsonl"
    assert run_cli("export", "pairs", str(run), "-o", str(pairs)).returncode == 0
    lines = [json.loads(x) for x in pairs.read_text().splitlines()]
    assert lines, "the optimize run claimed no improvement, so there is no pair to score"
    r = run_cli("score", "fast-p", str(pairs), "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["total"] == 1 and len(rep["excluded"]) == len(lines) - 1
    chosen = next((x for x in lines if x["kind"] == "general"), lines[0])
    assert rep["kernels"][0]["speedup"] == pytest.approx(chosen["speedup"])
    assert rep["fast_p"][0] == {"p": 0.0, "count": 1, "fraction": 1.0}
    # a pair whose optimized kernel was edited after the export (here into the original) is not counted
    forged = dict(chosen, optimized_source=chosen["original_source"], speedup=50.0)
    write(tmp_path, "forged.jsonl", json.dumps(forged) + "\n")
    rep = json.loads(run_cli("score", "fast-p", str(tmp_path / "forged.jsonl"), "--json").stdout)
    assert rep["correct"] == 0 and rep["fast_p"][0]["count"] == 0
    assert "its optimized kernel was changed after the export" in rep["kernels"][0]["note"]
    # the run and its pairs together: still one problem, scored by the run's own answer
    r = run_cli("score", "fast-p", str(run), str(pairs), "--json")
    rep = json.loads(r.stdout)
    assert rep["total"] == 1 and rep["kernels"][0]["source"] == str(run)
    assert all("counted once" in x["reason"] for x in rep["excluded"]) and len(rep["excluded"]) == len(lines)
    r = run_cli("score", "fast-p", str(run))
    assert r.returncode == 0 and "fast_1 = " in r.stdout and "fast_1.5 = " in r.stdout
    # the table shows the bound that is compared with p, beside the speedup: 3.08x alone beside "0 of 1 kernels
    # correct and faster than 1.5x" (its interval was [1.44, 6.61]) read as a miscount
    if results["improved"]:
        assert "lower bound" in r.stdout and f"{lo:.2f}x" in r.stdout, r.stdout


def test_fast_p_refuses_a_tune_run_in_its_own_words(tmp_path):
    """`score fast-p` of a `kerntune tune` run said "pairs and traces come from `kerntune optimize` runs":
    export's words, for a command that exports nothing."""
    (tmp_path / "tuning.db").write_bytes(b"")
    r = run_cli("score", "fast-p", str(tmp_path))
    said = " ".join(r.stderr.split())
    assert r.returncode == 2 and "`kerntune tune` run" in said and "Traceback" not in said, said
    assert "`kerntune score fast-p` scores `kerntune optimize` runs" in said and "pairs and traces" not in said, said


def test_fast_p_counts_a_kernel_optimized_twice_once(run, tmp_path):
    """A copy of a kernel's folder optimized beside the original is the same kernel (the same source, launch
    and options, on the same device) with another run id: fast_p counted it as two kernels (total 2),
    alone, in a folder of runs, and through its pairs. It is refused, naming both runs."""
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("vector_add.cl", "vector_add.yaml", "reference.py"):
        shutil.copy(run.parent / name, copy / name)
    twin = optimize_run(copy / "vector_add.cl", tmp_path / "runs" / "twin", "--rounds", "1", "--evaluations", "2",
                        "--repeats", "3", "--warmup", "1", "--final-repeats", "8", "--no-memcheck")
    shutil.copytree(run, tmp_path / "runs" / "first")
    pairs = tmp_path / "pairs.jsonl"
    assert run_cli("export", "pairs", str(run), "-o", str(pairs)).returncode == 0
    for args in ([str(run), str(twin)], [str(tmp_path / "runs")], [str(pairs), str(twin)]):
        r = run_cli("score", "fast-p", *args)
        assert r.returncode == 2 and "Traceback" not in r.stderr and not r.stdout, (r.stdout, r.stderr)
        assert "are two runs of the same kernel (vector_add: the same source, launch and compile options, on the " \
               "same device): fast_p would count it twice" in r.stderr
        assert "hint: fast_p counts each kernel once: score one run per kernel" in r.stderr
    # each alone, and a run with a copy of its own folder (one run), still score
    for args in ([str(twin)], [str(run), str(tmp_path / "runs" / "first")]):
        r = run_cli("score", "fast-p", *args, "--json")
        assert r.returncode == 0 and json.loads(r.stdout)["total"] == 1, r.stderr


def test_reward_of_an_optimize_runs_best_kernel(run):
    r = run_cli("score", "reward", str(run / "best.cl"), "--baseline", str(run / "original/vector_add.cl"),
                "--spec", str(run / "spec.yaml"), *QUICK, "--json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["compiles"] and got["correct"] and got["score"] >= 0.8


def test_bad_inputs(kernels, run, tmp_path):
    r = run_cli("score", "reward", str(kernels / "missing.cl"), "--baseline", str(kernels / "fast.cl"), *QUICK)
    assert r.returncode == 2 and "not found" in r.stderr and "Traceback" not in r.stderr
    shutil.copy(REPO / "kernels/examples/vector_add.cu", kernels / "fast_cuda.cu")
    r = run_cli("score", "reward", str(kernels / "fast_cuda.cu"), "--baseline", str(kernels / "fast.cl"), *QUICK)
    assert r.returncode == 2 and "language" in r.stderr and "hint:" in r.stderr
    r = run_cli("score", "reward", str(kernels / "fast.cl"), "--baseline", str(kernels / "broken.cl"), *QUICK)
    assert r.returncode == 4 and "does not compile" in r.stderr
    r = run_cli("score", "reward", str(kernels / "fast.cl"), "--baseline", str(kernels / "fast.cl"), *QUICK,
                "--shape-set", "nope")
    assert r.returncode == 2 and "no shape set" in r.stderr
    r = run_cli("score", "fast-p", str(run), "--p", "-1")
    assert r.returncode == 2 and "--p must be a finite number, 0 or more" in r.stderr
    r = run_cli("score", "fast-p", str(tmp_path / "nothing"))
    assert r.returncode == 2 and "no such run directory" in r.stderr
    bad = write(tmp_path, "bad.jsonl", '{"kernel": "x"}\n')
    r = run_cli("score", "fast-p", str(bad))
    assert r.returncode == 2 and "bad.jsonl:1: not a kerntune pair" in r.stderr
    unfinished = tmp_path / "unfinished"
    shutil.copytree(run, unfinished)
    m = json.loads((unfinished / "run.json").read_text())
    m["status"] = "interrupted"
    (unfinished / "run.json").write_text(json.dumps(m))
    r = run_cli("score", "fast-p", str(unfinished))
    said = " ".join(r.stderr.split())      # refused as `show` refuses it (record.ending), with its hint
    assert r.returncode == 2 and "stopped before its end was written (run.json says 'interrupted')" in said, said
    assert f"kerntune optimize --resume {unfinished}" in said, said


@pytest.mark.skipif(__import__("kerntune.engine.checker", fromlist=["x"]).oclgrind_library() is None,
                    reason="Oclgrind is not installed")
def test_a_crashing_candidate_is_sent_to_the_memory_checker(kernels):
    """A candidate that crashed its worker (SIGSEGV in the CPU runtime) was shown with the runtime's last
    words only. reward names the command that runs it under the memory checker, and that command (bench,
    which now checks a crashed kernel too) says where it reads out of bounds."""
    r = run_cli("score", "reward", str(kernels / "crash.cl"), "--baseline", str(kernels / "fast.cl"), *QUICK)
    said = " ".join(r.stdout.split())
    assert r.returncode == 0 and "verify: crash" in said, (said, r.stderr)
    assert "memory checker (Oclgrind)" in said and "`kerntune bench " in said, said
    command = said.split("`kerntune bench ", 1)[1].split("`", 1)[0]
    assert command == f"{kernels / 'crash.cl'} --spec {kernels / 'spec.yaml'} --device cpu", command
    # --json carries the same hint (it had none: a script saw the crash and not what to run)
    j = run_cli("score", "reward", str(kernels / "crash.cl"), "--baseline", str(kernels / "fast.cl"), *QUICK, "--json")
    doc = json.loads(j.stdout)
    assert j.returncode == 0 and doc["status"] == "crash", (doc, j.stderr)
    assert "memory checker (Oclgrind)" in doc.get("hint", ""), doc
    assert doc["hint"].split("`kerntune bench ", 1)[1].split("`", 1)[0] == command, doc["hint"]
    b = run_cli("bench", *command.split(), "--repeats", "5", "--warmup", "1")
    assert b.returncode != 0 and "Traceback" not in b.stderr, b.stderr
    assert "memory error under oclgrind" in b.stdout and "Invalid read" in b.stdout, b.stdout
    assert "found where" in " ".join(b.stderr.split()), b.stderr
