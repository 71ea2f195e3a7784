"""One small interface for search strategies: ``ask`` for the next
configuration, ``tell`` its score (lower is better; ``math.inf`` when it
failed or was pruned). Several asks may be outstanding before their tells
(the tuner compiles ahead). Each strategy declares its options; unknown ones
are rejected with the allowed list."""

from __future__ import annotations

import math
import random
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.tuner.space import Config, Space


@dataclass(frozen=True)
class Option:
    """A strategy option: its default (whose type is the option's), what it does, and what values
    it allows. Every value given is checked here, so an option declares its allowed values where it
    is declared: ``choices`` (an enumeration), or a range: ``min``/``max`` (inclusive), ``above``
    (exclusive lower bound), and ``also``, values allowed outside the range (each with a meaning its
    help gives, as mutation_prob=-1). Floats are always finite. A number or text option without any
    of these is a mistake (tests/test_strategies.py checks every registered option)."""

    default: Any
    help: str
    choices: tuple[Any, ...] = ()
    min: float | None = None
    max: float | None = None
    above: float | None = None
    also: tuple[Any, ...] = ()

    def allowed(self) -> str:
        """The values allowed, in words: 'an integer, at least 1', 'a number in (0, 1]', ..."""
        kind = type(self.default)
        if kind is bool:
            return "true or false"
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        noun = "an integer" if kind is int else "a number" if kind is float else f"a {kind.__name__}"
        low = self.above if self.above is not None else self.min
        if low is not None and self.max is not None:
            text = f"{noun} in {'(' if self.above is not None else '['}{low:g}, {self.max:g}]"
        elif low is not None:
            text = f"{noun} above {low:g}" if self.above is not None else f"{noun}, at least {low:g}"
        elif self.max is not None:
            text = f"{noun}, at most {self.max:g}"
        else:
            text = noun
        return text + "".join(f", or {v:g}" if isinstance(v, (int, float)) else f", or {v!r}" for v in self.also)

    def _fits(self, value: Any) -> bool:
        if value in self.also:
            return True
        if self.choices:
            return value in self.choices
        if isinstance(value, float) and not math.isfinite(value):
            return False
        return not ((self.min is not None and value < self.min) or (self.max is not None and value > self.max)
                    or (self.above is not None and value <= self.above))

    def parse(self, name: str, raw: Any) -> Any:
        kind = type(self.default)
        text = str(raw).strip()
        value: Any = None
        if isinstance(raw, kind) and not (kind is int and isinstance(raw, bool)):
            value = raw
        elif kind is bool:
            value = {"1": True, "true": True, "yes": True, "on": True,
                     "0": False, "false": False, "no": False, "off": False}.get(text.lower())
        else:
            try:
                value = kind(text)
            except ValueError:
                pass
        if value is None or (kind is not bool and not self._fits(value)):
            raise KerntuneError(ErrorCode.USAGE, f"strategy option {name}={text!r}: expected {self.allowed()} "
                                                 f"(default {self.default!r})",
                                hint=f"{name}: {self.help}") from None
        return value


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
