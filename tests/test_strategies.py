"""Strategy logic on synthetic objectives (no device needed): coverage, no
repeats, option validation, and that the searches actually climb."""

import math
import random

import pytest

from kerntune.errors import KerntuneError
from kerntune.tuner.space import Space
from kerntune.tuner.strategies import REGISTRY, make_strategy

SPACE = Space({"A": (1, 2, 4, 8, 16, 32), "B": (64, 128, 256, 512), "C": (False, True), "D": ("x", "y", "z")})


def objective(c):
    # a smooth bowl with its minimum at A=8, B=256, C=True, D='y'
    return (math.log2(c["A"]) - 3) ** 2 + (math.log2(c["B"]) - 8) ** 2 + (0 if c["C"] else 1) + \
        (0 if c["D"] == "y" else 0.5) + 1.0


def drive(name, budget, seed=0, **opts):
    s = make_strategy(name, SPACE, seed, opts)
    seen, best = [], math.inf
    while len(seen) < budget:
        c = s.ask()
        if c is None:
            break
        key = SPACE.key(c)
        score = objective(c)
        s.tell(c, score)
        if key not in seen:
            seen.append(key)
            best = min(best, score)
    return seen, best


def test_exhaustive_covers_everything_once_baseline_first():
    seen, best = drive("exhaustive", 10_000)
    assert len(seen) == SPACE.size == len(set(seen)) and seen[0] == SPACE.key(SPACE.baseline()) and best == 1.0


def test_random_never_repeats_and_is_seeded():
    a, _ = drive("random", SPACE.size + 5, seed=3)
    assert sorted(a) == sorted(set(a)) and len(a) == SPACE.size
    assert drive("random", 20, seed=3)[0] == a[:20] and drive("random", 20, seed=4)[0] != a[:20]


@pytest.mark.parametrize("name", ["local", "tpe", "nsga2"])
def test_guided_searches_beat_random_on_a_bowl(name):
    budget = 40   # a quarter of the space
    guided = sorted(drive(name, budget, seed=s)[1] for s in range(7))[3]
    rand = sorted(drive("random", budget, seed=s)[1] for s in range(7))[3]
    assert guided <= rand + 1e-9, (name, guided, rand)
    assert guided <= 1.5


def test_local_search_starts_at_the_baseline_and_escapes_optima():
    s = make_strategy("local", SPACE, 1)
    first = s.ask()
    assert first == SPACE.baseline()
    seen, best = drive("local", SPACE.size, seed=1)
    assert len(set(seen)) == len(seen) and best == 1.0


def test_unknown_options_list_the_allowed_ones():
    with pytest.raises(KerntuneError) as e:
        make_strategy("tpe", SPACE, 0, {"n_startup": "5"})
    assert "no option n_startup" in e.value.message and "n_startup_trials" in e.value.hint
    with pytest.raises(KerntuneError, match="expected an integer"):
        make_strategy("tpe", SPACE, 0, {"n_startup_trials": "many"})
    with pytest.raises(KerntuneError, match="unknown strategy"):
        make_strategy("annealing", SPACE, 0)
    assert make_strategy("tpe", SPACE, 0, {"multivariate": "false"}).opts["multivariate"] is False


@pytest.mark.parametrize("name,option,value,allowed", [
    ("local", "start", "bogus", "one of 'baseline', 'random'"),
    ("local", "perturbation", "-2", "an integer, at least 1"),
    ("random", "max_attempts", "0", "an integer, at least 1"),
    ("tpe", "n_startup_trials", "-1", "an integer, at least 0"),
    ("tpe", "multivariate", "maybe", "true or false"),
    ("nsga2", "population_size", "1", "an integer, at least 2"),     # was Optuna's ValueError: exit 70
    ("nsga2", "population_size", "2.5", "an integer, at least 2"),
    ("nsga2", "mutation_prob", "1.5", "a number in [0, 1], or -1"),
    ("nsga2", "mutation_prob", "nan", "a number in [0, 1], or -1"),
    ("nsga2", "crossover_prob", "-0.1", "a number in [0, 1]"),
    ("surrogate", "initial", "-1", "an integer, at least 0"),
    ("surrogate", "noise", "0", "a number above 0"),
    ("surrogate", "transfer", "inf", "a number above 0"),
    ("surrogate", "pool", "0", "an integer, at least 1"),
    ("surrogate", "exploit_every", "-4", "an integer, at least 0"),
])
def test_option_values_are_checked_against_their_meaning(name, option, value, allowed):
    with pytest.raises(KerntuneError) as e:
        make_strategy(name, SPACE, 0, {option: value})
    assert e.value.exit_status == 2
    assert e.value.message.startswith(f"strategy option {option}={value!r}: expected {allowed} (default ")
    assert e.value.hint.startswith(f"{option}: ")


def test_every_option_declares_what_it_allows():
    """A new option is checked the same way: a number declares its range, a text its choices, and the
    default is allowed (the `kerntune strategies` listing shows what is allowed)."""
    from kerntune.tuner.strategies import strategy_class

    for name in REGISTRY:
        for key, o in strategy_class(name).options.items():
            kind = type(o.default)
            if kind in (int, float):
                assert o.choices or o.min is not None or o.above is not None, (name, key)
            elif kind is not bool:
                assert o.choices, (name, key)
            assert o.parse(key, str(o.default)) == o.default, (name, key)
    assert make_strategy("nsga2", SPACE, 0, {"mutation_prob": "-1", "crossover_prob": "1"}).opts["mutation_prob"] == -1
    assert make_strategy("nsga2", SPACE, 0, {"mutation_prob": "0.25"}).opts["mutation_prob"] == 0.25
    assert make_strategy("local", SPACE, 0, {"start": "random", "perturbation": "5"}).opts["start"] == "random"


def test_failed_configurations_are_handled():
    for name in REGISTRY:
        s = make_strategy(name, SPACE, 0)
        for _ in range(15):
            c = s.ask()
            if c is None:
                break
            s.tell(c, math.inf if random.Random(SPACE.key(c)).random() < 0.5 else objective(c))


def test_space_neighbours_and_restrictions():
    from kerntune.spec.model import Shape

    c = {"A": 8, "B": 64, "C": False, "D": "x"}
    n = SPACE.neighbours(c)
    assert {"A": 4, "B": 64, "C": False, "D": "x"} in n and {"A": 16, "B": 64, "C": False, "D": "x"} in n
    assert {"A": 8, "B": 128, "C": False, "D": "x"} in n and {"A": 8, "B": 64, "C": True, "D": "x"} in n
    assert len(n) == 2 + 1 + 1 + 2
    r = Space({"V": (1, 3)}, ("n % V == 0",))
    assert r.violated({"V": 3}, [Shape.of({"n": 9})]) is None
    assert "fails at n=10" in r.violated({"V": 3}, [Shape.of({"n": 9}), Shape.of({"n": 10})])
