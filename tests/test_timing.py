"""Timing statistics, and the timing loop on the real CPU OpenCL device."""

import pytest

from kerntune.engine.evaluate import EvalRequest, KernelInstance, TimingOptions
from kerntune.results import Status, TimingStats
from kerntune.spec.load import load_file
from kerntune.spec.shapes import spec_shapes
from tests.conftest import REPO


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
