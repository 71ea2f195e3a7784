"""The one speedup decision: every command that says "faster" or "slower"
(`optimize`, `tune`, `bench --against`, `regress`, `score`) asks this module.

A speedup is never a single number. It is an :class:`Interval`: a point
estimate and a confidence interval on ``baseline time / candidate time``.

* **Paired** (the same session, launches interleaved run by run): each timed
  run of the candidate is paired with the baseline's run next to it, and the
  log-ratios ``d_i = log(base_i / cand_i)`` are summarized by their median.
  The interval is the exact sign-test (binomial order-statistic) interval for
  that median: distribution-free, no assumption on how timing noise looks.
* **Unpaired** (a stored baseline against a new session, the regression
  gate's batches): the Hodges-Lehmann shift between the two sets of log-times
  with Moses' interval from the exact Mann-Whitney distribution.
* **Geometric mean over shapes**: a percentile bootstrap (fixed seed, so a
  record re-read gives the same interval) that resamples each shape's pairs
  (or each side's batches) independently and averages the shapes' medians in
  log space.

The decision (:func:`decide`) is "faster" only when the interval's *lower*
bound clears the threshold, "slower" only when its upper bound is below the
inverse of the threshold, "same" when the whole interval lies between the two,
and "unsure" otherwise. A candidate that is the original kernel (same baked
source, launch and options) is exactly 1.0x: :func:`identical`.
"""

from __future__ import annotations

import math
from enum import Enum
from functools import lru_cache
from typing import Optional, Sequence

import numpy as np

from pydantic import ConfigDict, field_validator

from kerntune.results import Record

THRESHOLD = 1.02          # the one improvement threshold: "faster" means the interval clears +2%
CONFIDENCE = 0.95         # two-sided confidence of every interval kerntune prints
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20261123


class Verdict(str, Enum):
    FASTER = "faster"
    SLOWER = "slower"
    SAME = "same"          # the whole interval lies within [1/threshold, threshold]
    UNSURE = "unsure"      # the interval crosses a threshold: the noise does not allow a claim


def _bound(x: float, digits: int) -> str:
    """``x`` to ``digits`` decimals, or to as many more (up to 4) as set it apart from a threshold it
    would otherwise print as."""
    for edge in (THRESHOLD, 1.0 / THRESHOLD):
        d = digits
        while d < digits + 4 and x != edge and f"{x:.{d}f}" == f"{edge:.{d}f}":
            d += 1
        if d > digits:
            return f"{x:.{d}f}"
    return f"{x:.{digits}f}"


class Interval(Record):
    """``ratio`` = baseline time / candidate time (above 1: the candidate is faster). An
    unbounded side (too few samples for the confidence asked) is 0 below and infinity
    above; infinity is written as null in JSON and read back as infinity."""

    model_config = ConfigDict(frozen=True, ser_json_inf_nan="null")

    ratio: float
    lo: float
    hi: float
    confidence: float = CONFIDENCE
    n: int = 0                         # pairs (paired) or samples per side (unpaired); shapes for a geomean
    method: str = ""                   # sign-test, moses, bootstrap, identical, point

    @field_validator("hi", mode="before")
    @classmethod
    def _unbounded(cls, v):
        return math.inf if v is None else v

    def text(self, digits: int = 2) -> str:
        """``1.14x [1.02, 1.27]``; a bound that would print as a verdict's threshold (1.02, 0.98)
        without being it gets the digits that tell which side it is on (``[1.017, 1.26]``): two
        intervals printed alike had opposite verdicts (a user tour)."""
        if self.method == "identical":
            return "1.00x (the original)"
        return f"{self.ratio:.{digits}f}x [{_bound(self.lo, digits)}, {_bound(self.hi, digits)}]"

    def inverted(self) -> "Interval":
        """The same interval as candidate time / baseline time."""
        inv = lambda x: math.inf if x == 0 else (0.0 if math.isinf(x) else 1.0 / x)  # noqa: E731
        return self.model_copy(update={"ratio": inv(self.ratio), "lo": inv(self.hi), "hi": inv(self.lo)})


# two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom (a 95% interval)
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(df: int) -> float:
    """Student's t 97.5% quantile for ``df`` degrees of freedom (within 0.001 beyond the table)."""
    if df < 1:
        raise ValueError("at least one degree of freedom")
    return _T975[df - 1] if df <= len(_T975) else 1.96 + 2.5 / df


class Spread(Record):
    """How much one speedup moves from process to process: the pooled standard deviation of
    the log estimates of every (candidate, shape) measured in several sessions, and its degrees
    of freedom."""

    model_config = ConfigDict(frozen=True)

    sd: float
    df: int


def process_spread(groups: Sequence[Sequence[Interval]]) -> Optional[Spread]:
    """The pooled within-group spread of ``groups`` (each the sessions of one speedup); None
    when no group has two sessions. A spread estimated from many speedups at once is what
    keeps two sessions that happen to agree from looking more certain than the device is."""
    ss, df = 0.0, 0
    for g in groups:
        logs = [math.log(iv.ratio) for iv in g if iv.method != "identical"]
        if len(logs) >= 2:
            ss += float(np.sum((np.asarray(logs) - np.mean(logs)) ** 2))
            df += len(logs) - 1
    return Spread(sd=math.sqrt(ss / df), df=df) if df else None


def across_sessions(sessions: Sequence[Interval], spread: Optional[Spread] = None, estimate_from: int = 0,
                    processes: int = 0) -> Interval:
    """One speedup measured in several sessions (in separate processes). The estimate is the
    geometric mean of the estimates of ``sessions[estimate_from:]`` (1: leave out a screening
    session that the pick was made on, whose estimate is biased up).

    With ``spread`` (the block-to-block spread pooled over every speedup measured alike) and
    ``processes`` (the worker processes those sessions ran in), the interval is the t-interval of
    that mean counted as one observation per process, not per session: blocks in one process share
    a state of the machine and are not independent, but the mean of one process's blocks varies
    no more than one block does, so a block's standard deviation over ``sqrt(processes)`` bounds
    the mean's, whatever the relation between blocks (``spread.sd`` estimates it; docs/proof.md,
    "No winner's curse", says what that estimate can miss). Otherwise the interval holds every session's interval and
    the t-interval of the mean, each session one observation, its spread the sessions' own or
    ``spread``: it widens with disagreement and never claims what one session could rule out."""
    if not sessions:
        raise ValueError("no sessions")
    for iv in sessions:
        if iv.method == "identical":
            return iv
    used = list(sessions[estimate_from:]) or list(sessions)
    if len(sessions) == 1:
        return sessions[0]
    logs = np.log([iv.ratio for iv in used])
    k, mean = len(logs), float(np.mean(logs))
    per_process = spread is not None and processes > 0
    if spread is not None:
        sd, df = spread.sd, spread.df
    elif k >= 2:
        sd, df = float(np.std(logs, ddof=1)), k - 1
    else:
        sd, df = 0.0, 1
    n = min(k, processes) if per_process else k
    half = t975(df) * sd / math.sqrt(n)
    lo, hi = math.exp(mean - half), math.exp(mean + half)
    method = f"{sessions[-1].method}, {len(sessions)} sessions"
    if per_process:
        method += f", t-interval over {n} process{'es' if n != 1 else ''}"
    else:
        lo, hi = min(min(iv.lo for iv in sessions), lo), max(max(iv.hi for iv in sessions), hi)
    return Interval(ratio=math.exp(mean), lo=lo, hi=hi, confidence=min(iv.confidence for iv in sessions),
                    n=max(iv.n for iv in sessions), method=method)


def identical() -> Interval:
    return Interval(ratio=1.0, lo=1.0, hi=1.0, n=0, method="identical")


def _logs(values: Sequence[float]) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64)
    if a.size == 0 or np.any(~np.isfinite(a)) or np.any(a <= 0):
        raise ValueError("timings must be positive and finite")
    return np.log(a)


@lru_cache(maxsize=512)
def sign_rank(n: int, confidence: float = CONFIDENCE) -> int:
    """The 1-based rank k such that [x_(k), x_(n+1-k)] covers the median with at least
    ``confidence`` (0 when n is too small for any such interval)."""
    alpha = (1.0 - confidence) / 2
    k, cdf = 0, 0.0
    for i in range(n + 1):
        cdf += math.comb(n, i) / 2.0**n       # P(B <= i), B ~ Binomial(n, 1/2)
        if cdf > alpha + 1e-12:
            break
        k = i + 1
    return k


def unbounded_with_few_runs(geo: Interval, runs: int, confidence: float = CONFIDENCE) -> Interval:
    """``geo`` (a geometric mean over shapes) made unbounded when a shape had too few paired runs for a
    sign-test interval of its own (``runs``, the fewest of any shape: 5 or fewer at 95%). The bootstrap
    behind ``geo`` resamples those few runs as if they were the population, and gave `bench --repeats 3`
    a "faster" geomean of 1.63x [1.44, 2.93] beside two shapes whose own intervals were [0.00, inf],
    one of them 1.26x."""
    if sign_rank(runs, confidence) > 0:
        return geo
    return geo.model_copy(update={"lo": 0.0, "hi": math.inf,
                                  "method": f"none: {runs} paired run(s) on a shape, too few for an interval"})


def median_interval(samples: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """The median of ``samples`` and the sign-test interval around it, (median, low, high);
    (median, 0, inf) when there are too few samples for an interval."""
    a = np.sort(np.asarray(samples, dtype=np.float64))
    n, k = a.size, sign_rank(a.size, confidence)
    med = float(np.median(a)) if n else 0.0
    if k == 0:
        return med, 0.0, math.inf
    return med, float(a[k - 1]), float(a[n - k])


def relative_halfwidth(med: float, lo: float, hi: float) -> float:
    """Half the width of an interval (a :func:`median_interval`) relative to its median (inf
    without an interval or a positive median)."""
    if med <= 0 or not math.isfinite(hi):
        return math.inf
    return (hi - lo) / (2.0 * med)


def median_halfwidth(samples: Sequence[float], confidence: float = CONFIDENCE) -> float:
    """Half the width of the sign-test interval of the median of ``samples``, relative to the
    median (inf when there are too few samples for an interval): the precision of one timing."""
    return relative_halfwidth(*median_interval(samples, confidence))


def paired(base: Sequence[float], cand: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Speedup from paired, interleaved runs: ``base[i]`` and ``cand[i]`` were timed next to each other."""
    if len(base) != len(cand):
        raise ValueError(f"paired samples must have the same length ({len(base)} != {len(cand)})")
    d = np.sort(_logs(base) - _logs(cand))
    n = d.size
    est = float(np.median(d))
    k = sign_rank(n, confidence)
    lo, hi = (float(d[k - 1]), float(d[n - k])) if k > 0 else (-math.inf, math.inf)
    return Interval(ratio=math.exp(est), lo=_exp(lo), hi=_exp(hi), confidence=confidence, n=n, method="sign-test")


@lru_cache(maxsize=256)
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """How many arrangements of m x's and n y's give each U (pairs with x > y)."""
    table: dict[tuple[int, int], list[int]] = {}
    for i in range(m + 1):
        for j in range(n + 1):
            if i == 0 or j == 0:
                table[(i, j)] = [1]
                continue
            a, b = table[(i - 1, j)], table[(i, j - 1)]   # the largest value is an x (beats all j) or a y
            row = [0] * (i * j + 1)
            for u, c in enumerate(a):
                row[u + j] += c
            for u, c in enumerate(b):
                row[u] += c
            table[(i, j)] = row
    return tuple(table[(m, n)])


def p_greater(x: Sequence[float], y: Sequence[float]) -> float:
    """One-sided exact Mann-Whitney p-value for "x tends to be larger than y" (ties count
    one half, rounded towards the null)."""
    m, n = len(x), len(y)
    if m == 0 or n == 0:
        return 1.0
    u = sum(2 if a > b else 1 if a == b else 0 for a in x for b in y) // 2
    return sum(_u_counts(m, n)[u:]) / math.comb(m + n, m)


def moses_rank(m: int, n: int, confidence: float = CONFIDENCE) -> int:
    """The 1-based rank C such that [D_(C), D_(mn+1-C)] of the m*n sorted pairwise
    differences covers the shift with at least ``confidence`` (0: no such interval)."""
    alpha = (1.0 - confidence) / 2
    counts = _u_counts(m, n)
    total = math.comb(m + n, m)
    c, cdf = 0, 0
    for u, k in enumerate(counts):
        cdf += k
        if cdf / total > alpha + 1e-12:
            break
        c = u + 1
    return c


def unpaired(base: Sequence[float], cand: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Speedup from two independent sets of timings (e.g. batch medians of two sessions)."""
    lb, lc = _logs(base), _logs(cand)
    diffs = np.sort((lb[:, None] - lc[None, :]).ravel())
    est = float(np.median(diffs))
    c = moses_rank(lb.size, lc.size, confidence)
    lo, hi = (float(diffs[c - 1]), float(diffs[diffs.size - c])) if c > 0 else (-math.inf, math.inf)
    return Interval(ratio=math.exp(est), lo=_exp(lo), hi=_exp(hi), confidence=confidence,
                    n=min(lb.size, lc.size), method="moses")


def geomean(values: Sequence[float]) -> float:
    """The geometric mean of positive, finite numbers (others are left out; NaN when none is left):
    the one plain geometric mean kerntune computes, of speedups and of times alike."""
    vals = [v for v in values if v > 0 and math.isfinite(v)]
    if not vals:
        return float("nan")
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def geomean_interval(shapes: Sequence[tuple[Sequence[float], Sequence[float]]], is_paired: bool = True,
            confidence: float = CONFIDENCE, resamples: int = BOOTSTRAP_RESAMPLES,
            seed: int = BOOTSTRAP_SEED) -> Interval:
    """Geometric-mean speedup over shapes, from each shape's (baseline, candidate) timings."""
    if not shapes:
        raise ValueError("no shapes")
    rng = np.random.default_rng(seed)
    centers, boots = [], []
    for base, cand in shapes:
        lb, lc = _logs(base), _logs(cand)
        if is_paired:
            d = lb - lc
            centers.append(float(np.median(d)))
            idx = rng.integers(0, d.size, size=(resamples, d.size))
            boots.append(np.median(d[idx], axis=1))
        else:
            centers.append(float(np.median(lb) - np.median(lc)))
            bi = rng.integers(0, lb.size, size=(resamples, lb.size))
            ci = rng.integers(0, lc.size, size=(resamples, lc.size))
            boots.append(np.median(lb[bi], axis=1) - np.median(lc[ci], axis=1))
    mean = np.mean(np.vstack(boots), axis=0)
    alpha = (1.0 - confidence) / 2
    lo, hi = np.quantile(mean, [alpha, 1.0 - alpha])
    return Interval(ratio=math.exp(float(np.mean(centers))), lo=math.exp(float(lo)), hi=math.exp(float(hi)),
                    confidence=confidence, n=len(shapes), method="bootstrap")


def geomean_of(intervals: Sequence[Interval]) -> Optional[Interval]:
    """When every shape is identical to the original, so is the geometric mean."""
    if intervals and all(iv.method == "identical" for iv in intervals):
        return identical()
    return None


def decide(iv: Optional[Interval], threshold: float = THRESHOLD) -> Verdict:
    if iv is None:
        return Verdict.UNSURE
    if iv.method == "identical":
        return Verdict.SAME
    if iv.lo >= threshold:
        return Verdict.FASTER
    if iv.hi <= 1.0 / threshold:
        return Verdict.SLOWER
    if iv.lo >= 1.0 / threshold and iv.hi <= threshold:
        return Verdict.SAME
    return Verdict.UNSURE


def _exp(x: float) -> float:
    if x == -math.inf:
        return 0.0
    if x == math.inf:
        return math.inf
    return math.exp(x)


__all__ = ["BOOTSTRAP_SEED", "CONFIDENCE", "Interval", "Spread", "THRESHOLD", "Verdict", "across_sessions", "decide",
           "geomean", "geomean_interval", "geomean_of", "identical", "moses_rank", "p_greater", "paired",
           "median_interval", "process_spread", "relative_halfwidth", "sign_rank", "t975", "unpaired"]
