"""Model-based search through Optuna: TPE and the genetic NSGA-II, driven by
Optuna's ask/tell interface over categorical distributions."""

from __future__ import annotations

import math
from typing import Any

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.tuner.space import Config, Space
from kerntune.tuner.strategies.base import Option, Strategy


def _optuna():
    try:
        import optuna
    except ImportError:
        raise KerntuneError(ErrorCode.BACKEND, "the model-based strategies need Optuna",
                            hint="pip install optuna (or use --strategy exhaustive/random/local)") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


class _OptunaStrategy(Strategy):
    def _sampler(self, optuna: Any) -> Any:
        raise NotImplementedError

    def __init__(self, space: Space, seed: int, **options: Any):
        super().__init__(space, seed, **options)
        optuna = self._optuna = _optuna()
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=optuna.exceptions.ExperimentalWarning)
            self.study = optuna.create_study(direction="minimize", sampler=self._sampler(optuna))
        # Optuna's categorical choices must be hashable primitives; index into the value lists
        self._dists = {name: optuna.distributions.CategoricalDistribution(list(range(len(values))))
                       for name, values in space.params.items()}
        self._pending: dict[str, list[Any]] = {}

    def _config(self, params: dict[str, int]) -> Config:
        return {name: self.space.params[name][params[name]] for name in self.space.params}

    def ask(self) -> Config | None:
        trial = self.study.ask(self._dists)
        config = self._config(trial.params)
        self._pending.setdefault(self.space.key(config), []).append(trial)
        return config

    def tell(self, config: Config, score: float) -> None:
        key = self.space.key(config)
        trials = self._pending.get(key)
        state = self._optuna.trial.TrialState
        if trials:
            trial = trials.pop(0)
            if math.isfinite(score):
                self.study.tell(trial, score)
            else:
                self.study.tell(trial, state=state.FAIL)
            return
        # a result the strategy did not ask for (resume, or a repeated proposal): teach the model anyway
        if math.isfinite(score):
            index = {name: self.space.params[name].index(config[name]) for name in self.space.params}
            self.study.add_trial(self._optuna.trial.create_trial(params=index, distributions=self._dists, value=score))


class TPE(_OptunaStrategy):
    name = "tpe"
    summary = "Optuna's Tree-structured Parzen Estimator (model-based)"
    options = {
        "n_startup_trials": Option(10, "random trials before the model is used", min=0),
        "multivariate": Option(True, "model parameter interactions"),
    }

    def _sampler(self, optuna: Any) -> Any:
        return optuna.samplers.TPESampler(seed=self.seed, n_startup_trials=self.opts["n_startup_trials"],
                                          multivariate=self.opts["multivariate"])


class NSGA2(_OptunaStrategy):
    name = "nsga2"
    summary = "Optuna's NSGA-II genetic algorithm"
    options = {
        "population_size": Option(16, "individuals per generation", min=2),
        "mutation_prob": Option(-1.0, "per-parameter mutation probability (-1: Optuna's default, 1/#params)",
                                min=0.0, max=1.0, also=(-1.0,)),
        "crossover_prob": Option(0.9, "probability of crossover between two parents", min=0.0, max=1.0),
    }

    def _sampler(self, optuna: Any) -> Any:
        mut = self.opts["mutation_prob"]
        return optuna.samplers.NSGAIISampler(seed=self.seed, population_size=self.opts["population_size"],
                                             mutation_prob=None if mut < 0 else mut,
                                             crossover_prob=self.opts["crossover_prob"])
