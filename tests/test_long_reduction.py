"""A long fp32 reduction (a GEMV row of 4096 terms) is rounded differently by an honest rewrite that adds
the terms in another order; where large terms cancel, an output near zero carries an absolute error set
by the terms, not by itself. The default tolerance must pass that, and still refuse a real error there."""

from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli
from kerntune.dtypes import DTYPES, decode, encode
from kerntune.engine.judge import Expected, atol_scales, judge_runs
from kerntune.engine.verify import compare
from kerntune.spec.model import ArgSpec, KernelSpec

GEMV = Path(__file__).parent / "data" / "gemv"


def test_an_honest_gemv_rewrite_passes_the_default_tolerance():
    """Seed 1 on both CPU runtimes: the rewrite's y[0] (-0.1053, rms of y about 21) is 2.2e-5 off the
    sequential sum's, rel L2 1.1e-6; at an atol of 1e-5 that was WRONG."""
    r = run_cli("bench", str(GEMV / "gemv.cl"), "--against", str(GEMV / "gemv_wg.cl"), "--device", "cpu",
                "--seed", "1", "--repeats", "3", "--warmup", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "verify  gemv_wg.cl: correct on 2 spec shapes + 1 held out, 7 input distributions" in r.stdout, r.stdout


def _rows(seed: int = 7, m: int = 512, k: int = 4096, scale: float = 1.0):
    """GEMV outputs in float64 (the truth) and the same sums in fp32 summed in two orders."""
    rng = np.random.default_rng(seed)
    t = (rng.uniform(-1, 1, (m, k)) * rng.uniform(-1, 1, k)).astype(np.float32) * np.float32(scale)
    in_order = np.cumsum(t, axis=1, dtype=np.float32)[:, -1]
    strided = np.cumsum(t.reshape(m, k // 256, 256), axis=1, dtype=np.float32)[:, -1, :].sum(axis=1, dtype=np.float32)
    return in_order, strided


def test_a_real_error_at_an_element_near_zero_is_still_refused():
    """The honest reordering passes; the same outputs with the element nearest zero off by 2e-3 (rel L2
    5e-6, within rel_l2) fail on the element bound, at the spec's own size and at 1e8 times it
    (`large` inputs: the size counted once, not twice)."""
    out = ArgSpec(name="y", dtype="fp32", shape=["m"], intent="out")
    tol = DTYPES["fp32"].tolerance
    ref, honest = _rows()
    assert compare(out, tol, honest, ref, True).ok
    i = int(np.argmin(np.abs(ref)))
    wrong = honest.copy()
    wrong[i] += np.float32(2e-3)
    c = compare(out, tol, wrong, ref, True)
    assert not c.ok and c.reason == "tolerance" and c.bad_elements == 1 and c.first_bad_index == [i], c
    assert c.rel_l2_err < tol.rel_l2 and "off by more than atol + rtol * |expected| (atol " in c.describe()

    spec = KernelSpec.model_validate({"kernel": "gemv", "launch": {"grid": [1], "block": [1]}, "shapes": [{"m": 512}],
                                      "args": [out.model_dump(exclude_none=True)]})
    big_ref, big_honest = _rows(scale=1e8)
    rms = lambda v: {"y": float(np.sqrt(np.mean(v.astype(np.float64) ** 2)))}  # noqa: E731
    scales = atol_scales(spec, rms(big_ref), rms(ref))
    assert judge_runs(spec, {}, [({"y": big_honest}, {})], Expected({"y": big_ref}, True), scales)[0].ok
    j = int(np.argmin(np.abs(big_ref)))
    big_wrong = big_honest.copy()
    big_wrong[j] += np.float32(2e5)
    check = judge_runs(spec, {}, [({"y": big_wrong}, {})], Expected({"y": big_ref}, True), scales)[0]
    assert not check.ok and check.first_bad_index == [j], check


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_half_precision_outputs_measure_atol_the_same_way(dtype):
    """fp16 and bf16 outputs (the GEMV's sums stored in the narrow type): the honest reordering passes,
    and the element nearest zero off by 4 * atol * max |ref| is refused though rel L2 does not see it."""
    out = ArgSpec(name="y", dtype=dtype, shape=["m"], intent="out")
    dt = DTYPES[dtype]
    ref32, honest32 = _rows(m=2048)
    ref, honest = encode(dt, ref32), encode(dt, honest32)
    assert compare(out, dt.tolerance, honest, ref, True).ok
    values = decode(dt, honest).astype(np.float32)
    i = int(np.argmin(np.abs(values)))
    values[i] += np.float32(4 * dt.tolerance.atol * np.abs(decode(dt, ref)).max())
    c = compare(out, dt.tolerance, encode(dt, values), ref, True)
    assert not c.ok and c.bad_elements == 1 and c.first_bad_index == [i] and c.rel_l2_err < dt.tolerance.rel_l2, c
