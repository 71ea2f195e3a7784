"""The one speedup decision: intervals that cover the truth, and claims only past the threshold."""

import math

import numpy as np
import pytest

from kerntune import speedup as sp


def _noisy(rng, n, ms, sigma):
    return ms * np.exp(rng.normal(0.0, sigma, n))


def test_sign_rank_is_the_binomial_order_statistic():
    assert sp.sign_rank(5) == 0          # 2 * (1/2)^5 > 0.05: no 95% interval from five pairs
    assert sp.sign_rank(6) == 1          # 2 * (1/2)^6 = 0.031
    assert sp.sign_rank(100) == 40       # the textbook 40th and 61st order statistics
    assert sp.moses_rank(5, 5, 0.90) == 5 and sp.moses_rank(3, 3, 0.90) == 1 and sp.moses_rank(2, 2) == 0


def test_paired_interval_finds_a_real_speedup():
    rng = np.random.default_rng(1)
    base = _noisy(rng, 100, 1.0, 0.05)
    cand = base / 1.25 * np.exp(rng.normal(0, 0.03, 100))
    iv = sp.paired(base, cand)
    assert iv.lo < 1.25 < iv.hi and iv.lo > 1.2 and iv.n == 100 and iv.method == "sign-test"
    assert sp.decide(iv) is sp.Verdict.FASTER
    assert sp.decide(sp.paired(cand, base)) is sp.Verdict.SLOWER


def test_noise_alone_is_never_faster():
    """Identical kernels measured with heavy noise: over many sessions the decision says
    faster (much) less often than the one-sided 2.5% the interval allows."""
    rng = np.random.default_rng(7)
    claims = 0
    for _ in range(400):
        base = _noisy(rng, 60, 1.0, 0.2)
        cand = _noisy(rng, 60, 1.0, 0.2)
        claims += sp.decide(sp.paired(base, cand)) is sp.Verdict.FASTER
    assert claims <= 4


def test_drift_is_cancelled_by_pairing():
    """The device slows down over the session (thermal drift): the paired interval still
    sees the 10% gain, the unpaired one on the same numbers is much wider."""
    rng = np.random.default_rng(3)
    drift = np.linspace(1.0, 2.0, 80)
    base = drift * _noisy(rng, 80, 1.0, 0.01)
    cand = drift * _noisy(rng, 80, 1.0 / 1.10, 0.01)
    p, u = sp.paired(base, cand), sp.unpaired(base, cand)
    assert sp.decide(p) is sp.Verdict.FASTER and p.hi - p.lo < 0.02
    assert u.hi - u.lo > 10 * (p.hi - p.lo)


def test_geomean_interval_covers_every_shape_together():
    rng = np.random.default_rng(5)
    shapes = []
    for true in (1.1, 1.3, 1.2):
        base = _noisy(rng, 100, 2.0, 0.05)
        shapes.append((base, base / true * np.exp(rng.normal(0, 0.02, 100))))
    iv = sp.geomean_interval(shapes)
    expected = math.exp(np.mean(np.log([1.1, 1.3, 1.2])))
    assert iv.lo < expected < iv.hi and iv.n == 3 and iv.method == "bootstrap"
    assert sp.geomean_interval(shapes) == iv               # a fixed seed: the same record gives the same interval


def test_a_geomean_over_shapes_with_too_few_runs_claims_no_interval():
    """`bench --repeats 3` printed a "faster" geomean of 1.63x [1.44, 2.93] beside two shapes whose own
    intervals were [0.00, inf]: the bootstrap resampled 3 runs as if they were all there is."""
    shapes = [([2.0, 2.1, 2.05], [1.6, 1.7, 1.62]), ([3.3, 3.5, 3.4], [1.5, 1.6, 1.55])]
    boot = sp.geomean_interval(shapes)
    assert sp.decide(boot) is sp.Verdict.FASTER and boot.lo > 1.2          # what the bootstrap alone claims
    iv = sp.unbounded_with_few_runs(boot, 3)
    assert (iv.ratio, iv.lo, iv.hi) == (boot.ratio, 0.0, math.inf) and sp.decide(iv) is sp.Verdict.UNSURE
    assert "3 paired run(s)" in iv.method
    assert sp.unbounded_with_few_runs(boot, 6) == boot                      # 6 runs bound a sign-test interval


def test_decision_bands():
    def iv(lo, hi):
        return sp.Interval(ratio=(lo + hi) / 2, lo=lo, hi=hi)

    assert sp.decide(iv(1.03, 1.2)) is sp.Verdict.FASTER
    assert sp.decide(iv(1.01, 1.2)) is sp.Verdict.UNSURE        # might be under the +2% threshold
    assert sp.decide(iv(0.99, 1.01)) is sp.Verdict.SAME
    assert sp.decide(iv(0.5, 0.97)) is sp.Verdict.SLOWER
    assert sp.decide(iv(1.03, 1.2), threshold=1.05) is sp.Verdict.UNSURE
    assert sp.decide(sp.identical()) is sp.Verdict.SAME and sp.identical().text() == "1.00x (the original)"
    assert sp.decide(None) is sp.Verdict.UNSURE


def test_unbounded_intervals_survive_json():
    iv = sp.paired([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])          # too few pairs: no upper bound
    assert iv.lo == 0.0 and iv.hi == math.inf and sp.decide(iv) is sp.Verdict.UNSURE
    text = iv.model_dump_json()
    assert '"hi":null' in text                                  # strict JSON, no Infinity
    assert sp.Interval.model_validate_json(text).hi == math.inf
    assert iv.inverted().lo == 0.0 and iv.inverted().hi == math.inf


def test_bad_samples_are_refused():
    with pytest.raises(ValueError):
        sp.paired([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        sp.paired([1.0, 0.0], [1.0, 1.0])


def test_sessions_in_several_processes():
    from kerntune.speedup import Interval, Verdict, across_sessions, decide, identical

    a = Interval(ratio=1.10, lo=1.06, hi=1.14, n=3, method="bootstrap")
    b = Interval(ratio=1.03, lo=1.01, hi=1.05, n=3, method="bootstrap")
    both = across_sessions([a, b])
    assert both.ratio == pytest.approx((1.10 * 1.03) ** 0.5) and both.method == "bootstrap, 2 sessions"
    assert both.lo <= 1.01 and both.hi >= 1.14           # holds each session's interval
    assert decide(a) is Verdict.FASTER and decide(both) is not Verdict.FASTER
    # three processes that agree keep a real speedup; three that disagree by 8% do not make one
    agree = across_sessions([Interval(ratio=r, lo=r - 0.02, hi=r + 0.02, n=3, method="bootstrap")
                             for r in (1.76, 1.80, 1.78)])
    assert decide(agree) is Verdict.FASTER and 1.70 < agree.lo < 1.74
    spread = across_sessions([Interval(ratio=r, lo=r - 0.02, hi=r + 0.02, n=3, method="bootstrap")
                              for r in (1.10, 1.04, 1.08)])
    assert spread.lo < 1.02 and decide(spread) is not Verdict.FASTER
    assert spread.method == "bootstrap, 3 sessions"
    assert across_sessions([identical(), b]) == identical() and across_sessions([a]) == a


def test_one_observation_per_process_not_per_block():
    # the final test's rule: the confirmation blocks' mean, its half-width t(df) * pooled sd / sqrt(processes)
    from kerntune.speedup import Interval, Spread, Verdict, across_sessions, decide, t975

    iv = lambda r, w=0.03: Interval(ratio=r, lo=r / (1 + w), hi=r * (1 + w), n=100, method="sign-test")  # noqa: E731
    spread = Spread(sd=0.027, df=10)
    # six blocks in two machine states, about 1.00x and 1.07x (the one per-shape claim that counting each
    # block as an observation made, bench/results/proof-cpu-2026-11-29-tonly.md): no claim
    split = [iv(1.12)] + [iv(r) for r in (1.074, 1.008, 1.054, 1.069, 1.082, 0.999)]
    per_block = across_sessions(split, spread, estimate_from=1, processes=6)
    per_process = across_sessions(split, spread, estimate_from=1, processes=2)
    assert per_block.ratio == per_process.ratio == pytest.approx(math.exp(np.mean(np.log([1.074, 1.008, 1.054,
                                                                                         1.069, 1.082, 0.999]))))
    assert decide(per_block) is Verdict.FASTER and decide(per_process) is not Verdict.FASTER
    half = math.log(per_process.hi / per_process.lo) / 2
    assert half == pytest.approx(t975(10) * 0.027 / math.sqrt(2))
    assert per_process.method == "sign-test, 7 sessions, t-interval over 2 processes"
    # no union: a real 1.2x whose blocks agree is claimed although one block's own interval reaches 1.0
    real = [iv(1.25)] + [iv(r) for r in (1.21, 1.19, 1.20, 1.22)] + [Interval(ratio=1.2, lo=1.0, hi=1.4, n=9,
                                                                               method="sign-test")]
    kept = across_sessions(real, Spread(sd=0.02, df=12), estimate_from=1, processes=2)
    assert decide(kept) is Verdict.FASTER and kept.lo > 1.1
    assert across_sessions(real, Spread(sd=0.02, df=12), estimate_from=1).lo == 1.0      # the union would hold it
    # more processes than blocks: each block is its own process
    two = across_sessions([iv(1.3), iv(1.1)], spread, estimate_from=1, processes=2)
    assert math.log(two.hi / two.lo) / 2 == pytest.approx(t975(10) * 0.027)
    # without a pooled spread the process count is not used: every session's interval is held
    assert across_sessions(split, estimate_from=1, processes=2).lo == min(x.lo for x in split)


def test_spread_pooled_over_picks_and_screening_left_out():
    from kerntune.speedup import Interval, Verdict, across_sessions, decide, process_spread, t975

    iv = lambda r, w=0.01: Interval(ratio=r, lo=r - w, hi=r + w, n=100, method="sign-test")  # noqa: E731
    # one pick's two confirmations agree by chance at 1.05; the other picks' show processes move 5%
    lucky = [iv(1.09), iv(1.05), iv(1.052)]
    others = [[iv(1.00), iv(1.06), iv(0.97)], [iv(1.01), iv(0.99), iv(1.06)], [iv(1.0), iv(0.95), iv(1.02)]]
    alone = across_sessions(lucky, estimate_from=1)
    assert alone.ratio == pytest.approx((1.05 * 1.052) ** 0.5)        # the screening estimate is left out
    assert alone.lo <= 1.04 and alone.hi >= 1.10                       # but its interval is still held
    spread = process_spread([g[1:] for g in [lucky] + others])
    assert spread.df == 4 and 0.02 < spread.sd < 0.06
    pooled = across_sessions(lucky, spread, estimate_from=1)
    assert pooled.lo < 1.0 and decide(pooled) is not Verdict.FASTER
    # a real speedup whose processes agree as well as the device allows keeps its claim
    real = [iv(1.82, 0.03), iv(1.80, 0.03), iv(1.78, 0.03)]
    tight = process_spread([real[1:], [iv(1.50), iv(1.52)], [iv(1.30), iv(1.31)]])
    kept = across_sessions(real, tight, estimate_from=1)
    assert decide(kept) is Verdict.FASTER and 1.6 < kept.lo < 1.77
    assert process_spread([[iv(1.1)], [iv(1.2)]]) is None
    assert t975(1) == pytest.approx(12.706) and t975(30) == pytest.approx(2.042) and 1.99 < t975(80) < 2.0
    with pytest.raises(ValueError):
        t975(0)


def test_a_bound_printed_as_the_threshold_gets_the_digits_that_tell_its_side():
    """Two intervals printed '[1.02, ...]' had opposite verdicts (lower bounds 1.0172 and 1.0213
    against the 1.02 threshold; a user tour): such a bound gets more digits, others keep two."""
    from kerntune.speedup import Interval, Verdict, decide

    below, above = Interval(ratio=1.14, lo=1.0172, hi=1.27), Interval(ratio=1.14, lo=1.0213, hi=1.27)
    assert decide(below) is not Verdict.FASTER and decide(above) is Verdict.FASTER
    assert below.text() == "1.14x [1.017, 1.27]" and above.text() == "1.14x [1.021, 1.27]"
    assert Interval(ratio=0.99, lo=0.9801, hi=1.01).text() == "0.99x [0.9801, 1.01]"   # 1/1.02 = 0.98039
    assert Interval(ratio=1.5, lo=1.02, hi=1.6).text() == "1.50x [1.02, 1.60]"
    assert Interval(ratio=1.5, lo=1.46, hi=1.56).text() == "1.50x [1.46, 1.56]"
