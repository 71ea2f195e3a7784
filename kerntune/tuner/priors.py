"""Earlier measurements of a template, for `tune --prior` and `optimize --prior`: a run directory an earlier
`kerntune tune` wrote, a round of an `optimize` run (another shape set, another device, an interrupted run), or
a Kernel Tuner cache file. An `optimize` run directory stands for its rounds: each round of a new run
starts from the earlier rounds whose template declares the same parameters and values (`matching`).
Each gives (configuration, score) pairs; only their ranking matters to the strategy (each source is
standardized on its own), so a run's scores relative to its baseline and a cache's times in ms mix."""

from __future__ import annotations

import math
from pathlib import Path

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.tuner.space import Config, Space

Measured = list[tuple[Config, float]]
WHAT = "give a run directory an earlier `kerntune tune` or `optimize` wrote, or a Kernel Tuner cache file (.json)"


def require_learning(strategy: str) -> None:
    """--prior is for a strategy that can start from earlier measurements: refuse any other."""
    from kerntune.tuner.strategies import strategy_class

    if not strategy_class(strategy).learns:
        raise KerntuneError(ErrorCode.USAGE, f"--prior: strategy {strategy!r} cannot start from earlier "
                                             "measurements", hint="the default strategy (surrogate) can")


def read_prior(path: Path) -> Measured:
    """The measured configurations of one earlier run or cache, with their scores (failures left out)."""
    if path.is_dir():
        from kerntune.tuner.store import RunStore

        if not (path / "tuning.db").is_file():
            raise KerntuneError(ErrorCode.RUN, f"--prior {path}: no run here (no tuning.db)",
                                hint=WHAT)
        store = RunStore.in_dir(path, readonly=True)
        try:
            return [(dict(e.config), float(e.score)) for e in store.evaluations()
                    if e.score is not None and math.isfinite(e.score) and e.score > 0]
        finally:
            store.close()
    if not path.is_file():
        raise KerntuneError(ErrorCode.FILE, f"--prior {path}: no such file or run directory",
                            hint=WHAT)
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


def expand(path: Path) -> list[Path]:
    """The run directories and cache files a --prior path stands for: an `optimize` run directory for its
    rounds, anything else for itself. A directory that is neither kind of run is an error."""
    if path.is_dir() and not (path / "tuning.db").is_file():
        rounds = sorted(p for p in (path / "rounds").glob("*") if (p / "tuning.db").is_file())
        if rounds:
            return rounds
        raise KerntuneError(ErrorCode.RUN, f"--prior {path}: no run here (no tuning.db, no rounds/*/tuning.db)",
                            hint=WHAT)
    if not path.exists():
        raise KerntuneError(ErrorCode.FILE, f"--prior {path}: no such file or run directory",
                            hint=WHAT)
    return [path]


def declared(path: Path) -> dict[str, tuple] | None:
    """The parameters and values the template of a run directory declares (None: a cache file, or a run that
    does not record its template)."""
    if not path.is_dir():
        return None
    from kerntune.tuner.store import RunStore
    from kerntune.tuner.template import stored_template

    store = RunStore.in_dir(path, readonly=True)
    try:
        template = stored_template(store)
    except KerntuneError:
        return None
    finally:
        store.close()
    return None if template is None else {k: tuple(v) for k, v in Space.of(template).params.items()}


def matching(paths: list[Path] | tuple[Path, ...], space: Space) -> tuple[list[Path], list[str]]:
    """For one round of `optimize --prior`: the earlier runs (an optimize run's rounds each) whose template
    declares exactly ``space``'s parameters and values, and the cache files with a measurement in it; and a
    line for each path that could not be read (gone since the run began)."""
    want = {k: tuple(v) for k, v in space.params.items()}
    found, problems = [], []
    for path in paths:
        try:
            for p in expand(Path(path)):
                params = declared(p)
                if params == want or (params is None and p.is_file() and in_space(read_prior(p), space)):
                    found.append(p)
        except KerntuneError as e:
            problems.append(e.message)
    return found, problems


def agreement(path: Path, here: list[tuple[Config, float]]) -> tuple[int, float | None]:
    """How an earlier run ranks this run's measurements: the configurations measured in both, and Spearman's rank
    correlation of the two sets of scores over them (None below 3 in common, or with no spread)."""
    import numpy as np

    key = lambda c: tuple(sorted(c.items()))     # noqa: E731  (parameter order may differ, e.g. in a cache)
    earlier = {key(c): v for c, v in read_prior(path)}
    pairs = [(earlier[k], v) for c, v in here if (k := key(c)) in earlier]
    if len(pairs) < 3:
        return len(pairs), None
    a = np.argsort(np.argsort(np.array(pairs), axis=0), axis=0).astype(float)
    if a[:, 0].std() == 0 or a[:, 1].std() == 0:
        return len(pairs), None
    return len(pairs), float(np.corrcoef(a[:, 0], a[:, 1])[0, 1])
