"""Timing statistics, and the timing loop on the real CPU OpenCL device."""

import pytest

from kerntune.engine.evaluate import EvalRequest, KernelInstance, TimingOptions
from kerntune.results import Status, TimingStats
from kerntune.spec.load import load_file
from kerntune.spec.shapes import spec_shapes
from tests.conftest import REPO

pytestmark = pytest.mark.runtime   # the OpenCL runtime's compiler, numerics or limits decide these: .ci/run runs them on PoCL too


def test_stats_from_samples():
    s = TimingStats.from_samples([5.0, 1.0, 3.0, 2.0, 4.0, 100.0], warmup=3)
    assert (s.n, s.warmup, s.min_ms, s.max_ms) == (6, 3, 1.0, 100.0)
    assert s.median_ms == 3.5                      # robust to the outlier, unlike the mean
    assert s.mean_ms == pytest.approx(115 / 6)
    assert s.q1_ms == 2.25 and s.q3_ms == 4.75 and s.iqr_ms == 2.5
    with pytest.raises(ValueError):
        TimingStats.from_samples([], warmup=0)


def _request(**timing) -> EvalRequest:
    path = REPO / "kernels/examples/vector_add.yaml"
    spec = load_file(path).spec
    source = (REPO / "kernels/examples/vector_add.cl").read_text()
    shapes = tuple(s for s in spec_shapes(spec) if s.label == "1M")
    return EvalRequest(candidate=KernelInstance(source, "vector_add", "opencl"), spec=spec, base_dir=str(path.parent),
                       verify_shapes=(), time_shapes=shapes, seed=1, timing=TimingOptions(**timing))


def test_repeats_warmup_and_flush_are_honoured(worker):
    r = worker.evaluate(_request(warmup=1, repeats=7, flush_l2=False), 120)
    assert r.status is Status.OK
    (t,) = r.timings
    assert t.stats.n == 7 and t.stats.warmup == 1 and not t.stats.l2_flushed and not t.stats.stopped_early


def test_slow_candidates_stop_early(worker):
    key = "n=1048576"
    r = worker.evaluate(_request(warmup=1, repeats=50, stop_after_ms=((key, 1e-6),)), 120)
    (t,) = r.timings
    assert t.stats.stopped_early and t.stats.n == 5


def test_timing_stops_once_the_median_is_precise(worker):
    # a loose precision is met at the first check (20 runs), a precision of 0 never stops timing;
    # the stop is not "early" (that means: far slower than the best)
    loose = worker.evaluate(_request(warmup=1, repeats=60, precision=0.5), 120)
    (t,) = loose.timings
    assert loose.status is Status.OK and t.stats.n == 20 and not t.stats.stopped_early
    fixed = worker.evaluate(_request(warmup=1, repeats=25, precision=0.0), 120)
    assert fixed.timings[0].stats.n == 25
    impossible = worker.evaluate(_request(warmup=1, repeats=30, precision=1e-9), 120)
    assert impossible.timings[0].stats.n == 30


def test_racing_stops_a_candidate_confidently_slower_than_the_best(worker):
    # the interval of the median lies above the race line at the first check (20 runs): stopped,
    # and marked early (it never becomes a shape's best); a line far above it never stops timing
    key = "n=1048576"
    raced = worker.evaluate(_request(warmup=1, repeats=60, precision=1e-9, race_ms=((key, 1e-6),)), 120)
    (t,) = raced.timings
    assert raced.status is Status.OK and t.stats.n == 20 and t.stats.stopped_early
    free = worker.evaluate(_request(warmup=1, repeats=30, precision=1e-9, race_ms=((key, 1e6),)), 120)
    assert free.timings[0].stats.n == 30 and not free.timings[0].stats.stopped_early
    # racing works at the precision checks only: with precision 0 nothing is checked
    off = worker.evaluate(_request(warmup=1, repeats=25, precision=0.0, race_ms=((key, 1e-6),)), 120)
    assert off.timings[0].stats.n == 25


def test_median_interval():
    from kerntune.speedup import median_interval

    med, lo, hi = median_interval([float(x) for x in range(1, 41)])
    assert med == 20.5 and lo < med < hi and lo >= 1 and hi <= 40
    assert median_interval([1.0] * 5) == (1.0, 0.0, float("inf"))


def test_median_halfwidth():
    from kerntune.speedup import median_halfwidth

    assert median_halfwidth([1.0] * 5) == float("inf")           # too few runs for a 95% interval
    assert median_halfwidth([2.0] * 20) == 0.0
    spread = [1.0 + 0.01 * i for i in range(100)]               # median 1.495; ranks 40 and 61
    assert median_halfwidth(spread) == pytest.approx((1.60 - 1.39) / (2 * 1.495))
    assert median_halfwidth(spread[:30]) > median_halfwidth(spread[:30] * 3)   # more runs, tighter


def test_inout_arrays_restored_before_every_timed_run(worker, tmp_path):
    # x[i] += 1 in place: without a restore, the values would grow by one per run
    from tests.conftest import write

    spec = write(tmp_path, "inc.yaml", """
kernel: inc
args:
  - {name: x, dtype: int32, shape: [n], intent: inout, range: [0, 10]}
  - {name: n, dtype: int32, value: n}
launch: {grid: ["ceil_div(n, 64)"], block: [64]}
shapes: [{n: 1000}]
reference: {code: "def ref(x):\\n    return x + 1\\n", function: ref}
""")
    src = ("__kernel void inc(__global int* x, const int n) { int i = get_global_id(0); "
           "if (i < n) { if (x[i] > 100) x[i] = -1000000; else x[i] += 1; } }")
    s = load_file(spec).spec
    shapes = tuple(spec_shapes(s))
    # 200 runs would push values past 100 (and poison them) unless each run starts fresh; verify after timing
    req = EvalRequest(candidate=KernelInstance(src, "inc", "opencl"), spec=s, base_dir=str(tmp_path),
                      verify_shapes=shapes, time_shapes=shapes, seed=3,
                      timing=TimingOptions(warmup=5, repeats=200, flush_l2=False))
    r = worker.evaluate(req, 120)
    assert r.status is Status.OK and r.timings[0].stats.n == 200
