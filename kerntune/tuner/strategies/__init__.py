"""Search strategies, found by name."""

from __future__ import annotations

import importlib
from typing import Any

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.tuner.space import Space
from kerntune.tuner.strategies.base import Option, Strategy

# name -> "module:Class"; the Optuna strategies import Optuna only when chosen
REGISTRY = {
    "exhaustive": "kerntune.tuner.strategies.simple:Exhaustive",
    "random": "kerntune.tuner.strategies.simple:RandomSearch",
    "local": "kerntune.tuner.strategies.simple:LocalSearch",
    "tpe": "kerntune.tuner.strategies.model_based:TPE",
    "nsga2": "kerntune.tuner.strategies.model_based:NSGA2",
    "surrogate": "kerntune.tuner.strategies.surrogate:Surrogate",
}

# what `kerntune tune` and `kerntune optimize` search with unless told otherwise
DEFAULT_STRATEGY = "surrogate"


def strategy_class(name: str) -> type[Strategy]:
    if name not in REGISTRY:
        raise KerntuneError(ErrorCode.USAGE, f"unknown strategy {name!r}", hint=f"strategies: {', '.join(REGISTRY)}")
    module, _, cls = REGISTRY[name].partition(":")
    return getattr(importlib.import_module(module), cls)


def make_strategy(name: str, space: Space, seed: int, options: dict[str, Any] | None = None) -> Strategy:
    return strategy_class(name)(space, seed, **(options or {}))


__all__ = ["DEFAULT_STRATEGY", "Option", "REGISTRY", "Strategy", "make_strategy", "strategy_class"]
