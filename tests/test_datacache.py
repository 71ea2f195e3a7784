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


def test_a_run_bit_identical_to_one_judged_is_not_compared_again(cpu_ref, tmp_path, monkeypatch):
    """Each verification's second run, and every timed run after the first inspected, leave the
    same bytes as a run already judged on the same inputs: their verdict is that run's, with no
    second comparison (each costs most of a second on a serving shape). A run that differs is
    still compared."""
    import kerntune.engine.judge as judge
    import kerntune.engine.verify as verify
    from kerntune.backends import open_backend
    from kerntune.engine.evaluate import Evaluator
    from kerntune.results import Status
    from tests.conftest import VECTOR_ADD

    calls = []
    real = verify.compare
    monkeypatch.setattr(judge, "compare", lambda *a, **k: calls.append(a[0].name) or real(*a, **k))
    ev = Evaluator(open_backend(cpu_ref))
    req = _request(tmp_path, VECTOR_ADD.read_text())
    r = ev.evaluate(req)
    assert r.status is Status.OK
    verified = len(r.verification.shapes)
    # one comparison per verification, and per timed shape one for its timed runs, one on the timed
    # inputs with a few elements changed and one on fresh inputs
    assert len(calls) == verified + 3 * len(req.time_shapes), (len(calls), verified, len(req.time_shapes))

    # bit-identical means every byte: -0.0 is not 0.0, and NaNs with the same bits are the same
    a = np.array([0.0, np.nan, 1.0], dtype=np.float32)
    assert verify.same_bits(a, a.copy())
    assert not verify.same_bits(a, np.array([-0.0, np.nan, 1.0], dtype=np.float32))
    assert not verify.same_bits(a, a.astype(np.float64)) and not verify.same_bits(a, a[:2])
    # compared as 8-byte words plus a tail: a difference in either is found; strided views compare too
    odd = np.arange(21, dtype=np.uint16)
    for i in (0, 17, 20):
        other = odd.copy()
        other[i] ^= 1
        assert not verify.same_bits(odd, other)
    assert verify.same_bits(odd[::2], odd.copy()[::2]) and not verify.same_bits(odd[::2], odd[1::2])
    ev.backend.close()
