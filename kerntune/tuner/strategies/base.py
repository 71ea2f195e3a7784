"""One small interface for search strategies: ``ask`` for the next
configuration, ``tell`` its score (lower is better; ``math.inf`` when it
failed or was pruned). Several asks may be outstanding before their tells
(the tuner compiles ahead). Each strategy declares its options; unknown ones
are rejected with the allowed list."""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.tuner.space import Config, Space


@dataclass(frozen=True)
class Option:
    default: Any
    help: str

    def parse(self, name: str, raw: Any) -> Any:
        kind = type(self.default)
        if isinstance(raw, kind) and not (kind is int and isinstance(raw, bool)):
            return raw
        text = str(raw).strip()
        try:
            if kind is bool:
                if text.lower() in ("1", "true", "yes", "on"):
                    return True
                if text.lower() in ("0", "false", "no", "off"):
                    return False
                raise ValueError(text)
            return kind(text)
        except ValueError:
            raise KerntuneError(ErrorCode.USAGE, f"strategy option {name}={text!r}: expected {kind.__name__} "
                                                 f"(default {self.default!r})") from None


class Strategy(ABC):
    name: ClassVar[str]
    summary: ClassVar[str]
    options: ClassVar[dict[str, Option]] = {}
    # whether what it proposes depends on the evaluation budget (see ``budget``): a replay then runs
    # once per budget, not once read at every budget (scripts/bench_strategies.py)
    plans_with_budget: ClassVar[bool] = False
    # whether it can start from earlier measurements of the template (``learn``; tune --prior)
    learns: ClassVar[bool] = False

    def __init__(self, space: Space, seed: int, **options: Any):
        self.space = space
        self.seed = seed
        self.rng = random.Random(seed)
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            allowed = ", ".join(f"{k} (default {v.default!r})" for k, v in self.options.items()) or "none"
            raise KerntuneError(ErrorCode.USAGE, f"strategy {self.name!r} has no option {', '.join(unknown)}",
                                hint=f"its options: {allowed}")
        self.opts = {k: spec.parse(k, options[k]) if k in options else spec.default
                     for k, spec in self.options.items()}

    @abstractmethod
    def ask(self) -> Config | None:
        """The next configuration to evaluate, or None when the strategy is done."""

    def budget(self, left: int | None, total: int | None) -> None:
        """Before each ``ask``: measured evaluations the tuner may still spend (``left``, with the ones
        already asked for and not yet measured taken off) out of ``total``; both None when the run has
        no evaluation budget (a time limit only). A strategy that can, plans with it (the default
        ignores it)."""

    def exclude(self, param: str, value: Any) -> None:
        """The tuner set ``param=value`` aside (it fails verification): configurations with it are
        answered with that failure from now on. A strategy that can, stops proposing them (the
        default does nothing: such proposals cost an answer, not a measurement)."""

    def learn(self, sources: list[list[tuple[Config, float]]]) -> int:
        """Before the first ``ask``: earlier measurements of this template (one list of (configuration,
        score) per source: another shape, device or run). Returns how many it used (the default: none)."""
        return 0

    def tell(self, config: Config, score: float) -> None:
        """The score of an evaluated configuration (math.inf: failed or pruned)."""
