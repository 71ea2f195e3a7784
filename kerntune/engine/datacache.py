"""Inputs and reference outputs kept between evaluations in one worker.

Verification draws each shape's inputs from a seed and runs the reference on them; during a
search every candidate is verified with the same seeds, so the same arrays were made again for
every candidate. On serving shapes that is most of an evaluation: drawing the inputs of
silu_and_mul at T=4096, d=28672 (470 MB of bf16) and running its NumPy reference took 33 s of
host time, the GPU kernel a fraction of a millisecond. The arrays depend only on the spec, the
shape, the seed and the distribution (and the reference's outputs also on which reference), so
they are made once and kept, least recently used first out, within a byte budget. Kept arrays
are read-only: code that wrote into them would change later evaluations' inputs, and fails
instead.
"""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from typing import Any, Callable, Hashable, Iterable

import numpy as np

# at most this share of physical memory, and never more than MAX_BYTES
MEMORY_SHARE = 0.25
MAX_BYTES = 16 * 2**30


def default_budget() -> int:
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):   # no sysconf (Windows): a modest fixed budget
        physical = 8 * 2**30
    return int(min(MAX_BYTES, MEMORY_SHARE * physical))


def spec_key(spec: Any) -> str:
    """A digest of a spec's content (requests carry a fresh copy of the spec each time)."""
    return hashlib.sha256(spec.model_dump_json().encode()).hexdigest()[:24]


def freeze(arrays: Iterable[np.ndarray]) -> int:
    """Make arrays read-only; their total size in bytes."""
    total = 0
    for a in arrays:
        if isinstance(a, np.ndarray):
            a.flags.writeable = False
            total += a.nbytes
    return total


class DataCache:
    def __init__(self, budget: int | None = None):
        self.budget = default_budget() if budget is None else budget
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self.used = 0
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, make: Callable[[], Any], size: Callable[[Any], int]) -> Any:
        """The value kept under ``key``, or ``make()``'s, kept if ``size(value)`` fits the budget."""
        if key in self._items:
            self._items.move_to_end(key)
            self.hits += 1
            return self._items[key][0]
        self.misses += 1
        value = make()
        n = size(value)
        if n > self.budget:
            return value
        while self.used + n > self.budget and self._items:
            _, (_, old) = self._items.popitem(last=False)
            self.used -= old
        self._items[key] = (value, n)
        self.used += n
        return value

    def clear(self) -> None:
        self._items.clear()
        self.used = 0
