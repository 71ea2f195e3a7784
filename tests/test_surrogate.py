"""The default strategy (surrogate): determinism per seed, no repeats,
pruned configurations never proposed again nor modelled, the
budget respected through the real tuner on a recorded space, and that the
model actually helps."""

import importlib
import json
import math
import sys

import pytest

from kerntune.errors import KerntuneError
from kerntune.tuner.space import Space
from kerntune.tuner.strategies import DEFAULT_STRATEGY, make_strategy
from tests.conftest import REPO, run_cli
from tests.test_strategies import SPACE, drive, objective


def script(name: str):
    """A module of scripts/ (the benchmark scripts), imported."""
    if str(REPO / "scripts") not in sys.path:
        sys.path.insert(0, str(REPO / "scripts"))
    return importlib.import_module(name)


def proposals(space, seed, n, score=objective, **opts):
    s = make_strategy("surrogate", space, seed, opts)
    out = []
    for _ in range(n):
        c = s.ask()
        if c is None:
            break
        out.append(c)
        s.tell(c, score(c))
    return out


def sequence(space, seed, n, score=objective, **opts):
    return [space.key(c) for c in proposals(space, seed, n, score, **opts)]


def test_default_is_the_surrogate():
    from kerntune.tuner.run import TuneSettings

    assert DEFAULT_STRATEGY == "surrogate" == TuneSettings().strategy


def test_deterministic_per_seed_and_seeds_differ():
    a = sequence(SPACE, 5, 40)
    assert a == sequence(SPACE, 5, 40)
    assert a != sequence(SPACE, 6, 40)


def test_every_configuration_once_then_done():
    seen = sequence(SPACE, 0, SPACE.size + 10)
    assert len(seen) == SPACE.size == len(set(seen))


def test_beats_random_on_a_bowl_and_finds_the_minimum():
    budget = 20     # an eighth of the space
    ours = sorted(drive("surrogate", budget, seed=s)[1] for s in range(9))
    rand = sorted(drive("random", budget, seed=s)[1] for s in range(9))
    assert ours[4] < rand[4], (ours, rand)
    assert drive("surrogate", 40, seed=0)[1] == 1.0


def test_pruned_configurations_are_never_proposed_again_nor_modelled():
    # half the space fails (told inf, as the tuner tells a pruned configuration): the search goes on,
    # never proposes one of them twice, and still finds the best feasible configuration
    def score(c):
        return math.inf if c["D"] == "y" else objective(c)

    s = make_strategy("surrogate", SPACE, 1)
    told, best = [], math.inf
    while True:
        c = s.ask()
        if c is None:
            break
        told.append(SPACE.key(c))
        best = min(best, score(c))
        s.tell(c, score(c))
    assert len(told) == len(set(told)) == SPACE.size
    assert best == 1.5
    assert len(s._rows) == SPACE.size * 2 // 3      # only finite scores enter the model


def test_large_spaces_are_sampled_without_repeats():
    space = Space({f"P{i}": (1, 2, 4, 8, 16) for i in range(6)})   # 15625 configurations
    seen = sequence(space, 0, 60, score=lambda c: sum(abs(v - 4) for v in c.values()) + 1.0, pool=500)
    assert len(seen) == 60 == len(set(seen))


def test_unknown_option_lists_the_allowed_ones():
    with pytest.raises(KerntuneError) as e:
        make_strategy("surrogate", SPACE, 0, {"budget": "5"})
    assert "no option budget" in e.value.message and "exploit_every" in e.value.hint


def test_budget_and_feasible_set_through_the_tuner(tmp_path):
    """A recorded merge_attn_states space (48 of 432 configurations measurable): the default spends
    exactly its budget of measured evaluations, asks no configuration twice, and reaches the optimum
    more often than not within half the measurable space."""
    bench = script("bench_strategies")
    run = bench.load_space(REPO / "bench" / "data" / "merge-template-prefill-512.json.gz", tmp_path)
    opt, _, measurable, _ = bench.optimum(run)
    found = 0
    for seed in range(3):
        trace = bench.replay(run, DEFAULT_STRATEGY, seed, 24)
        assert len(trace) == 24
        found += trace[-1] == opt
    assert found >= 2


def test_the_option_sweep_replays_as_the_tuner_does(tmp_path):
    """scripts/sweep_surrogate.py replays without the tuner; on a recorded space it must find, seed
    for seed and budget for budget, what the tuner's replay (bench_strategies.py) finds."""
    import math

    bench, sweep = script("bench_strategies"), script("sweep_surrogate")

    name = "sgemm-template-sq64.json.gz"         # 864 configurations, 37 measurable: pruning matters
    run = bench.load_space(REPO / "bench" / "data" / name, tmp_path)
    opt = bench.optimum(run)[0]
    budgets = [4, 10, 19]
    for seed in range(3):        # the default plans with its budget: one run per budget
        found = [min(bench.replay(run, DEFAULT_STRATEGY, seed, b)[:b], default=math.inf) for b in budgets]
        _, _, fractions, _ = sweep._replay((name, seed, {}, budgets))
        assert fractions == pytest.approx([opt / f for f in found], rel=1e-9)


def test_the_tuner_tells_the_strategy_what_its_budget_leaves(tmp_path, monkeypatch):
    """Before each proposal the tuner says how many measured evaluations the budget still allows (the
    queued ones taken off) and of how many; a run with no budget says nothing."""
    from kerntune.tuner.strategies.surrogate import Surrogate

    bench = script("bench_strategies")
    run = bench.load_space(REPO / "bench" / "data" / "merge-template-prefill-512.json.gz", tmp_path)
    told = []
    real = Surrogate.budget
    monkeypatch.setattr(Surrogate, "budget", lambda self, left, total: told.append((left, total)) or
                        real(self, left, total))
    assert len(bench.replay(run, DEFAULT_STRATEGY, 0, 12)) == 12
    assert told and {t for _, t in told} == {12} and told[0][0] == 12
    lefts = [left for left, _ in told]
    assert all(0 <= b <= a for a, b in zip(lefts, lefts[1:])) and min(lefts) <= 1


def test_the_end_of_a_known_budget_goes_to_the_posterior_means_favourites():
    """With a budget of 20, the last ceil(0.15 * 20) = 3 proposals are each the untried configuration the
    posterior mean predicts fastest; earlier ones are mostly Thompson draws, which differ from it."""
    space = Space({"A": tuple(range(8)), "B": tuple(range(8)), "C": (0, 1, 2)})
    score = lambda c: 1.0 + (c["A"] - 5) ** 2 + 0.5 * (c["B"] - 2) ** 2 + 0.2 * c["C"]  # noqa: E731
    s = make_strategy("surrogate", space, 1, {"exploit_every": 0})
    favourite = []
    for n in range(20):
        s.budget(20 - n, 20)
        c = s.ask()
        if s._mean is not None and len(s._rows) >= 3:
            i = s._at(s._row(c))
            s._untried[i] = True
            pred = s._f.predict(s._mean[:, None], s._pool)[:, 0]
            favourite.append(bool(pred[i] <= pred[s._untried].min() + 1e-4))
            s._untried[i] = False
        s.tell(c, score(c))
    assert favourite[-3:] == [True, True, True]
    assert not all(favourite[:-3])


def test_tune_uses_the_default_and_lists_it(tmp_path):
    src = REPO / "bench" / "data" / "sgemm-template-sq64.json.gz"
    run_dir = tmp_path / "imported"
    r = run_cli("kt-cache", "import", str(src), "--run-dir", str(run_dir))
    assert r.returncode == 0, r.stderr
    r = run_cli("tune", "--device", f"replay:{run_dir}", "--budget", "6", "--run-dir", str(tmp_path / "t"), "--json")
    assert r.returncode == 0, r.stderr
    from kerntune.tuner.store import RunStore

    store = RunStore.in_dir(tmp_path / "t")
    assert store.get("settings")["strategy"] == "surrogate" and store.counted() == 6
    keys = [e.key for e in store.evaluations()]
    assert len(keys) == len(set(keys))
    r = run_cli("strategies")
    assert "surrogate (the default)" in r.stdout


def test_cap_keeps_a_slow_cliff_from_taking_the_fit():
    """One parameter pair falls off a cliff (1000x slower): fitted to the raw log scores, the model's
    favourite is often far from the best; capped at the 75th percentile (the default) it is among the
    true best three."""
    import random

    import numpy as np

    def cliff(c):
        return objective(c) * (1000.0 if c["B"] == 64 and c["A"] >= 16 else 1.0)

    configs = list(SPACE.configs())
    truth = sorted(configs, key=cliff)

    def favourite_rank(cap, seed):
        s = make_strategy("surrogate", SPACE, 0, {"cap": cap})
        for c in random.Random(seed).sample(configs, 40):
            s.tell(c, cliff(c))
        s._solve(1)
        pred = s._f.predict(s._mean[:, None], s._pool)[:, 0]
        return truth.index(s._config(tuple(int(x) for x in s._pool[int(np.argmin(pred))])))

    capped = [favourite_rank(0.75, seed) for seed in range(10)]
    raw = [favourite_rank(1.0, seed) for seed in range(10)]
    assert sum(r < 3 for r in capped) >= 8, capped
    assert sum(r < 3 for r in raw) <= 5, raw


@pytest.mark.parametrize("cap", ["0", "1.5", "-0.2"])
def test_cap_must_be_a_quantile(cap):
    with pytest.raises(KerntuneError) as e:
        make_strategy("surrogate", SPACE, 0, {"cap": cap})
    assert "cap" in e.value.message and "(0, 1]" in e.value.message


@pytest.mark.parametrize("finish", ["1.5", "-0.1"])
def test_finish_must_be_a_share(finish):
    with pytest.raises(KerntuneError) as e:
        make_strategy("surrogate", SPACE, 0, {"finish": finish})
    assert "finish" in e.value.message and "[0, 1]" in e.value.message and e.value.hint


def test_exploit_step_is_the_posterior_means_favourite_anywhere():
    """Where only a diagonal of the space can run (tile sizes whose product is fixed, as in sgemm), the
    best configuration's one-parameter neighbours cannot run. With every proposal after the initial ones
    an exploit step, each proposal is the untried configuration the posterior mean predicts fastest, and
    the search walks along the diagonal (two parameters changed at once) to the best runnable one."""

    space = Space({"BM": (16, 32, 64, 128, 256), "BN": (16, 32, 64, 128, 256), "K": (1, 2, 4)})

    def score(c):
        if c["BM"] * c["BN"] != 4096:
            return math.inf
        return 1.0 + abs(math.log2(c["BM"]) - 7) + 0.3 * abs(c["K"] - 2)

    s = make_strategy("surrogate", space, 3, {"exploit_every": 1})
    told, steps = [], 0
    while len(s._rows) < 9:
        exploit = len(s._rows) >= 3
        c = s.ask()
        assert c is not None and space.key(c) not in told
        if exploit:     # no untried configuration has a lower posterior mean (float32 scoring: near-ties)
            pred = s._f.predict(s._mean[:, None], s._pool)[:, 0]
            chosen = pred[s._at(s._row(c))]
            s._untried[s._at(s._row(c))] = True
            assert chosen <= pred[s._untried].min() + 1e-4
            s._untried[s._at(s._row(c))] = False
            steps += 1
        told.append(space.key(c))
        s.tell(c, score(c))
    assert steps > 0
    best = min(s._y)
    assert math.exp(best) == 1.0        # BM=128, BN=32, K=2 (two parameters away from any other runnable one)


def test_a_value_set_aside_is_never_proposed_again():
    """The tuner sets FAST=True aside after it failed verification: the surrogate stops proposing
    any configuration with it (they would only be answered with the failure)."""
    from kerntune.tuner.space import Space
    from kerntune.tuner.strategies import make_strategy
    from kerntune.tuner.template import parse_template

    t = parse_template("{# kerntune-template\nkernel: k\nparams:\n  A: [1, 2, 3, 4, 5, 6, 7, 8]\n"
                       "  B: [1, 2, 3, 4]\n  FAST: [false, true]\nlaunch: {grid: [1], block: [1]}\n#}\n__kernel void k() {}\n", "opencl", "t")
    s = make_strategy("surrogate", Space.of(t), 0, {})
    seen = []
    for i in range(40):
        c = s.ask()
        if c is None:
            break
        seen.append(c)
        if i == 5:
            s.exclude("FAST", True)
        s.tell(c, 1.0 + 0.1 * c["A"] + (5.0 if c["FAST"] else 0.0))
    assert not any(c["FAST"] for c in seen[6:])
    # it ran out once every configuration without the value was proposed, each once
    assert sorted((c["A"], c["B"]) for c in seen if not c["FAST"]) == [(a, b) for a in range(1, 9) for b in range(1, 5)]
    assert s.ask() is None
    s.exclude("FAST", "no such value")        # unknown values and parameters are ignored
    s.exclude("NOPE", 1)


def test_declared_first_measures_the_authors_first_choices_first():
    """declared_first=N: the first N configurations that measure (pruned ones cost nothing and are
    skipped) are the first in declaration order; then the search goes on as usual."""
    def score(c):
        return math.inf if c["D"] == "y" else objective(c)

    feasible = [c for c in SPACE.configs() if c["D"] != "y"]
    s = make_strategy("surrogate", SPACE, 3, {"declared_first": 2})
    measured = []
    while len(measured) < 6:
        c = s.ask()
        if math.isfinite(score(c)):
            measured.append(SPACE.key(c))
        s.tell(c, score(c))
    assert measured[:2] == [SPACE.key(c) for c in feasible[:2]]
    assert measured[2:4] != [SPACE.key(c) for c in feasible[2:4]]     # no longer in order: the usual search
    off = make_strategy("surrogate", SPACE, 3, {"declared_first": 0, "near": 0})
    assert SPACE.key(off.ask()) != SPACE.key(feasible[0]) or SPACE.key(off.ask()) != SPACE.key(feasible[1])


def test_the_default_starts_at_the_authors_choice_then_its_best_looking_neighbour():
    """By default the first measurement is the first feasible configuration in declaration order and the
    second a one-parameter neighbour of it (adjacent value for numbers), whichever a posterior draw
    favours; pruned neighbours cost nothing and are passed over; then the model searches anywhere."""
    def score(c):
        return math.inf if c["B"] == 128 else objective(c)      # prunes A=1's neighbour B=128

    for seed in range(6):
        s = make_strategy("surrogate", SPACE, seed)
        measured = []
        while len(measured) < 3:
            c = s.ask()
            if math.isfinite(score(c)):
                measured.append(c)
            s.tell(c, score(c))
        first, second = measured[:2]
        assert first == SPACE.baseline()
        changed = [k for k in first if first[k] != second[k]]
        assert len(changed) == 1
        assert changed != ["B"]                                  # its only neighbour in B was pruned
        if changed == ["A"]:
            assert second["A"] == 2                              # numbers: the adjacent value only
        third = measured[2]
        assert sum(first[k] != third[k] for k in first) >= 2     # space filling: far from the start


def test_the_option_sweep_scores_other_recordings(tmp_path):
    """--results points the sweep at another benchmark's spaces, replayed from their own recordings."""
    sweep = script("sweep_surrogate")
    results = REPO / "bench" / "results" / "strategies-rerecorded-2026-11-28.json"
    spaces = sweep.selected("sgemm-template-sq64", [results])
    assert spaces["sgemm-template-sq64.json.gz"]["source"].startswith("bench/results/rerecorded-xeon-2026-11-27/")
    r = sweep.sweep(spaces, {}, 3, 1)
    stored = json.loads(results.read_text())["spaces"]["sgemm-template-sq64.json.gz"]["kerntune"][DEFAULT_STRATEGY]
    for f in ("0.1", "0.25", "0.5"):       # the first 3 of the stored 20 seeds: their fractions, replayed again
        assert r["spaces"]["sgemm-template-sq64.json.gz"]["cells"][f]["worst"] == \
            pytest.approx(min(stored["per_seed"][f][:3]), abs=1e-4)


def test_the_option_sweep_replays_fresh_seeds_from_first_seed():
    """--first-seed F replays seeds F.. (scored against the same stored Kernel Tuner medians): seeds 1-2 give
    the benchmark's per-seed fractions 1-2, not 0-1."""
    sweep = script("sweep_surrogate")
    results = REPO / "bench" / "results" / "strategies-rerecorded-2026-11-28.json"
    spaces = sweep.selected("stencil-template-rect", [results])
    stored = spaces["stencil-template-rect.json.gz"]["kerntune"][DEFAULT_STRATEGY]["per_seed"]
    r = sweep.sweep(spaces, {}, 2, 1, first_seed=1)
    for f in ("0.1", "0.25", "0.5"):
        cell = r["spaces"]["stencil-template-rect.json.gz"]["cells"][f]
        assert cell["worst"] == pytest.approx(min(stored[f][1:3]), abs=1e-4)
        assert cell["median"] == pytest.approx(sum(stored[f][1:3]) / 2, abs=1e-4)
        assert cell["mean"] == pytest.approx(sum(stored[f][1:3]) / 2, abs=1e-4)     # two seeds: the median
        assert r["mean_fraction"][f] == cell["mean"]                               # one space


def test_the_option_sweep_refuses_a_file_that_is_not_results(tmp_path):
    import subprocess
    import sys

    bad = tmp_path / "bad.json"
    bad.write_text("{")
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "sweep_surrogate.py"), "--results", str(bad)],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and "not a benchmark results file" in r.stderr and "Traceback" not in r.stderr
