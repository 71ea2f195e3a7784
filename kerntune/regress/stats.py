"""The noise-aware decision of the regression gate.

Each kernel is timed on each shape in several independent *batches* (each
batch: warm-up, then many timed runs, summarized by its median); the batches
of one shape are spread over the whole session, interleaved with the other
shapes and kernels, so slow drift and bursts of noise land in some batches
and not others. A shape is called

* ``slower`` when the whole confidence interval of the change (Hodges-Lehmann
  shift of the log batch medians with Moses' exact interval, at confidence
  1 - 2*alpha, i.e. 90% for the default alpha 0.05) lies above 1 + tolerance:
  the same interval and decision every kerntune command uses
  (:mod:`kerntune.speedup`);
* ``faster`` symmetrically (informational, never a failure);
* ``same`` when the whole interval lies within the tolerance;
* ``unsure`` otherwise: the batches overlap too much to tell: reported, not a
  failure.

With 5 baseline and 5 current batches the 90% interval runs from the 5th to
the 21st of the 25 pairwise differences, so "slower" needs at least 21 of the
25 (current, baseline) pairs ordered the slow way by more than the
tolerance. With fewer than 3 batches on either side no interval can exclude
noise, so the gate refuses them. The p-value of the one-sided exact
Mann-Whitney test is reported beside it.
"""

from __future__ import annotations

import math
import statistics

from kerntune import speedup as sp
from kerntune.speedup import Verdict, p_greater

MIN_BATCHES = 3


def center(values: list[float]) -> float:
    return float(statistics.median(values))


def decide(current: list[float], baseline: list[float], tolerance: float,
           alpha: float) -> tuple[Verdict, float, float]:
    """(verdict, ratio current/baseline, p-value of the one-sided rank test in the direction
    the times moved). The verdict is kerntune's one decision (:func:`kerntune.speedup.decide`)
    on the unpaired interval of the batch medians, at confidence 1 - 2*alpha, with the
    threshold 1 + tolerance."""
    iv = sp.unpaired(baseline, current, confidence=1.0 - 2.0 * alpha)     # speedup of current over baseline
    verdict = sp.decide(iv, 1.0 + tolerance)
    ratio = 1.0 / iv.ratio
    up = 1.0 + tolerance
    if ratio >= 1.0:
        p = p_greater(current, [b * up for b in baseline])
    else:
        p = p_greater(baseline, [c * up for c in current])
    return verdict, ratio, p


def min_p(m: int, n: int) -> float:
    """The smallest p-value the test can give with m and n batches."""
    return 1.0 / math.comb(m + n, m)
