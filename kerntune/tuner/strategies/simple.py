"""Exhaustive, random and local search."""

from __future__ import annotations

import math
from typing import Any

from kerntune.tuner.space import Config, Space
from kerntune.tuner.strategies.base import Option, Strategy


class Exhaustive(Strategy):
    name = "exhaustive"
    summary = "every configuration, in declaration order (the baseline first)"

    def __init__(self, space: Space, seed: int, **options: Any):
        super().__init__(space, seed, **options)
        self._it = space.configs()

    def ask(self) -> Config | None:
        return next(self._it, None)


class RandomSearch(Strategy):
    name = "random"
    summary = "uniform sampling without replacement"
    options = {"max_attempts": Option(100_000, "draws before giving up on finding an unseen configuration",
                                   min=1)}

    def __init__(self, space: Space, seed: int, **options: Any):
        super().__init__(space, seed, **options)
        self._seen: set[str] = set()
        self._order: list[int] | None = None
        if space.size <= 200_000:
            self._order = list(range(space.size))
            self.rng.shuffle(self._order)

    def _nth(self, index: int) -> Config:
        config = {}
        for name, values in reversed(list(self.space.params.items())):
            index, r = divmod(index, len(values))
            config[name] = values[r]
        return {k: config[k] for k in self.space.params}

    def ask(self) -> Config | None:
        if self._order is not None:
            return self._nth(self._order.pop()) if self._order else None
        for _ in range(self.opts["max_attempts"]):
            c = self.space.random_config(self.rng)
            k = self.space.key(c)
            if k not in self._seen:
                self._seen.add(k)
                return c
        return None


class LocalSearch(Strategy):
    """First-improvement hill climbing from the baseline over neighbouring
    values, with iterated-local-search perturbations from the best point when
    stuck in a local optimum."""

    name = "local"
    summary = "hill climbing over neighbouring values with perturbation restarts (iterated local search)"
    options = {
        "perturbation": Option(2, "parameters changed at random to escape a local optimum", min=1),
        "start": Option("baseline", "where to start: 'baseline' or 'random'", choices=("baseline", "random")),
    }

    def __init__(self, space: Space, seed: int, **options: Any):
        super().__init__(space, seed, **options)
        self._scores: dict[str, float] = {}
        self._asked: set[str] = set()
        self._current: Config | None = None
        self._best: tuple[float, Config] | None = None
        self._queue: list[Config] = []
        start = space.baseline() if self.opts["start"] == "baseline" else space.random_config(self.rng)
        self._queue = [start]
        self._stale = 0

    def _key(self, c: Config) -> str:
        return self.space.key(c)

    def _neighbourhood(self, centre: Config) -> list[Config]:
        n = [c for c in self.space.neighbours(centre) if self._key(c) not in self._asked]
        self.rng.shuffle(n)
        return n

    def _perturb(self) -> list[Config]:
        base = dict(self._best[1] if self._best else self.space.baseline())
        names = self.space.names
        for _ in range(100):
            c = dict(base)
            for name in self.rng.sample(names, min(self.opts["perturbation"], len(names))):
                c[name] = self.rng.choice(self.space.params[name])
            if self._key(c) not in self._asked:
                return [c]
        for c in self.space.configs():  # nearly exhausted: take anything unseen
            if self._key(c) not in self._asked:
                return [c]
        return []

    def ask(self) -> Config | None:
        while True:
            while self._queue:
                c = self._queue.pop(0)
                if self._key(c) not in self._asked:
                    self._asked.add(self._key(c))
                    return c
            if len(self._asked) >= self.space.size:
                return None
            centre = self._current
            more = self._neighbourhood(centre) if centre is not None else []
            if more:
                self._queue = more
                continue
            # local optimum (or nothing told yet): perturb from the best so far
            self._queue = self._perturb()
            self._current = None
            if not self._queue:
                return None

    def tell(self, config: Config, score: float) -> None:
        self._scores[self._key(config)] = score
        if self._best is None or score < self._best[0]:
            self._best = (score, config)
        current_score = self._scores.get(self._key(self._current), math.inf) if self._current else math.inf
        if self._current is None and math.isfinite(score):
            self._current = config
            self._queue = []
        elif score < current_score:
            self._current = config          # first improvement: move, explore the new neighbourhood
            self._queue = []
