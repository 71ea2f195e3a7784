"""Parameter values set aside after failing verification (kerntune.tuner.setaside): the
record's rules on evaluation records, then the share of a real tuning run's budget a
failing value may take, for every strategy, across a resume, and across optimize rounds.

The live kernel is tests/data/softmax.cl, whose spec's tolerance the precise exp meets and
the fast-math variants (native_exp: FAST_MATH=True, -cl-fast-relaxed-math: FAST_FLAGS=True)
never do on Intel's CPU runtime (on PoCL they do, and the live tests skip, saying so)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from kerntune.agents.rules.catalog import apply_catalog
from kerntune.agents.rules.generic import CompilerFlags, FastMath, Unroll
from kerntune.agents.rules.launch import LaunchConfig
from kerntune.engine.evaluate import EvalRequest, KernelInstance
from kerntune.results import ArgCheck, EvalResult, ShapeCheck, Status, Verification
from kerntune.spec.load import load_file
from kerntune.tuner.evaluators import LiveEvaluator
from kerntune.tuner.run import TuneSettings, Tuner
from kerntune.tuner.setaside import EARLIER_KEY, REASON, SET_ASIDE_AFTER, SET_ASIDE_AFTER_KNOWN, SetAside
from kerntune.tuner.space import Space
from kerntune.tuner.store import Evaluation, RunStore
from kerntune.tuner.strategies import REGISTRY
from kerntune.tuner.summary import summarize
from kerntune.tuner.template import parse_template
from tests.conftest import REPO, run_cli

SOFTMAX = REPO / "tests/data/softmax.cl"
SOFTMAX_SPEC = REPO / "tests/data/softmax.yaml"
PARAMS = {"BLOCK": (128, 64, 256), "VEC": (1, 2, 4), "FAST_FLAGS": (False, True)}
SHARE = 4       # the documented most a value shown to fail verification may take of a round's budget


# --- the record, on evaluation records ----------------------------------------------------------

def wrong(*pairs: tuple[str, str]) -> EvalResult:
    args = [ArgCheck(name=a, ok=False, reason=r) for a, r in pairs]
    return EvalResult(status=Status.WRONG_RESULT, message="", verification=Verification(
        ok=False, reference="kernel", seed=1, shapes=[ShapeCheck(shape={"n": 1}, label="s", seed=1, ok=False,
                                                                 args=args)]))


def ev(i: int, config: dict, result: EvalResult, counted: bool = True, duplicate_of=None) -> Evaluation:
    return Evaluation(id=i, key=str(i), config=config, source_hash=str(i), status=result.status.value, reason="",
                      message="", counted=counted, duplicate_of=duplicate_of, score=None, result=result, started=0,
                      finished=0)


def cfg(block=128, vec=1, flags=False) -> dict:
    return {"BLOCK": block, "VEC": vec, "FAST_FLAGS": flags}


OK = EvalResult(status=Status.OK)


def test_set_aside_after_three_failures_for_the_same_reason():
    ledger = SetAside(PARAMS)
    for i, block in enumerate((128, 64, 256)):
        assert ledger.blocks(cfg(flags=True)) is None
        ledger.observe(ev(i, cfg(block=block, flags=True), wrong(("out", "tolerance"))))
    hit = ledger.blocks(cfg(block=64, vec=4, flags=True))
    assert hit is not None and (hit.param, hit.value, hit.reason, hit.failed, hit.measured) == \
        ("FAST_FLAGS", True, "out: tolerance", 3, 3)
    assert ledger.blocks(cfg(flags=False)) is None
    assert SET_ASIDE_AFTER + 1 == SHARE          # three failures, then once alone


def test_not_set_aside_when_reasons_differ_a_configuration_passes_or_evidence_is_not_measured():
    ledger = SetAside(PARAMS)
    ledger.observe(ev(1, cfg(vec=2), wrong(("out", "tolerance"))))
    ledger.observe(ev(2, cfg(vec=2, block=64), wrong(("out", "nonfinite"))))
    ledger.observe(ev(3, cfg(vec=2, block=256), wrong(("out", "unwritten"))))
    assert ledger.blocks(cfg(vec=2)) is None                 # three failures, three reasons
    ledger.observe(ev(4, cfg(vec=2, flags=True), wrong(("out", "tolerance"), ("out", "unwritten"))))
    assert ledger.blocks(cfg(vec=2)) is None                 # two of each so far
    ledger.observe(ev(5, cfg(vec=2, block=64, flags=True), OK))
    ledger.observe(ev(6, cfg(vec=2, block=256, flags=True), wrong(("out", "tolerance"))))
    assert ledger.blocks(cfg(vec=2)) is None                 # VEC=2 passed once: never set aside
    # pruned, unmeasured and duplicate rows are no evidence
    ledger = SetAside(PARAMS)
    failed = wrong(("out", "tolerance"))
    ledger.observe(ev(1, cfg(vec=4), failed, counted=False))
    ledger.observe(ev(2, cfg(vec=4), failed, duplicate_of=1))
    ledger.observe(ev(3, cfg(vec=4), EvalResult(status=Status.COMPILE_ERROR)))
    ledger.observe(ev(4, cfg(vec=4), failed))
    ledger.observe(ev(5, cfg(vec=4, block=64), failed))
    assert ledger.blocks(cfg(vec=4)) is None
    ledger.observe(ev(6, cfg(vec=4, block=256), failed))
    assert ledger.blocks(cfg(vec=4)).measured == 4 and ledger.blocks(cfg(vec=4)).failed == 3


def test_first_values_are_never_set_aside_and_explained_failures_do_not_count():
    ledger = SetAside(PARAMS)
    ledger.observe(ev(0, cfg(block=64), OK))
    for i, block in enumerate((64, 256, 64), start=1):
        ledger.observe(ev(i, cfg(block=block, vec=4, flags=True), wrong(("out", "tolerance"))))
    # VEC=4 and FAST_FLAGS=True failed together every time, neither alone: neither is set aside
    # (BLOCK=64 passed; BLOCK=128, VEC=1, FAST_FLAGS=False are first values)
    assert ledger.entries() == []
    assert ledger.blocks(cfg()) is None
    # VEC=4 passes: the failures are FAST_FLAGS=True's alone (two of them: BLOCK=256 is untried)
    ledger.observe(ev(4, cfg(vec=4), OK))
    assert [(v.param, v.value, v.failed, v.measured) for v in ledger.entries()] == [("FAST_FLAGS", True, 3, 3)]
    # a configuration holding a set-aside value is explained by it: no evidence against BLOCK=256
    ledger.observe(ev(9, cfg(block=256, flags=True), wrong(("out", "tolerance"))))
    assert ledger.tallies[("BLOCK", "256")].measured == 1


def test_a_value_failing_only_beside_others_is_tried_alone_once():
    """The naive SiLU case: a 2-D grid that is correct failed three times, each time beside a
    fast-math value; tried alone it passes and is never set aside, while the fast-math value,
    tried alone, fails and is."""
    params = {"GRID2D": (False, True), "FAST_MATH": (False, True), "FAST_FLAGS": (False, True)}
    ledger = SetAside(params)
    tol = wrong(("out", "tolerance"))
    for i, (fm, ff) in enumerate(((False, True), (True, False), (True, True))):
        ledger.observe(ev(i, {"GRID2D": True, "FAST_MATH": fm, "FAST_FLAGS": ff}, tol))
    assert ledger.entries() == []
    first = ledger.probe()
    assert first == {"GRID2D": True, "FAST_MATH": False, "FAST_FLAGS": False}
    ledger.observe(ev(3, first, OK))
    # the grid passed: each earlier failure beside one fast-math value is now that value's alone
    assert ledger.probe() is None and ledger.entries() == []        # two failures each so far
    ledger.observe(ev(4, {"GRID2D": False, "FAST_MATH": True, "FAST_FLAGS": True}, tol))
    assert sorted((v.param, v.value, v.failed) for v in ledger.entries()) == [("FAST_FLAGS", True, 3),
                                                                            ("FAST_MATH", True, 3)]
    assert ledger.blocks(first) is None


def test_two_approximations_failing_together_blame_no_other_value():
    """tanh-exp and the fast-math flag each pass alone and fail together (NaN on Intel's runtime): naive
    gelu_tanh_and_mul_rows saw fifteen such failures set aside VEC=4 and UNROLL_0=4, innocent values
    whose every other value had passed somewhere. A failure with two approximations on is the pair's:
    the other value is tried alone instead, passes, and stays."""
    params = {"VEC": (1, 4), "UNROLL_0": (0, 4), "TANH_EXP": (False, True), "FAST_FLAGS": (False, True)}
    ledger = SetAside(params)
    base = {"VEC": 1, "UNROLL_0": 0, "TANH_EXP": False, "FAST_FLAGS": False}
    ledger.observe(ev(0, {**base, "TANH_EXP": True}, OK))
    ledger.observe(ev(1, {**base, "FAST_FLAGS": True}, OK))
    nan = wrong(("out", "nonfinite"))
    for i, unroll in enumerate((0, 4, 0), start=2):
        ledger.observe(ev(i, {**base, "VEC": 4, "UNROLL_0": unroll, "TANH_EXP": True, "FAST_FLAGS": True}, nan))
    assert ledger.entries() == []                     # it was [VEC=4] (and UNROLL_0=4 on more failures)
    alone = ledger.probe()
    assert alone == {**base, "VEC": 4}
    ledger.observe(ev(5, alone, OK))
    assert ledger.blocks({**base, "VEC": 4, "TANH_EXP": True}) is None
    assert ledger.blocks({**base, "VEC": 4, "UNROLL_0": 4, "FAST_FLAGS": True}) is None
    # with VEC=4 cleared, the three failures are the pair's alone: the pair is set aside, neither half
    (pair,) = ledger.entries()
    assert (pair.param, pair.value, pair.also, pair.failed, pair.measured) == ("FAST_FLAGS", True,
                                                                               {"TANH_EXP": True}, 3, 3)
    assert pair.describe().startswith("FAST_FLAGS=True with TANH_EXP=True: 3 of 3 measured")
    assert ledger.blocks({**base, "UNROLL_0": 4, "TANH_EXP": True, "FAST_FLAGS": True}) == pair


def test_a_pair_of_approximations_is_set_aside_only_on_its_own_evidence():
    params = {"VEC": (1, 4), "FAST_MATH": (False, True), "TANH_EXP": (False, True), "FAST_FLAGS": (False, True)}
    base = {"VEC": 1, "FAST_MATH": False, "TANH_EXP": False, "FAST_FLAGS": False}
    nan = wrong(("out", "nonfinite"))
    # three approximations on: which two are to blame is not known, so no pair is set aside
    ledger = SetAside(params)
    for i, vec in enumerate((1, 4, 1)):
        ledger.observe(ev(i, {**base, "VEC": vec, "FAST_MATH": True, "TANH_EXP": True, "FAST_FLAGS": True}, nan))
    assert ledger.pairs_aside == {}
    # a pair that passed once is not set aside, however often it failed
    ledger = SetAside(params)
    ledger.observe(ev(0, {**base, "TANH_EXP": True, "FAST_FLAGS": True}, OK))
    for i in range(1, 5):
        ledger.observe(ev(i, {**base, "TANH_EXP": True, "FAST_FLAGS": True}, nan))
    assert ledger.entries() == []
    # a pair set aside in an earlier round is confirmed by one failure of its own, and resumed runs agree
    earlier = [{"param": "FAST_FLAGS", "value": True, "reason": "out: nonfinite", "also": {"TANH_EXP": True}}]
    ledger = SetAside(params, earlier)
    ledger.observe(ev(0, {**base, "TANH_EXP": True, "FAST_FLAGS": True}, nan))
    (hit,) = ledger.entries()
    assert hit.earlier and hit.failed == 1 and hit.also == {"TANH_EXP": True}
    assert ledger.blocks({**base, "FAST_FLAGS": True}) is None and ledger.blocks({**base, "TANH_EXP": True}) is None


def test_a_value_set_aside_in_an_earlier_round_is_confirmed_by_one_failure():
    earlier = [{"param": "FAST_FLAGS", "value": True, "reason": "out: tolerance"}]
    ledger = SetAside(PARAMS, earlier)
    ledger.observe(ev(1, cfg(block=64, flags=True), wrong(("out", "nonfinite"))))
    assert ledger.blocks(cfg(flags=True)) is None            # another reason: the usual three
    ledger.observe(ev(2, cfg(vec=2, flags=True), wrong(("out", "tolerance"))))
    assert ledger.blocks(cfg(flags=True)) is None            # beside VEC=2, untried: tried alone first
    assert ledger.probe() == cfg(flags=True) and ledger.probe() is None
    ledger.observe(ev(3, cfg(flags=True), wrong(("out", "tolerance"))))
    hit = ledger.blocks(cfg(flags=True))
    assert hit is not None and hit.earlier and hit.failed == 2


# --- a real tuning run -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def softmax():
    loaded = load_file(SOFTMAX_SPEC)
    result = apply_catalog(SOFTMAX.read_text(), "opencl", loaded.spec,
                           rules=[LaunchConfig(), Unroll(), FastMath(), CompilerFlags()])
    template = parse_template(result.template, "opencl", "softmax template")
    assert {"FAST_MATH", "FAST_FLAGS"} <= set(template.decl.params)
    original = KernelInstance(SOFTMAX.read_text(), "softmax", "opencl", label="original")
    return template, loaded, original


@pytest.fixture(scope="module")
def fast_math_fails(worker, softmax):
    """The live tests' premise: both fast-math values fail the spec's tolerance on this device.
    Intel's CPU runtime: they do. PoCL's CPU device computes the same exp with and without them, so
    nothing there is ever set aside, and the live tests skip, saying so (the record's rules above
    run everywhere)."""
    from kerntune.spec.shapes import verification_shapes

    template, loaded, _ = softmax
    base = Space.of(template).baseline()
    passing = []
    for param in ("FAST_MATH", "FAST_FLAGS"):
        inst = template.instance({**base, param: True}, loaded.spec)
        r = worker.evaluate(EvalRequest(inst, loaded.spec, str(loaded.base_dir), tuple(verification_shapes(loaded.spec)),
                                        (), seed=3, reference=None, use_numpy_reference=True, timing=None), 300)
        if r.status is Status.OK:
            passing.append(param)
    if passing:
        pytest.skip(f"{' and '.join(passing)}=True meet{'s' if len(passing) == 1 else ''} the softmax's tolerance on "
                    f"{worker.info.name} ({worker.info.driver}): no value here always fails verification")


def tune(worker, softmax, run_dir, create=True, **settings):
    template, loaded, original = softmax
    store = RunStore.in_dir(run_dir, create=create)
    tuner = Tuner(template, loaded, LiveEvaluator(worker), store,
                  TuneSettings(**{"warmup": 1, "repeats": 3, **settings}), original)
    store.set("stop_reason", tuner.run())
    return store


def measured_with(store: RunStore, param: str, value) -> list:
    return [e for e in store.evaluations() if e.counted and e.config.get(param) == value]


@pytest.mark.slow
@pytest.mark.parametrize("strategy", sorted(REGISTRY))
def test_a_failing_value_takes_at_most_three_evaluations_of_the_budget(worker, softmax, fast_math_fails, tmp_path,
                                                                     strategy):
    budget = 24
    store = tune(worker, softmax, tmp_path / "run", strategy=strategy, budget=budget, seed=3)
    assert sum(1 for e in store.evaluations() if e.counted) == budget
    summary = summarize(store)
    aside = {(v.param, v.value): v for v in summary.set_aside}
    for param in ("FAST_MATH", "FAST_FLAGS"):
        spent = measured_with(store, param, True)
        assert all(e.status == Status.WRONG_RESULT.value for e in spent)       # the premise: it always fails
        assert len(spent) <= SHARE, (param, len(spent))
        if len(spent) == SHARE:
            assert aside[(param, True)].reason == "out: tolerance"
    answered = [e for e in store.evaluations() if e.reason == REASON]
    assert all(not e.counted for e in answered)
    assert len(answered) == sum(v.answered for v in summary.set_aside)


@pytest.mark.slow
def test_set_aside_values_survive_a_resume(worker, softmax, fast_math_fails, tmp_path):
    run = tmp_path / "run"
    tune(worker, softmax, run, strategy="exhaustive", budget=5)
    first = RunStore.in_dir(run)
    spent_before = len(measured_with(first, "FAST_FLAGS", True))
    first.close()
    store = tune(worker, softmax, run, create=False, strategy="exhaustive", budget=20)
    # exhaustive alternates FAST_FLAGS (the last parameter): without the record it would spend 10 of 20;
    # in declaration order it fails beside first or passing values, so three failures set it aside
    assert spent_before >= 1 and len(measured_with(store, "FAST_FLAGS", True)) == SET_ASIDE_AFTER
    assert any(e.reason == REASON for e in store.evaluations())
    assert [(v.param, v.value) for v in summarize(store).set_aside if v.param == "FAST_FLAGS"] == [("FAST_FLAGS", True)]


@pytest.mark.slow
def test_optimize_rounds_carry_set_aside_values_and_say_so(fast_math_fails, tmp_path):
    run = tmp_path / "run"
    r = run_cli("optimize", str(SOFTMAX), "--device", "cpu", "-e", "60", "--rounds", "2", "-r", "5", "--warmup", "1",
                "--final-repeats", "10", "--run-dir", str(run))
    assert r.returncode == 0, r.stderr
    rounds = json.loads((run / "run.json").read_text())["rounds"]
    assert len(rounds) == 2 and all(rd["status"] == "done" for rd in rounds)
    assert any(v.startswith("FAST_FLAGS=True") for v in rounds[0]["set_aside"])
    assert "FAST_FLAGS=True" in rounds[1]["plan"]["why"]                  # the planner says so
    assert "set aside" in r.stdout and "FAST_FLAGS=True" in r.stdout     # and so does the command
    assert "set aside" in (run / "report.md").read_text()
    db = sqlite3.connect(run / "rounds/02/tuning.db")
    spent = db.execute("SELECT COUNT(*) FROM evaluations WHERE counted = 1 AND config LIKE '%\"FAST_FLAGS\": true%'")
    assert spent.fetchone()[0] <= SET_ASIDE_AFTER_KNOWN + 1               # confirmed once in round 2 (alone)
    assert json.loads(db.execute("SELECT value FROM meta WHERE key = ?", (EARLIER_KEY,)).fetchone()[0])
