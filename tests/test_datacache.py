"""Inputs and reference outputs kept between evaluations in one worker (kerntune/engine/datacache.py),
and large outputs compared a chunk per thread (kerntune/engine/verify.py)."""

import numpy as np
import pytest

from kerntune.engine.datacache import DataCache


def test_the_cache_keeps_the_most_recently_used_within_its_budget():
    c = DataCache(budget=100)
    made = []

    def get(key, n):
        return c.get(key, lambda: made.append(key) or key, lambda _: n)
    get("a", 40), get("b", 40)
    get("a", 40)                    # a hit: "a" becomes the most recent
    get("c", 40)                    # over budget: "b", the least recently used, goes
    assert made == ["a", "b", "c"] and c.used == 80
    get("a", 40), get("b", 40)
    assert made == ["a", "b", "c", "b"] and (c.hits, c.misses) == (2, 4)
    get("huge", 1000)               # larger than the budget: made, not kept
    get("huge", 1000)
    assert made[-2:] == ["huge", "huge"] and c.used <= 100


def _request(tmp_path, source, seed=3):
    from kerntune.engine.evaluate import EvalRequest, KernelInstance, TimingOptions
    from kerntune.spec.load import load_file
    from kerntune.spec.shapes import spec_shapes, verification_shapes
    from tests.conftest import vector_add_folder, vector_add_spec

    kernel = vector_add_folder(tmp_path, vector_add_spec({"s": 1000, "m": 70000}))
    spec = load_file(kernel.with_suffix(".yaml")).spec
    return EvalRequest(candidate=KernelInstance(source, "vector_add", "opencl"), spec=spec, base_dir=str(tmp_path),
                       verify_shapes=tuple(verification_shapes(spec)), time_shapes=tuple(spec_shapes(spec)),
                       seed=seed, timing=TimingOptions(warmup=1, repeats=3, measure_copy=False))


def test_a_second_evaluation_makes_no_new_inputs_and_still_judges_what_it_runs(cpu_ref, tmp_path):
    """In one worker, every candidate of a search is verified with the same seeds: the second
    evaluation takes the inputs and the reference's outputs the first made. A wrong kernel after a
    right one still fails, and the kept arrays cannot be written."""
    from kerntune.backends import open_backend
    from kerntune.engine.evaluate import Evaluator
    from kerntune.results import Status
    from tests.conftest import VECTOR_ADD

    ev = Evaluator(open_backend(cpu_ref))
    right = _request(tmp_path, VECTOR_ADD.read_text())
    assert ev.evaluate(right).status is Status.OK
    made = ev.data.misses
    assert made > 0 and ev.data.used > 0
    r = ev.evaluate(right)
    assert r.status is Status.OK and ev.data.misses == made and ev.data.hits > 0

    wrong = _request(tmp_path, VECTOR_ADD.read_text().replace("a[i] + b[i]", "a[i] - b[i]"))
    r = ev.evaluate(wrong)
    assert r.status is Status.WRONG_RESULT, r.status
    assert ev.data.misses == made

    host = next(v for k, (v, _) in ev.data._items.items() if k[0] == "inputs")
    with pytest.raises(ValueError):
        host.arrays["a"][0] = 1.0
    ev.evaluate(_request(tmp_path, VECTOR_ADD.read_text(), seed=4))     # other seeds, other inputs
    assert ev.data.misses > made
    ev.backend.close()


def test_chunks_compared_on_threads_give_the_same_verdict_as_one_thread(monkeypatch):
    import kerntune.engine.verify as verify
    from kerntune.dtypes import DTYPES
    from kerntune.spec.model import ArgSpec

    monkeypatch.setattr(verify, "CHUNK", 1000)
    arg = ArgSpec(name="out", dtype="fp32", shape=["n"], intent="out")
    tol = DTYPES["fp32"].tolerance
    rng = np.random.default_rng(1)
    expected = rng.standard_normal(9500).astype(np.float32)
    got = expected.copy()
    got[[2500, 7001]] += 1.0                # wrong in the third and the eighth chunk
    checks = []
    for threads in (1, 4):
        monkeypatch.setattr(verify, "MAX_THREADS", threads)
        verify._pool.cache_clear()
        checks.append(verify.compare(arg, tol, got, expected, True))
    verify._pool.cache_clear()
    one, many = checks
    assert not one.ok and one.first_bad_index == [2500] and one.bad_elements == 2
    assert one == many
