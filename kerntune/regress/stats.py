"""The noise-aware decision of the regression gate.

Each kernel is timed on each shape in several independent *batches* (each
batch: warm-up, then many timed runs, summarized by its median); the batches
of one shape are spread over the whole session, interleaved with the other
shapes and kernels, so slow drift and bursts of noise land in some batches
and not others. A shape is called

* ``slower`` when the median of the batch medians is more than the tolerance
  above the baseline's, **and** a one-sided exact Mann-Whitney rank test says
  the current batch medians are larger than the baseline's batch medians
  scaled by (1 + tolerance), at significance ``alpha`` (default 0.05);
* ``faster`` symmetrically (informational, never a failure);
* ``unsure`` when the median moved past the tolerance but the test does not
  exclude noise (the batches overlap too much): reported, not a failure;
* ``same`` otherwise.

With 5 baseline and 5 current batches, p <= 0.05 means at least 21 of the 25
(current, baseline) pairs are ordered the slow way; when every current batch
is slower than every scaled baseline batch (the spreads do not overlap at
all), p = 1/252. With fewer than 3 batches on either side no test can reach
p <= 0.05, so the gate refuses them.
"""

from __future__ import annotations

import math
import statistics
from enum import Enum
from functools import lru_cache

MIN_BATCHES = 3


class Verdict(str, Enum):
    SAME = "same"
    SLOWER = "slower"
    FASTER = "faster"
    UNSURE = "unsure"        # moved past the tolerance, but within the noise


@lru_cache(maxsize=256)
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """How many arrangements of m x's and n y's give each U (number of (x, y) pairs with x > y)."""
    # f[i][j] is a list indexed by U; recurrence on whether the largest value is an x or a y
    table: dict[tuple[int, int], list[int]] = {}
    for i in range(m + 1):
        for j in range(n + 1):
            if i == 0 or j == 0:
                table[(i, j)] = [1]
                continue
            a = table[(i - 1, j)]            # largest is an x: it beats all j y's
            b = table[(i, j - 1)]            # largest is a y: it beats nothing
            size = i * j + 1
            row = [0] * size
            for u, c in enumerate(a):
                row[u + j] += c
            for u, c in enumerate(b):
                row[u] += c
            table[(i, j)] = row
    return tuple(table[(m, n)])


def p_greater(x: list[float], y: list[float]) -> float:
    """One-sided exact Mann-Whitney p-value for "x tends to be larger than y"
    (ties count one half, rounded towards the null)."""
    m, n = len(x), len(y)
    if m == 0 or n == 0:
        return 1.0
    u2 = sum(2 if a > b else 1 if a == b else 0 for a in x for b in y)   # twice U
    u = u2 // 2                       # ties rounded down: conservative
    counts = _u_counts(m, n)
    return sum(counts[u:]) / math.comb(m + n, m)


def center(values: list[float]) -> float:
    return float(statistics.median(values))


def decide(current: list[float], baseline: list[float], tolerance: float,
           alpha: float) -> tuple[Verdict, float, float]:
    """(verdict, ratio current/baseline of the medians, p-value of the test that decided)."""
    ratio = center(current) / center(baseline)
    up = 1.0 + tolerance
    if ratio > up:
        p = p_greater(current, [b * up for b in baseline])
        return (Verdict.SLOWER if p <= alpha else Verdict.UNSURE), ratio, p
    if ratio < 1.0 / up:
        p = p_greater(baseline, [c * up for c in current])
        return (Verdict.FASTER if p <= alpha else Verdict.UNSURE), ratio, p
    return Verdict.SAME, ratio, 1.0


def min_p(m: int, n: int) -> float:
    """The smallest p-value the test can give with m and n batches."""
    return 1.0 / math.comb(m + n, m)
