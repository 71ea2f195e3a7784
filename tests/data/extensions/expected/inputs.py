"""Input generators of the hand-written corpus specs."""

import numpy as np


def distinct_slots(sizes, rng):
    """Each token writes its own slot: a random choice of distinct slots in the cache."""
    total = sizes["num_blocks"] * sizes["block_size"]
    return {"slot_mapping": rng.permutation(total)[: sizes["num_tokens"]].astype(np.int64)}
