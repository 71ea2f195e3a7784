import numpy as np

from kerntune.dtypes import DTYPES, bf16_from_float, bf16_to_float, decode, encode, poisoned
from kerntune.engine.verify import unwritten_mask


def test_bf16_round_trip_and_rounding():
    exact = np.array([1.0, -2.5, 0.0, 2.0**100, -(2.0**-100), 1.5 * 2.0**-120], dtype=np.float32)
    assert np.array_equal(bf16_to_float(bf16_from_float(exact)), exact)
    # 1 + 2^-8 is exactly half-way between two bf16 values: rounds to even (1.0)
    halfway = np.array([1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8], dtype=np.float32)
    assert list(bf16_to_float(bf16_from_float(halfway))) == [1.0, 1.0 + 2 * 2.0**-7]
    assert np.isnan(bf16_to_float(bf16_from_float(np.array([np.nan], np.float32))))[0]
    vals = np.linspace(-4, 4, 1001, dtype=np.float32)
    err = np.abs(bf16_to_float(bf16_from_float(vals)) - vals) / np.maximum(np.abs(vals), 1e-30)
    assert err.max() <= 2.0**-8


def test_encode_decode_all_dtypes():
    for dt in DTYPES.values():
        values = np.arange(-3, 4) if not dt.name.startswith("uint") else np.arange(0, 7)
        stored = encode(dt, values)
        assert stored.dtype == dt.storage
        assert np.array_equal(decode(dt, stored).astype(np.float64), values.astype(np.float64))


def test_poison_patterns_are_distinct_and_detected():
    for dt in DTYPES.values():
        assert dt.poison[0] != dt.poison[1]
        a = poisoned(dt, (5,), 0)
        assert unwritten_mask(dt, a, 0).all() and not unwritten_mask(dt, a, 1).any()
        if dt.is_float:
            with np.errstate(invalid="ignore"):
                    assert np.isnan(decode(dt, a).astype(np.float64)).all()  # poison is a NaN, never a plausible value


def test_bf16_rounding_is_the_same_across_the_chunks_it_is_done_in():
    """bf16_from_float works in chunks of 4M values: an array spanning three chunks, with NaNs,
    infinities and ties at the boundaries, rounds exactly as the one-pass formula does."""
    rng = np.random.default_rng(7)
    n = 2 * (1 << 22) + 5
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-40, 38, n)).astype(np.float32)
    edge = [(1 << 22) - 1, 1 << 22, (1 << 23) + 1, n - 1]
    x[edge] = [np.nan, 1.00390625, -np.inf, np.float32(-np.nan)]
    u = x.view(np.uint32)
    want = ((u + (((u >> 16) & 1) + 0x7FFF)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    want[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    got = bf16_from_float(x)
    assert got.dtype == np.uint16 and np.array_equal(got, want)
    assert np.array_equal(bf16_from_float(x[:12].reshape(3, 4)), want[:12].reshape(3, 4))
