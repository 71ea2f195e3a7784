"""Earlier measurements of a template, for `tune --prior`: a run directory an earlier `kerntune tune` or
`optimize` wrote (another shape set, another device, an interrupted run), or a Kernel Tuner cache file.
Each gives (configuration, score) pairs; only their ranking matters to the strategy (each source is
standardized on its own), so a run's scores relative to its baseline and a cache's times in ms mix."""

from __future__ import annotations

import math
from pathlib import Path

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.tuner.space import Config, Space

Measured = list[tuple[Config, float]]


def read_prior(path: Path) -> Measured:
    """The measured configurations of one earlier run or cache, with their scores (failures left out)."""
    if path.is_dir():
        from kerntune.tuner.store import RunStore

        if not (path / "tuning.db").is_file():
            raise KerntuneError(ErrorCode.RUN, f"--prior {path}: no run here (no tuning.db)",
                                hint="give a run directory an earlier `kerntune tune` or `optimize` wrote, or a "
                                     "Kernel Tuner cache file (.json)")
        store = RunStore.in_dir(path)
        try:
            return [(dict(e.config), float(e.score)) for e in store.evaluations()
                    if e.score is not None and math.isfinite(e.score) and e.score > 0]
        finally:
            store.close()
    if not path.is_file():
        raise KerntuneError(ErrorCode.FILE, f"--prior {path}: no such file or run directory",
                            hint="give a run directory an earlier `kerntune tune` or `optimize` wrote, or a "
                                 "Kernel Tuner cache file (.json)")
    from kerntune.tuner.kerneltuner import read_cache

    doc = read_cache(path)
    keys = list(doc["tune_params_keys"])
    out = []
    for entry in doc["cache"].values():
        t = entry.get("time") if isinstance(entry, dict) else None
        if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and t > 0 and \
                all(k in entry for k in keys):
            out.append(({k: entry[k] for k in keys}, float(t)))
    return out


def in_space(measured: Measured, space: Space) -> Measured:
    """The pairs whose configuration is one of ``space``'s (every parameter known, every value declared)."""
    values = {k: set(v) for k, v in space.params.items()}
    return [(c, s) for c, s in measured
            if set(c) == set(values) and all(_has(values[k], v) for k, v in c.items())]


def _has(values: set, v) -> bool:
    try:
        return v in values and any(type(x) is type(v) for x in values if x == v)
    except TypeError:
        return False


def load_priors(paths: list[Path] | tuple[Path, ...], space: Space) -> list[Measured]:
    """One list per path of its measurements that fall in ``space``; a path none of whose measurements do
    is an error (a run of another template, most likely)."""
    sources = []
    for path in paths:
        got = read_prior(Path(path))
        kept = in_space(got, space)
        if not kept:
            raise KerntuneError(ErrorCode.USAGE, f"--prior {path}: none of its {len(got)} measured configurations "
                                                 "is in this template's space",
                                hint="a prior must come from the same template (the same parameters and values): "
                                     f"this one's parameters are {', '.join(space.params)}")
        sources.append(kept)
    return sources
