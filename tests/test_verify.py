"""Element-wise verification on host arrays (no device involved)."""

import numpy as np
import pytest

from kerntune.dtypes import DTYPES, Tolerance, bf16_from_float, poisoned
from kerntune.engine.verify import compare, tolerance_for, unchanged, unwritten_mask
from kerntune.spec.model import ArgSpec, KernelSpec

TOL = DTYPES["fp32"].tolerance


def arg(dtype="fp32"):
    return ArgSpec(name="out", dtype=dtype, shape=["n"], intent="out")


def test_equal_arrays_pass():
    x = np.linspace(-1, 1, 100, dtype=np.float32)
    c = compare(arg(), TOL, x, x.astype(np.float64), expected_is_storage=False)
    assert c.ok and c.max_abs_err == 0 and c.rel_l2_err == 0


def test_element_bound_and_l2_bound_both_reported():
    ref = np.ones(1000, dtype=np.float32)
    got = ref.copy()
    got[10] = 1.01
    c = compare(arg(), TOL, got, ref, expected_is_storage=True)
    assert not c.ok and c.reason == "tolerance" and c.bad_elements == 1 and c.first_bad_index == [10]
    assert c.got == np.float32(1.01) and c.expected == 1.0
    # every element within the element bound, but the normalized error too large
    loose = Tolerance(rel_l2=1e-6, atol=1.0, rtol=0.0)
    c2 = compare(arg(), loose, ref + np.float32(1e-4), ref, expected_is_storage=True)
    assert not c2.ok and c2.bad_elements == 0 and c2.rel_l2_err > 1e-6


def test_non_finite_values():
    ref = np.array([1.0, np.inf, np.nan, 2.0], dtype=np.float32)
    assert compare(arg(), TOL, ref.copy(), ref, True).ok            # same inf and nan: fine
    got = ref.copy()
    got[0] = np.inf
    c = compare(arg(), TOL, got, ref, True)
    assert not c.ok and c.reason == "nonfinite" and c.first_bad_index == [0]
    got = ref.copy()
    got[1] = 5.0                                                      # finite where the reference is inf
    assert compare(arg(), TOL, got, ref, True).reason == "nonfinite"


def test_unwritten_takes_precedence():
    dt = DTYPES["fp32"]
    got = np.zeros(8, dtype=np.float32)
    got[3:5] = poisoned(dt, (2,), 0)
    mask = unwritten_mask(dt, got, 0)
    c = compare(arg(), TOL, got, np.zeros(8), False, unwritten=mask)
    assert not c.ok and c.reason == "unwritten" and c.bad_elements == 2 and c.first_bad_index == [3]


def test_bf16_within_two_ulps_passes():
    a = arg("bf16")
    vals = np.linspace(0.5, 2.0, 257, dtype=np.float32)
    got = bf16_from_float(vals * np.float32(1 + 2.0**-8))   # about one ulp off
    assert compare(a, tolerance_for(_spec(), a), got, vals.astype(np.float64), False).ok


def test_input_modified():
    a = ArgSpec(name="x", dtype="int32", shape=["n"], intent="in")
    before = np.arange(10, dtype=np.int32)
    after = before.copy()
    after[7] = -1
    c = unchanged(a, before, after)
    assert not c.ok and c.reason == "input modified" and c.first_bad_index == [7]
    assert unchanged(a, before, before.copy()).ok


def test_tolerance_overrides():
    spec = _spec(tolerance={"rtol": 0.5})
    a = ArgSpec(name="out", dtype="fp32", shape=["n"], intent="out", tolerance={"atol": 0.25})
    t = tolerance_for(spec, a)
    assert (t.rtol, t.atol, t.rel_l2) == (0.5, 0.25, DTYPES["fp32"].tolerance.rel_l2)


def _spec(**extra):
    return KernelSpec.model_validate({
        "kernel": "k", "args": [{"name": "out", "dtype": "bf16", "shape": ["n"], "intent": "out"}],
        "launch": {"grid": [1], "block": [1]}, "shapes": [{"n": 4}], **extra})


def test_fast_paths_agree_with_the_full_comparison():
    with np.errstate(all="ignore"):              # compare() silences these around _chunk too
        _fast_paths_agree()


def _fast_paths_agree():
    """The fast paths (bit-equal outputs; all differences finite) answer exactly what the
    full comparison, which handles every case, answers: same verdict, counts, first bad
    element and kind, and the same error figures up to summation order."""
    from kerntune.engine.verify import _chunk, _slow_chunk

    rng = np.random.default_rng(7)
    for dtype in ("fp32", "fp16", "bf16", "fp64", "int32"):
        dt = DTYPES[dtype]
        tol = dt.tolerance
        for case in range(6):
            values = rng.standard_normal(4096) * 10.0 ** rng.uniform(-3, 3)
            if dtype == "int32":
                values = np.round(values)
            stored = (bf16_from_float(values.astype(np.float32)) if dtype == "bf16"
                      else values.astype(dt.storage))
            got = stored.copy()
            if case >= 1:                        # a few elements off by far more than the tolerance
                for i in rng.choice(got.size, size=case, replace=False):
                    got[i] = got[(i + 1) % got.size]
            if case == 5:
                got = stored.copy()              # bit for bit equal
            for expected, is_storage in ((stored, True), (values, False)):
                fast = _chunk(dt, got, expected, is_storage, tol)
                slow = _slow_chunk(dt, got, expected, is_storage, tol)
                assert fast[4:] == slow[4:], (dtype, case, is_storage)
                assert np.allclose(fast[:4], slow[:4], rtol=1e-9, atol=0), (dtype, case, is_storage)
        if dtype in ("fp32", "fp16", "fp64"):
            nonfinite = np.array([1.0, np.inf, np.nan, 2.0]).astype(dt.storage)
            got = nonfinite.copy()
            got[0] = np.nan
            assert _chunk(dt, got, nonfinite, True, tol)[4:] == _slow_chunk(dt, got, nonfinite, True, tol)[4:]


def test_64_bit_integers_compare_exactly_beyond_2_to_the_53():
    # 2**53 and 2**53 + 1 are the same float64: a comparison through float64 would pass them
    for dtype, big in (("int64", 2**53), ("int64", -(2**62) - 3), ("uint64", 2**64 - 2)):
        np_dt = np.int64 if dtype == "int64" else np.uint64
        ref = np.array([7, big, big, 0], dtype=np_dt)
        got = ref.copy()
        got[2] = np_dt(big + 1)
        a = arg(dtype)
        c = compare(a, tolerance_for(_spec(), a), got, ref, expected_is_storage=True)
        assert not c.ok and c.reason == "tolerance" and c.bad_elements == 1 and c.first_bad_index == [2]
        assert c.got == big + 1 and c.expected == big and c.max_abs_err == 1.0
        # the same against a NumPy reference of integers, and equal arrays still pass
        assert not compare(a, tolerance_for(_spec(), a), got, ref, expected_is_storage=False).ok
        assert compare(a, tolerance_for(_spec(), a), ref.copy(), ref, expected_is_storage=True).ok


def test_64_bit_integer_tolerance_counts_the_exact_difference():
    a = arg("int64")
    ref = np.array([2**60, 5], dtype=np.int64)
    got = ref + np.array([3, 0], dtype=np.int64)
    assert compare(a, Tolerance(rel_l2=1.0, atol=3.0, rtol=0.0), got, ref, True).ok
    c = compare(a, Tolerance(rel_l2=1.0, atol=2.0, rtol=0.0), got, ref, True)
    assert not c.ok and c.bad_elements == 1 and c.max_abs_err == 3.0


def test_an_integer_outputs_atol_is_a_count_that_never_scales():
    """atol_scales widens or narrows a float output's absolute tolerance with its magnitude; an integer
    output's atol (codes, counts, indices) stays as written: `atol: 1` on int8 codes passes an error of
    exactly 1 on inputs whose codes are 0.1% smaller in RMS than on the spec's own; nor is it counted in
    units of the output's largest value (127 here), as a float output's is."""
    from kerntune.engine.judge import Expected, atol_scales, judge_runs

    spec = KernelSpec.model_validate({
        "kernel": "k", "launch": {"grid": [1], "block": [1]}, "shapes": [{"n": 4}],
        "args": [{"name": "q", "dtype": "int8", "shape": ["n"], "intent": "out",
                  "tolerance": {"atol": 1, "rtol": 0, "rel_l2": 1.0}},
                 {"name": "y", "dtype": "fp32", "shape": ["n"], "intent": "out"}]})
    scales = atol_scales(spec, {"q": 0.999, "y": 0.5}, {"q": 1.0, "y": 1.0})
    assert scales == {"y": 0.5}
    ref = {"q": np.array([11, -3, 0, 127], dtype=np.int8), "y": np.full(4, 0.5, dtype=np.float32)}
    got = {"q": np.array([12, -3, 0, 127], dtype=np.int8), "y": np.full(4, 0.5, dtype=np.float32)}
    checks = judge_runs(spec, {}, [(got, {})], Expected(ref), scales)
    assert all(c.ok for c in checks), checks
    # and two off is still wrong
    got["q"][1] = -5
    assert not judge_runs(spec, {}, [(got, {})], Expected(ref), scales)[0].ok


def test_a_wrong_result_says_by_how_much():
    """The one-line failure (bench's WRONG line, a wrong candidate's message) carries the numbers:
    how many elements, the largest errors, the first bad element, the inputs that showed it."""
    from kerntune.results import ArgCheck, ShapeCheck, Verification

    bad = ArgCheck(name="q", ok=False, max_abs_err=2.0, rel_l2_err=3.1e-4, bad_elements=2, first_bad_index=[12, 40],
                   got=13, expected=11, reason="tolerance")
    v = Verification(ok=False, reference="numpy", seed=1, shapes=[
        ShapeCheck(shape={"n": 4}, label="n4", seed=1, ok=True),
        ShapeCheck(shape={"n": 8}, label="n8", seed=1, ok=False, distribution="shifted", args=[bad])])
    assert v.first_failure() == ("n8 (inputs: shifted): q: tolerance: 2 element(s) off by more than atol + rtol * "
                                 "|expected|, max abs err 2, rel L2 err 0.00031; first at [12, 40]: got 13, "
                                 "expected 11")
    # NaN where the reference is finite, beside elements out of bounds: each counted as what it is, and the
    # error measures (which cannot take a NaN) said to be over the elements finite on both sides
    mixed = compare(ArgSpec(name="y", dtype="fp32", shape=["n"], intent="out"), Tolerance(1e-5, 1e-5, 1e-4),
                    np.array([1.0, np.nan, 3.5, 4.0, np.inf], np.float32), np.array([1.0, 2.0, 3.0, 4.0, 5.0]), False)
    assert (mixed.reason, mixed.bad_elements, mixed.nonfinite_elements) == ("nonfinite", 3, 2)
    assert mixed.describe() == ("y: nonfinite: 2 element(s) NaN or Inf unlike the reference, 1 element(s) off by "
                                "more than atol + rtol * |expected| (atol 5e-05), max abs err 0.5, rel L2 err 0.0981 where both "
                                "are finite; first at [1]: got nan, expected 2")
    unwritten = ArgCheck(name="y", ok=False, first_bad_index=[3], got=float("nan"), expected=1.0, reason="unwritten")
    assert unwritten.describe() == "y: unwritten; first at [3]"


# --- a disagreement with the reference kernel, settled by the NumPy reference ------------------

def _fp32_spec():
    return KernelSpec.model_validate({
        "kernel": "k", "args": [{"name": "out", "dtype": "fp32", "shape": ["n"], "intent": "out"}],
        "launch": {"grid": [1], "block": [1]}, "shapes": [{"n": 4}]})


def _judge(original, candidate, truth):
    """``candidate`` judged against the reference kernel's ``original`` outputs, with ``truth``
    (float64) as the NumPy reference (None: the spec has none)."""
    from kerntune.engine.judge import Expected, judge_runs

    calls = []

    def made():
        calls.append(1)
        return None if truth is None else {"out": truth}
    expected = Expected({"out": original}, True, made)
    (check,) = judge_runs(_fp32_spec(), {}, [({"out": candidate}, {})], expected)
    return check, len(calls)


def _sums(seed=3, n=4000):
    """A true float64 result and two fp32 results near it: ``original`` off the truth by 0.99 of
    the fp32 bound at element 7, ``candidate`` by 0.5 of it on the other side, so the two differ
    by more than the bound there while each is within it of the truth."""
    rng = np.random.default_rng(seed)
    truth = rng.uniform(0.1, 1.0, n)
    tol = tolerance_for(_fp32_spec(), _fp32_spec().args[0])
    bound = tol.atol + tol.rtol * truth[7]
    original = (truth * (1 + 1e-7 * rng.standard_normal(n))).astype(np.float32)
    candidate = truth.astype(np.float32)
    original[7] = np.float32(truth[7] + 0.99 * bound)
    candidate[7] = np.float32(truth[7] - 0.5 * bound)
    direct = compare(_fp32_spec().args[0], tol, candidate, original, True)
    assert not direct.ok and direct.reason == "tolerance" and direct.bad_elements == 1
    return truth, original, candidate


def test_a_candidate_closer_to_the_truth_than_the_original_is_settled():
    truth, original, candidate = _sums()
    check, asked = _judge(original, candidate, truth)
    assert check.ok and asked == 1
    assert "closer to the NumPy reference" in check.settled and "1 element(s)" in check.settled


def test_a_candidate_less_accurate_than_the_original_is_not_settled():
    truth, original, candidate = _sums()
    # roles swapped: the candidate is the one farther from the truth (though within its bound)
    check, asked = _judge(candidate, original, truth)
    assert not check.ok and not check.settled and asked == 1


def test_without_a_numpy_reference_or_when_the_original_misses_it_nothing_is_settled():
    truth, original, candidate = _sums()
    assert not _judge(original, candidate, None)[0].ok
    original[7] = np.float32(truth[7] * 1.01)         # the original itself is off the truth there
    check, asked = _judge(original, candidate, truth)
    assert not check.ok and asked == 1


def test_nan_and_exact_agreement_are_never_sent_to_the_numpy_reference():
    truth, original, _ = _sums()
    nan = original.copy()
    nan[3] = np.nan
    check, asked = _judge(original, nan, truth)
    assert not check.ok and check.reason == "nonfinite" and asked == 0
    check, asked = _judge(original, original.copy(), truth)
    assert check.ok and not check.settled and asked == 0


# --- no markedly less accurate than the original, where a NumPy reference measures both ------------

def _accuracy(candidate_scale: float, noise: float = 1e-7, ratio: float | None = 2.0, seed: int = 5):
    """A candidate whose outputs are the truth times ``candidate_scale`` (plus fp32 rounding), judged
    against an original ``noise`` off the truth, with the accuracy check on."""
    from kerntune.engine.judge import Expected, judge_runs

    rng = np.random.default_rng(seed)
    truth = rng.uniform(-1.0, 1.0, 4000)
    original = (truth * (1 + noise * rng.standard_normal(truth.size))).astype(np.float32)
    candidate = (truth * candidate_scale).astype(np.float32)
    spec = _fp32_spec().model_copy(update={"accuracy_ratio": ratio})
    (check,) = judge_runs(spec, {}, [({"out": candidate}, {})], Expected({"out": original}, True,
                                                                       lambda: {"out": truth}), accuracy=True)
    return check


def test_a_candidate_within_the_tolerance_but_markedly_less_accurate_fails():
    # 4e-6 relative, everywhere: within fp32's 1e-5 of the original's outputs, 40x its 1e-7
    check = _accuracy(1 - 4e-6)
    assert not check.ok and check.reason == "less accurate"
    assert 3.5e-6 < check.rel_l2_err < 4.5e-6 and 0.5e-7 < check.original_rel_l2_err < 1.5e-7
    text = check.describe()
    assert text.startswith("out: less accurate: rel L2 err 4e-06 against the NumPy reference, markedly more than "
                           "the original kernel's 1e-07 (at most 2.5e-06 passes)"), text


def test_an_error_under_the_floor_or_a_lenient_spec_passes_the_accuracy_check():
    # 1e-6: 10x the original's, but under a quarter of fp32's 1e-5 (rounding in another order looks so)
    assert _accuracy(1 - 1e-6).ok
    # over the floor but within 2x the original's (3e-6 each): not less accurate, but a scale of one sign
    # everywhere, so biased (engine.bias)
    check = _accuracy(1 - 4e-6, noise=3e-6)
    assert not check.ok and check.reason == "biased", check
    # a spec with accuracy_ratio: null takes any candidate within its tolerance
    assert _accuracy(1 - 4e-6, ratio=None).ok


# --- no systematic error the original does not make (engine.bias) ------------------------------------

def _biased(scale: float = 1.0, offset: float = 0.0, noise: float = 3e-6, seed: int = 5,
            ratio: float | None = 2.0, candidate_noise: float | None = None):
    """A candidate ``truth * scale + offset`` with random relative errors of ``candidate_noise``
    (default ``noise``) against an original with random errors of ``noise``: both as far from the truth
    (rel L2), so only the systematic part can tell them apart."""
    from kerntune.engine.judge import Expected, judge_runs

    rng = np.random.default_rng(seed)
    truth = rng.uniform(-1.0, 1.0, 4000)
    original = (truth * (1 + noise * rng.standard_normal(truth.size))).astype(np.float32)
    spread = noise if candidate_noise is None else candidate_noise
    candidate = ((truth * scale + offset) * (1 + spread * rng.standard_normal(truth.size))).astype(np.float32)
    spec = _fp32_spec().model_copy(update={"accuracy_ratio": ratio})
    (check,) = judge_runs(spec, {}, [({"out": candidate}, {})], Expected({"out": original}, True,
                                                                       lambda: {"out": truth}), accuracy=True)
    return check


def test_a_candidate_scaled_within_the_accuracy_ratio_is_refused_as_biased():
    # every output 3e-6 smaller (with rounding noise of 1e-6): rel L2 3.2e-6 against the original's
    # 3e-6 (within 2x, within fp32's 1e-5), but the same sign everywhere
    check = _biased(scale=1 - 3e-6, candidate_noise=1e-6)
    assert not check.ok and check.reason == "biased" and check.bias_kind == "scale", check
    assert check.rel_l2_err < 2 * check.original_rel_l2_err
    assert -3.2e-6 < check.bias < -2.8e-6 and abs(check.original_bias) < 3e-7 and check.bias_z > 8
    text = check.describe()
    assert text.startswith("out: biased: outputs 0.0003% smaller than the NumPy reference on average (original: "), \
        text
    assert "(original: 2.4e-06% larger): a systematic error beyond the original's by more than 0.0001% and by " \
           in text and "though within the tolerance of the original's outputs" in text, text


def test_a_candidate_shifted_within_the_accuracy_ratio_is_refused_as_biased():
    # 2e-6 added to every output (RMS 0.58): 3.4e-6 of the RMS, within 2x the original's error
    check = _biased(offset=2e-6, candidate_noise=1e-6)
    assert not check.ok and check.reason == "biased" and check.bias_kind == "offset", check
    assert check.rel_l2_err < 2 * check.original_rel_l2_err
    assert check.describe().startswith("out: biased: outputs shifted above the NumPy reference by 0.00035% of its "
                                       "RMS on average"), check.describe()


def test_random_errors_a_small_bias_or_a_lenient_spec_pass_the_bias_check():
    # errors of random sign, as large as the original's, on many draws: never biased
    for seed in range(20):
        assert _biased(seed=seed).ok, seed
    # a scale of 5e-7: highly significant, but under a tenth of fp32's 1e-5
    assert _biased(scale=1 - 5e-7, candidate_noise=1e-7).ok
    # as biased as the original is: not refused (the original's own bias is its problem)
    from kerntune.engine import bias
    truth = np.random.default_rng(1).uniform(-1, 1, 4000)
    dt = _fp32_spec().args[0].dt
    run = bias.measure(dt, (truth * (1 - 3e-6)).astype(np.float32), truth)
    assert bias.worse(run, run, 1e-6) is None
    # a tolerance of 1e-6 (a softmax spec's): the floor is 8 fp32 ulps (9.5e-7), not a tenth of it, since a
    # row's normalizer summed in another order errs on the whole row by a few ulps; 8.2e-8 was measured
    assert bias.floor(dt, 1e-6) == pytest.approx(8 * 2.0**-23) and bias.floor(dt, 1e-5) == pytest.approx(1e-6)
    assert bias.worse(bias.measure(dt, (truth * (1 - 5e-7)).astype(np.float32), truth),
                      bias.measure(dt, truth.astype(np.float32), truth), bias.floor(dt, 1e-6)) is None
    assert bias.worse(bias.measure(dt, (truth * (1 - 5e-7)).astype(np.float32), truth),
                      bias.measure(dt, truth.astype(np.float32), truth), 1e-7) is not None
    # too few elements to measure a standard error by: not judged
    assert bias.measure(dt, (truth[:63] * (1 - 3e-6)).astype(np.float32), truth[:63]) is None
    assert bias.measure(dt, (truth[:64] * (1 - 3e-6)).astype(np.float32), truth[:64]) is not None
    # a spec with accuracy_ratio: null takes any candidate within its tolerance
    assert _biased(scale=1 - 3e-6, candidate_noise=1e-6, ratio=None).ok


def test_the_failure_reported_is_the_plainest_of_the_runs():
    # a kernel that writes only where the output looks unwritten (NaN): its NaN-poison run misses by a
    # little, its random-poison run keeps the poison; the second is the one to show
    from kerntune.engine.judge import _worst
    from kerntune.results import ArgCheck

    small = ArgCheck(name="out", ok=False, max_abs_err=4e-4, bad_elements=37, reason="tolerance")
    poison = ArgCheck(name="out", ok=False, max_abs_err=3.1e7, bad_elements=64, reason="tolerance")
    assert _worst([small, poison]) is poison and _worst([poison, small]) is poison
    ok = ArgCheck(name="out", ok=True)
    assert _worst([ok, small]) is small and _worst([ok, ok]) is ok


def test_a_64_bit_integer_reference_given_as_floats_must_be_exact():
    # int64 products through float64 are off by up to hundreds above 2**53, and a candidate rounding the
    # same way passed (the check compared two roundings); such a reference is now a spec error
    import pytest as _pytest

    from kerntune.engine.inputs import _exact_integers
    from kerntune.errors import KerntuneError
    from kerntune.spec.model import Shape

    a = ArgSpec(name="out", dtype="int64", shape=["n"], intent="out")
    shape = Shape.of({"n": 3}, label="s")
    exact = _exact_integers(a, np.array([1.0, -2.0, 2.0**53]), shape)
    assert exact.dtype == np.int64 and exact.tolist() == [1, -2, 2**53]
    with _pytest.raises(KerntuneError) as e:
        _exact_integers(a, np.array([1.0, 2.0**60]), shape)
    assert "above 2**53" in e.value.message and "as integers" in e.value.hint
    half = np.array([0.5, 1.0])                       # not integers at all: left for the comparison to judge
    assert _exact_integers(a, half, shape) is half
    i32 = ArgSpec(name="out", dtype="int32", shape=["n"], intent="out")
    assert _exact_integers(i32, np.array([2.0**40]), shape).dtype == np.float64   # exact in a float64 anyway


def test_a_changed_canary_fails_the_array_it_follows_whatever_its_values():
    """judge.Downloaded: the bytes after each array are compared with the canary; a change fails that
    array (an output whose values are right, an input left unchanged), counted in elements."""
    from kerntune.engine.judge import CANARY_BYTES, Downloaded, Expected, canary_pattern, judge_runs

    spec = KernelSpec.model_validate({
        "kernel": "k", "args": [{"name": "out", "dtype": "fp32", "shape": ["n"], "intent": "out"},
                                {"name": "x", "dtype": "fp32", "shape": ["n"], "intent": "in"}],
        "launch": {"grid": [1], "block": [1]}, "shapes": [{"n": 4}]})
    x = np.arange(4, dtype=np.float32)
    pattern = canary_pattern()
    assert pattern.nbytes == CANARY_BYTES and np.array_equal(pattern, canary_pattern())
    clean = Downloaded(out=x * 2, x=x.copy())
    assert not clean.note_canary("out", 4, pattern.copy(), pattern) and not clean.overruns
    assert [c.ok for c in judge_runs(spec, {"x": x}, [(clean, {})], Expected({"out": x * 2}, False))] == [True, True]

    hit = Downloaded(out=x * 2, x=x.copy())
    seen = pattern.copy()
    seen[9:13] ^= 0xFF             # element 2 after the output (bytes 8..11) and element 3 (byte 12)
    assert hit.note_canary("out", 4, seen, pattern) and hit.overruns == {"out": (2, 2, CANARY_BYTES)}
    seen = pattern.copy()
    seen[0] ^= 1
    assert hit.note_canary("x", 4, seen, pattern)
    out, xin = judge_runs(spec, {"x": x}, [(clean, {}), (hit, {})], Expected({"out": x * 2}, False))
    assert not out.ok and not xin.ok and out.reason == xin.reason == "written past its end"
    assert out.describe() == ("out: written past its end: 2 element(s) changed in the 64 KiB after it, the first 2 "
                              "element(s) after its last")
    assert xin.describe().endswith("1 element(s) changed in the 64 KiB after it, the first right after its last element")


def test_a_changed_front_canary_fails_the_array_it_precedes():
    """The canary before each array: its bytes are counted back from the array's start, so the nearest
    changed element is named (0: right before the first), and the array fails as written before its
    start, whatever its values."""
    from kerntune.engine.judge import CANARY_BYTES, Downloaded, Expected, canary_pattern, front_canary_bytes, judge_runs

    assert front_canary_bytes(4) == CANARY_BYTES and front_canary_bytes(CANARY_BYTES + 1) == 2 * CANARY_BYTES
    spec = KernelSpec.model_validate({
        "kernel": "k", "args": [{"name": "out", "dtype": "fp32", "shape": ["n"], "intent": "out"}],
        "launch": {"grid": [1], "block": [1]}, "shapes": [{"n": 4}]})
    x = np.arange(4, dtype=np.float32)
    pattern = canary_pattern(size=CANARY_BYTES)
    hit = Downloaded(out=x.copy())
    seen = pattern.copy()
    seen[-1] ^= 1                  # the last byte of the element right before out[0]
    seen[-13] ^= 1                 # a byte of the element 3 before it (bytes -16..-13)
    assert hit.note_canary("out", 4, seen, pattern, before=True) and hit.underruns == {"out": (0, 2, CANARY_BYTES)}
    assert not hit.overruns and hit.outside
    (out,) = judge_runs(spec, {}, [(hit, {})], Expected({"out": x}, False))
    assert not out.ok and out.reason == "written before its start"
    assert out.describe() == ("out: written before its start: 2 element(s) changed in the 64 KiB before it, the "
                              "nearest right before its first element")


def test_a_check_whose_error_overflowed_is_written_and_read_back():
    """An infinite error is null in JSON; the record reader took null for a bad record, so a candidate
    overflowing on `large` inputs stopped a whole optimize run, and --resume too."""
    import math

    from kerntune.results import ArgCheck, EvalResult, ShapeCheck, Status, Verification

    check = compare(ArgSpec(name="out", dtype="fp32", shape=["n"], intent="out"), DTYPES["fp32"].tolerance,
                    np.array([1e38, 1.0], dtype=np.float32), np.array([0.0, 0.0]), False)
    assert not check.ok and math.isinf(check.rel_l2_err)
    v = Verification(ok=False, reference="numpy", seed=1, shapes=[
        ShapeCheck(shape={"n": 2}, label="x", seed=1, ok=False, args=[check])])
    r = EvalResult(status=Status.WRONG_RESULT, kernel="k", device=_device(), verification=v)
    back = EvalResult.model_validate_json(r.model_dump_json())
    assert math.isinf(back.verification.shapes[0].args[0].rel_l2_err)
    assert ArgCheck.model_validate({"name": "out", "ok": False, "rel_l2_err": None}).rel_l2_err == math.inf


def _device():
    from kerntune.results import DeviceInfo
    return DeviceInfo(id="opencl:0:0", backend="opencl", lang="opencl", name="cpu")


def test_the_canary_is_as_long_as_its_array_within_bounds():
    """A write 68 KiB past a 1 MiB output, made only when n > 8192, passed the 64 KiB canary
    (adversarial tour); the canary now watches as many bytes as the array has, from 64 KiB up to
    64 MiB."""
    from kerntune.engine.judge import CANARY_BYTES, CANARY_MAX_BYTES, canary_bytes, canary_pattern

    assert canary_bytes(4) == CANARY_BYTES and canary_bytes(2**20) == 2**20
    assert canary_bytes(2**30) == CANARY_MAX_BYTES == 64 * 2**20
    long = canary_pattern(3 * CANARY_BYTES + 5)
    assert long.nbytes == 3 * CANARY_BYTES + 5 and np.array_equal(long[:CANARY_BYTES], canary_pattern())
    assert np.array_equal(long[CANARY_BYTES:2 * CANARY_BYTES], canary_pattern())


def test_in_place_pairs_are_float_outputs_over_inputs_of_their_dtype_and_element_count():
    """Which output is verified in place over which input (kerntune.engine.inplace): a float output over the
    first float input of its dtype and element count (a [rows, cols] input counts as rows * cols), each input
    once; never integer arrays (indices an original reads after another work-item overwrote them send its
    writes anywhere), and nothing under `noalias: true`."""
    from kerntune.engine.inplace import in_place_pairs
    from kerntune.spec.model import Shape

    spec = KernelSpec.model_validate({
        "kernel": "k", "launch": {"grid": [1], "block": [1]}, "shapes": [{"n": 8}],
        "args": [{"name": "y", "dtype": "fp32", "shape": ["n"], "intent": "out"},
                 {"name": "z", "dtype": "fp32", "shape": ["n"], "intent": "out"},
                 {"name": "w", "dtype": "fp32", "shape": ["n"], "intent": "out"},
                 {"name": "counts", "dtype": "int32", "shape": ["n"], "intent": "out"},
                 {"name": "h", "dtype": "fp16", "shape": ["n"], "intent": "in"},
                 {"name": "idx", "dtype": "int32", "shape": ["n"], "intent": "in"},
                 {"name": "m", "dtype": "fp32", "shape": [2, "n / 2"], "intent": "in"},
                 {"name": "v", "dtype": "fp32", "shape": ["n"], "intent": "in"},
                 {"name": "n", "dtype": "int32", "value": "n"}]})
    shape = Shape.of({"n": 8})
    assert in_place_pairs(spec, shape) == {"y": "m", "z": "v"}
    assert in_place_pairs(spec.model_copy(update={"noalias": True}), shape) == {}


def test_the_in_place_summary_names_each_pair_with_its_own_shapes():
    """bench's verify line says, per way of aliasing (it can differ from shape to shape), on how many shapes
    an output was verified in place and where the original promised nothing in place."""
    from kerntune.engine.inplace import summary
    from kerntune.results import ShapeCheck

    def check(stage, message=""):
        return ShapeCheck(shape={"n": 1}, label="s", seed=0, ok=True, stage=stage, message=message)

    over_x, over_v = "output y in place over input x", "output y in place over input vals"
    checks = [check("verify"), check(over_x), check(over_x), check(over_v),
              check(over_x, "not checked: the original kernel gives other results in place than apart")]
    assert summary(checks) == ("also with output y in place over input x on 2 shapes; not with output y in place "
                               "over input x on 1 shape: the original kernel gives other results in place than "
                               "apart; also with output y in place over input vals on 1 shape")
    assert summary([check("verify")]) is None
