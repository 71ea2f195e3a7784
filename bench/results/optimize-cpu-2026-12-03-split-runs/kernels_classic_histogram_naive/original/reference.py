"""NumPy reference and inputs for the histogram pair (256 bins over bytes)."""

import numpy as np

BINS = 256


def make_inputs(sizes, rng):
    """Uniform bytes, with `skew` percent of them replaced by one hot value (the
    contended case), and a zeroed histogram to accumulate into."""
    n, skew = sizes["n"], sizes["skew"]
    data = rng.integers(0, BINS, size=n, dtype=np.uint8)
    if skew:
        hot = rng.random(n) < skew / 100.0
        data[hot] = np.uint8(rng.integers(0, BINS))
    return {"counts": np.zeros(BINS, dtype=np.uint32), "data": data}


def histogram(counts, data):
    add = np.bincount(data.astype(np.int64), minlength=BINS)
    return (counts.astype(np.uint64) + add).astype(np.uint32)
