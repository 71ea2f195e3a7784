"""NumPy reference and inputs for the CSR SpMV pair: y = A x, A in CSR form."""

import numpy as np


def _row_lengths(rows, cols, nnz, rng):
    """Exactly nnz entries over the rows, none longer than cols: skewed lengths
    (log-normal weights, a few very long rows) and about 10% empty rows."""
    if nnz > rows * cols:
        raise ValueError(f"nnz={nnz} does not fit in a {rows}x{cols} matrix")
    weights = rng.lognormal(0.0, 1.0, size=rows)
    weights[rng.random(rows) < 0.10] = 0.0
    if rows > 1:
        weights[rng.integers(0, rows)] *= 20.0           # one heavy row
    if weights.sum() == 0.0:
        weights[:] = 1.0
    lengths = rng.multinomial(nnz, weights / weights.sum()).astype(np.int64)
    # move what does not fit in a row (cols entries at most) to rows with room, most room first
    excess = int(np.maximum(lengths - cols, 0).sum())
    np.minimum(lengths, cols, out=lengths)
    while excess:
        room = cols - lengths
        order = np.argsort(-room, kind="stable")
        for r in order:
            if not excess or room[r] == 0:
                break
            take = min(int(room[r]), excess)
            lengths[r] += take
            excess -= take
    assert lengths.sum() == nnz
    return lengths


def _columns(lengths, cols, rng):
    """Sorted distinct column indices for every row."""
    rows = len(lengths)
    nnz = int(lengths.sum())
    row_of = np.repeat(np.arange(rows, dtype=np.int64), lengths)
    col = rng.integers(0, cols, size=nnz, dtype=np.int64)
    for _ in range(64):                                 # redraw duplicates until none are left
        key = row_of * cols + col
        order = np.argsort(key, kind="stable")
        key, row_of, col = key[order], row_of[order], col[order]
        dup = np.zeros(nnz, dtype=bool)
        dup[1:] = key[1:] == key[:-1]
        if not dup.any():
            return col
        col[dup] = rng.integers(0, cols, size=int(dup.sum()), dtype=np.int64)
    # dense rows converge slowly: finish them one by one
    starts = np.concatenate(([0], np.cumsum(lengths)))
    for r in range(rows):
        a, b = starts[r], starts[r + 1]
        seg = col[a:b]
        if len(np.unique(seg)) != len(seg):
            col[a:b] = np.sort(rng.choice(cols, size=b - a, replace=False))
    return col


def make_inputs(sizes, rng):
    rows, cols, nnz = sizes["rows"], sizes["cols"], sizes["nnz"]
    lengths = _row_lengths(rows, cols, nnz, rng)
    row_ptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=row_ptr[1:])
    col_idx = _columns(lengths, cols, rng)
    return {
        "row_ptr": row_ptr.astype(np.int32),
        "col_idx": col_idx.astype(np.int32),
        "vals": rng.uniform(-1.0, 1.0, size=nnz).astype(np.float32),
        "x": rng.uniform(-1.0, 1.0, size=cols).astype(np.float32),
    }


def spmv_csr(row_ptr, col_idx, vals, x, rows):
    lengths = np.diff(row_ptr.astype(np.int64))
    row_of = np.repeat(np.arange(rows), lengths)
    products = vals.astype(np.float64) * x.astype(np.float64)[col_idx]
    return np.bincount(row_of, weights=products, minlength=rows)
