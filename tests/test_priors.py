"""tune --prior: the default strategy starting from earlier measurements of the same template (another
shape, device or run). What it reads (a run directory, a Kernel Tuner cache), what it keeps (only
configurations of this space), that a faithful prior puts the search on the optimum at once, that one
ranking backwards loses its say, and the command line's errors."""

import json
import math

import numpy as np
import pytest

from kerntune.errors import KerntuneError
from kerntune.tuner.priors import expand, in_space, load_priors, matching, read_prior
from kerntune.tuner.space import Space
from kerntune.tuner.strategies import make_strategy
from tests.conftest import REPO, run_cli
from tests.test_strategies import SPACE, objective

SILU = REPO / "bench" / "data" / "silu-catalog-cpu-T1-d4096.json.gz"
SILU_OTHER = REPO / "bench" / "data" / "silu-catalog-cpu-T16-d512.json.gz"
SGEMM = REPO / "bench" / "data" / "sgemm-template-sq64.json.gz"
OPTIMUM = min(SPACE.configs(), key=objective)


def run(space, seed, budget, score, sources=None, **opts):
    s = make_strategy("surrogate", space, seed, opts)
    if sources is not None:
        s.learn(sources)
    seen = []
    for _ in range(budget):
        c = s.ask()
        if c is None:
            break
        seen.append(c)
        s.tell(c, score(c))
    return s, seen


def test_a_faithful_prior_puts_the_optimum_first():
    """Another shape's times: the same ranking at another scale (and a few configurations missing)."""
    other = [(c, 7.0 * objective(c) ** 1.5) for i, c in enumerate(SPACE.configs()) if i % 5]
    for seed in range(3):
        _, seen = run(SPACE, seed, 1, objective, [other])
        assert seen == [OPTIMUM]
    _, plain = run(SPACE, 0, 1, objective)
    assert plain != [OPTIMUM]        # without it the search starts at the declared-first configuration


def test_a_prior_that_ranks_backwards_loses_its_say():
    """A source that ranks every configuration the wrong way round: the weight on its prediction is learned
    from the measurements here (prior mean 1), goes negative, and the search still finds the optimum."""
    backwards = [(c, 1.0 / objective(c)) for c in SPACE.configs()]
    for seed in range(3):
        s, seen = run(SPACE, seed, 20, objective, [backwards])
        assert s._mean[s._f.width] < 0           # the weight on the prior's prediction
        assert OPTIMUM in seen
        assert len({SPACE.key(c) for c in seen}) == len(seen)


def test_a_space_too_large_to_score_whole_uses_the_prior_on_its_sample():
    other = [(c, objective(c)) for c in SPACE.configs()]
    firsts = [objective(run(SPACE, seed, 1, objective, [other], pool=40)[1][0]) for seed in range(5)]
    median = float(np.median([objective(c) for c in SPACE.configs()]))
    assert max(firsts) < median
    s, seen = run(SPACE, 0, 30, objective, [other], pool=40)
    assert OPTIMUM in seen and len({SPACE.key(c) for c in seen}) == 30


def test_learning_comes_before_the_first_measurement():
    s, _ = run(SPACE, 0, 2, objective)
    with pytest.raises(RuntimeError):
        s.learn([[(c, objective(c)) for c in SPACE.configs()]])


def test_a_source_of_fewer_than_three_is_not_used():
    s = make_strategy("surrogate", SPACE, 0, {})
    assert s.learn([[(OPTIMUM, 1.0), (dict(OPTIMUM, A=1), 2.0)]]) == 0
    assert s._src is None


def test_only_configurations_of_this_space_are_kept():
    space = Space({"N": (1, 2), "F": (False, True)})
    got = in_space([({"N": 1, "F": True}, 1.0), ({"N": 3, "F": True}, 1.0),     # 3 is not declared
                    ({"N": True, "F": True}, 1.0),                              # True is not the number 1
                    ({"N": 2, "F": 1}, 1.0),                                     # 1 is not the boolean True
                    ({"N": 2}, 1.0), ({"N": 2, "F": False, "X": 0}, 1.0)], space)
    assert got == [({"N": 1, "F": True}, 1.0)]


def test_a_cache_and_the_run_imported_from_it_read_the_same(tmp_path):
    cache = read_prior(SILU)
    assert len(cache) == 1536 and all(math.isfinite(s) and s > 0 for _, s in cache)
    r = run_cli("kt-cache", "import", str(SILU), "--run-dir", str(tmp_path / "run"))
    assert r.returncode == 0, r.stderr
    from_run = read_prior(tmp_path / "run")
    key = lambda c: json.dumps(c, sort_keys=True)     # noqa: E731
    assert {key(c): s for c, s in from_run} == pytest.approx({key(c): s for c, s in cache})


def test_a_prior_of_another_template_is_refused():
    space = Space({k: tuple(v) for k, v in json.loads(__import__("gzip").open(SILU).read())["tune_params"].items()})
    with pytest.raises(KerntuneError, match="none of its"):
        load_priors([SGEMM], space)
    with pytest.raises(KerntuneError, match="no such file"):
        load_priors([REPO / "no-such-run"], space)


@pytest.fixture(scope="module")
def silu_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("prior") / "silu"
    r = run_cli("kt-cache", "import", str(SILU), "--run-dir", str(d))
    assert r.returncode == 0, r.stderr
    return d


def test_tune_with_a_prior_records_it_and_resumes_with_it(silu_run, tmp_path):
    from kerntune.tuner.store import RunStore

    out = tmp_path / "t"
    r = run_cli("tune", "--device", f"replay:{silu_run}", "--budget", "4", "--prior", str(SILU_OTHER),
                "--run-dir", str(out))
    assert r.returncode == 0, r.stderr
    assert "starting from 1536 earlier measurements" in r.stderr
    store = RunStore.in_dir(out)
    assert store.get("prior") == {"paths": [str(SILU_OTHER.resolve())], "used": 1536}
    assert store.get("settings")["priors"] == [str(SILU_OTHER.resolve())]
    first = [e.key for e in store.evaluations()]
    store.close()
    r = run_cli("tune", "--resume", str(out), "--device", f"replay:{silu_run}", "--budget", "8")
    assert r.returncode == 0, r.stderr
    store = RunStore.in_dir(out)
    keys = [e.key for e in store.evaluations()]
    assert keys[:4] == first and len(keys) == len(set(keys)) == 8
    assert store.get("prior")["used"] == 1536
    # the second look: how the earlier run ranks the 8 measured here (Spearman's rho, recomputed here)
    assert "configurations measured in both, rank correlation" in r.stdout + r.stderr
    here = {e.key: e.score for e in store.evaluations() if e.score is not None}
    store.close()
    shown = json.loads(run_cli("show", str(out), "--json").stdout)
    assert shown["prior_used"] == 1536
    (check,) = shown["priors"]
    other = {json.dumps(sorted(c.items())): v for c, v in read_prior(SILU_OTHER)}
    mine = {json.dumps(sorted(e.config.items())): e.score for e in RunStore.in_dir(out).evaluations() if e.score}
    common = sorted(set(other) & set(mine))
    rank = lambda xs: np.argsort(np.argsort(xs))      # noqa: E731
    rho = float(np.corrcoef(rank([other[k] for k in common]), rank([mine[k] for k in common]))[0, 1])
    assert check["common"] == len(common) == len(here) == 8 and check["rank_correlation"] == pytest.approx(rho)
    assert run_cli("report", str(out)).returncode == 0
    assert f"rank correlation {rho:.2f} with this run's scores" in (out / "report.md").read_text()


@pytest.mark.parametrize("args, message", [
    (["--prior", "no-such-run"], "no such file or run directory"),
    (["--prior", str(SGEMM)], "is in this template's space"),
    (["--prior", str(SILU_OTHER), "--strategy", "random"], "cannot start from earlier measurements"),
])
def test_a_bad_prior_is_named_before_anything_runs(silu_run, tmp_path, args, message):
    r = run_cli("tune", "--device", f"replay:{silu_run}", "--budget", "3", "--run-dir", str(tmp_path / "t"), *args)
    assert r.returncode != 0 and message in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "t").exists()


def test_an_optimize_run_stands_for_its_rounds_of_the_same_template(silu_run, tmp_path):
    """optimize --prior: an optimize run directory is its rounds; a round is used where its template declares
    the same parameters and values as this one's, a cache file where it holds a configuration of this space."""
    import shutil

    from kerntune.tuner.run import template_from_store
    from kerntune.tuner.store import RunStore

    opt = tmp_path / "opt"
    shutil.copytree(silu_run, opt / "rounds/01")
    r = run_cli("kt-cache", "import", str(SGEMM), "--run-dir", str(opt / "rounds/02"))
    assert r.returncode == 0, r.stderr
    assert expand(opt) == [opt / "rounds/01", opt / "rounds/02"] and expand(SILU) == [SILU]
    store = RunStore.in_dir(silu_run)
    space = Space.of(template_from_store(store)[0])
    store.close()
    assert matching([opt], space) == ([opt / "rounds/01"], [])
    assert matching([opt, SILU_OTHER, SGEMM], space) == ([opt / "rounds/01", SILU_OTHER], [])
    found, problems = matching([tmp_path / "gone"], space)
    assert found == [] and "no such file or run directory" in problems[0]
    (tmp_path / "empty").mkdir()
    with pytest.raises(KerntuneError, match="no run here"):
        expand(tmp_path / "empty")
