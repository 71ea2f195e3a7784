"""The parameter space θ of a template: enumeration, restrictions, neighbours."""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from typing import Iterator

from kerntune.spec import expr
from kerntune.spec.model import Shape
from kerntune.tuner.template import Template, Value, config_key

Config = dict[str, Value]


@dataclass(frozen=True)
class Space:
    params: dict[str, tuple[Value, ...]]
    restrictions: tuple[str, ...] = ()

    @classmethod
    def of(cls, template: Template) -> "Space":
        return cls({k: tuple(v) for k, v in template.decl.params.items()}, tuple(template.decl.restrictions))

    @property
    def names(self) -> list[str]:
        return list(self.params)

    @property
    def size(self) -> int:
        return math.prod(len(v) for v in self.params.values())

    def baseline(self) -> Config:
        return {k: v[0] for k, v in self.params.items()}

    def configs(self) -> Iterator[Config]:
        """Every configuration, the baseline first, in declaration order."""
        for values in itertools.product(*self.params.values()):
            yield dict(zip(self.params, values))

    def key(self, config: Config) -> str:
        return config_key(config)

    def contains(self, config: Config) -> bool:
        return set(config) == set(self.params) and all(config[k] in v for k, v in self.params.items())

    def violated(self, config: Config, shapes: list[Shape] | tuple[Shape, ...],
                 constants: dict[str, int] | None = None) -> str | None:
        """The first restriction this configuration breaks (with the shape), or None.
        ``constants`` are names besides sizes and parameters (the spec's itemsize_<arg>)."""
        constants = constants or {}
        for r in self.restrictions:
            uses_sizes = bool(expr.names(r) - set(self.params) - set(constants))
            for shape in (shapes if uses_sizes else [None]):
                env = {**constants, **config} if shape is None else {**constants, **shape.as_dict(), **config}
                try:
                    ok = expr.evaluate(r, env)
                except expr.ExprError as e:
                    return f"restriction {r!r} cannot be evaluated: {e}"
                if not ok:
                    return f"restriction {r!r} fails" + (f" at {shape.label}" if shape is not None else "")
        return None

    def random_config(self, rng: random.Random) -> Config:
        return {k: rng.choice(v) for k, v in self.params.items()}

    def neighbours(self, config: Config) -> list[Config]:
        """Configurations that differ in one parameter: the adjacent values in
        sorted order for numbers, every other value for strings and booleans."""
        out = []
        for name, values in self.params.items():
            current = config[name]
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                ordered = sorted(values)
                i = ordered.index(current)
                alternatives = [ordered[j] for j in (i - 1, i + 1) if 0 <= j < len(ordered)]
            else:
                alternatives = [v for v in values if v != current]
            for v in alternatives:
                out.append({**config, name: v})
        return out
