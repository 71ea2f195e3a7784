"""The default search: Thompson sampling on a Bayesian model of the space.

Why this design (measured in scripts/bench_strategies.py, results under
bench/results/): tuning spaces are small and discrete (tens to a few thousand
feasible configurations), most of a configuration's run time is explained by
each parameter's own value plus pairs of parameters acting together, and a
budget is often a small share of the feasible set. So the model is a Bayesian
linear regression of log(score) on

- one indicator per parameter value (main effects),
- a linear and a quadratic term in the value's rank, for numeric parameters
  (neighbouring values share what is learned),
- one indicator per pair of values of two parameters (interactions), whose
  prior grows with the number of measurements.

The model is fitted to the log scores capped at their ``cap`` quantile (the
75th percentile): a slow outlier (a configuration 10x slower than the rest,
common where one parameter pair falls off a cliff) would otherwise take most
of the fit, and the fine differences among the fast configurations, which
decide the search, would be left to the noise term (an output warping, as
in HEBO and SMAC).

The search begins where the template's author points: the first feasible
configuration in declaration order (a template lists its author's choices
first), then the one-parameter neighbour of the best so far that a posterior
draw predicts fastest, then a configuration far from both (space filling).
On spaces recorded without a timing fault, the author's configuration or one
of its neighbours is often the fastest or close to it (sgemm, rmsnorm); where
it is not (merge_attn_states), two measurements are what the start costs
(docs/search.md, "The default chosen again on clean spaces").

After that, each proposal minimizes one posterior draw of that model over
every untried configuration (Thompson sampling: exploration in proportion to
the model's uncertainty, no acquisition function to tune). Every
``exploit_every``-th proposal is instead the untried configuration the
posterior mean predicts fastest, anywhere in the space (pure exploitation):
where few configurations can run, the best one's one-parameter neighbours
mostly cannot, and the next good configuration differs from it in two or
three parameters at once.

With an evaluation budget, the tuner says before each proposal how much of it is left
(``Strategy.budget``), and the last ``finish`` share (15%, rounded up) goes to the posterior
mean's favourites: exploring pays off only in later measurements, and there are none after the
budget (docs/search.md, "The finish").

It learns the feasible set from the tuner, which checks restrictions and
resources before anything is compiled or launched and tells a pruned
configuration ``inf`` at no cost to the budget (and records why): a
configuration told ``inf`` (pruned or failed) is never proposed again and
never enters the model.

Cost: the model is solved on a geometric schedule (every measurement at
first, then every ~10% more measurements), and one solve yields, at once, all
the posterior draws until the next (sampling by perturbed least squares) and
their predictions for every configuration (one matrix product). Spaces larger
than ``pool`` (20,000) are scored on a fresh random sample plus the neighbourhood of
the best configurations.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kerntune.tuner.space import Config, Space
from kerntune.tuner.strategies.base import Option, Strategy

Row = tuple[int, ...]


def _numeric(values: tuple) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


class Features:
    """The model's features for configurations given as value-index rows:
    ``columns(rows)`` gives, per row, the indices of its indicator features
    and the values of its rank features (which sit in fixed columns)."""

    def __init__(self, cards: list[int], ranks: list[np.ndarray | None], max_pair_width: int):
        self.cards, self.ranks = cards, ranks
        d = len(cards)
        at, self.main_at = 0, []
        for c in cards:
            self.main_at.append(at)
            at += c
        self.main_width = at
        self.numeric = [i for i in range(d) if ranks[i] is not None]
        self.rank_at = at
        at += 2 * len(self.numeric)
        self.pairs, self.pair_at = [], []
        self.pair_start = at
        for i, j in sorted(((i, j) for i in range(d) for j in range(i + 1, d)), key=lambda p: cards[p[0]] * cards[p[1]]):
            if at + cards[i] * cards[j] - self.pair_start > max_pair_width:
                continue
            self.pairs.append((i, j))
            self.pair_at.append(at)
            at += cards[i] * cards[j]
        self.width = at

    def columns(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(indicator column indices: n x (d + pairs), rank feature values: n x 2*numeric)."""
        ind = [rows[:, i] + self.main_at[i] for i in range(len(self.cards))]
        ind += [rows[:, i] * self.cards[j] + rows[:, j] + at for (i, j), at in zip(self.pairs, self.pair_at)]
        ranks = []
        for i in self.numeric:
            x = self.ranks[i][rows[:, i]]
            ranks += [x, x * x - 1.0 / 3.0]
        cols = np.stack(ind, axis=1)
        vals = np.stack(ranks, axis=1) if ranks else np.zeros((len(rows), 0))
        return cols, vals

    def dense(self, rows: np.ndarray) -> np.ndarray:
        cols, vals = self.columns(rows)
        phi = np.zeros((len(rows), self.width))
        np.put_along_axis(phi, cols, 1.0, axis=1)
        phi[:, self.rank_at:self.rank_at + vals.shape[1]] = vals
        return phi

    def predict(self, weights: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Predictions (n x k) of k weight vectors (width x k)."""
        return self.predict_columns(weights, *self.columns(rows))

    def predict_columns(self, weights: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> np.ndarray:
        out = weights[cols].sum(axis=1)
        if vals.shape[1]:
            out += vals @ weights[self.rank_at:self.rank_at + vals.shape[1]]
        return out


class Surrogate(Strategy):
    name = "surrogate"
    plans_with_budget = True
    learns = True
    summary = ("model-based: Thompson sampling on a Bayesian model of log time (per-value, rank and pairwise "
               "terms) with a greedy step on the posterior mean")
    options = {
        "initial": Option(3, "measurements before the model is used (the declared-first and near ones count; "
                             "the rest are space-filling)", min=0),
        "declared_first": Option(1, "measure the first N feasible configurations in declaration order first "
                                    "(a template lists its author's choices first)", min=0),
        "near": Option(1, "then N one-parameter neighbours of the best so far, a posterior draw choosing each",
                       min=0),
        "exploit_every": Option(4, "every Nth proposal is the untried configuration the posterior mean predicts "
                                   "fastest (0: never)", min=0),
        "noise": Option(0.01, "measurement noise variance, as a share of the scores' variance", above=0.0),
        "pairs": Option(300, "most pairwise-interaction features in the model (0: main effects only)", min=0),
        "cap": Option(0.75, "the model fits log scores capped at this quantile of those measured (1: uncapped)",
                      above=0.0, max=1.0),
        "pool": Option(20_000, "spaces up to this size are scored whole; larger ones on a sample of this size",
                       min=1),
        "transfer": Option(0.5, "with earlier measurements of the template (tune --prior): prior variance of the "
                                "weight on what they predict (its prior mean is 1: trust them until the "
                                "measurements here disagree)", above=0.0),
        "finish": Option(0.15, "with an evaluation budget, this share of it (rounded up) ends the search on the "
                               "untried configurations the posterior mean predicts fastest (0: Thompson draws "
                               "to the end)", min=0.0, max=1.0),
    }

    def __init__(self, space: Space, seed: int, **options: Any):
        super().__init__(space, seed, **options)
        self._np = np.random.default_rng(seed)
        self._names = list(space.params)
        self._values = [tuple(v) for v in space.params.values()]
        self._cards = [len(v) for v in self._values]
        self._index = [{v: i for i, v in enumerate(values)} for values in self._values]
        ranks: list[np.ndarray | None] = []
        self._order: list[list[int]] = []       # value indices in numeric order ([] for other parameters)
        for values in self._values:
            if _numeric(values) and len(values) > 2:
                order = [int(k) for k in np.argsort(np.array(values, dtype=float), kind="stable")]
                pos = np.empty(len(values))
                pos[order] = np.linspace(-1.0, 1.0, len(values))
                ranks.append(pos)
                self._order.append(order)
            else:
                ranks.append(None)
                self._order.append([])
        self._f = Features(self._cards, ranks, self.opts["pairs"])
        self._strides = [math.prod(self._cards[i + 1:]) for i in range(len(self._cards))]
        self._whole = space.size <= self.opts["pool"]
        if self._whole:     # every configuration, in declaration order: a row's position is its ravelled index
            self._pool = np.indices(self._cards, dtype=np.int32).reshape(len(self._cards), -1).T.copy()
            self._pool_phi = self._f.dense(self._pool).astype(np.float32)
            self._untried = np.ones(len(self._pool), dtype=bool)
        self._tried: set[Row] = set()          # proposed or told: never proposed again
        self._excluded: list[tuple[int, int]] = []     # (parameter, value) pairs the tuner set aside
        self._measured: set[Row] = set()
        self._rows: list[Row] = []             # measured with a finite score, in order
        self._y: list[float] = []              # their log scores
        self._phi = np.zeros((64, self._f.width))          # their features (grows)
        self._gram = np.zeros((self._f.width, self._f.width))
        self._in_gram = 0                      # measurements added to the Gram matrix so far
        self._mean: np.ndarray | None = None   # posterior mean of the weights
        self._draws: np.ndarray | None = None  # pending posterior draws (weights x draws; sampled pools)
        self._left = 0                         # pending draws
        self._scores: np.ndarray | None = None     # predictions of the pending draws (configurations x draws)
        self._solved_at = 0
        self._proposals = 0
        self._src: np.ndarray | None = None     # weights of the model of earlier measurements (``learn``)
        self._budget_left: int | None = None    # evaluations the budget still allows (None: no budget)
        self._budget_total: int | None = None

    # --- encoding ---------------------------------------------------------------
    def _row(self, config: Config) -> Row | None:
        try:
            return tuple(self._index[i][config[name]] for i, name in enumerate(self._names))
        except (KeyError, TypeError):
            return None

    def _config(self, row: Row) -> Config:
        return {name: self._values[i][k] for i, (name, k) in enumerate(zip(self._names, row))}

    def _at(self, row: Row) -> int:
        return sum(k * s for k, s in zip(row, self._strides))

    def _sample(self, n: int) -> np.ndarray:
        return np.stack([self._np.integers(0, c, size=n, dtype=np.int32) for c in self._cards], axis=1)

    def _mark(self, row: Row) -> None:
        self._tried.add(row)
        if self._whole:
            self._untried[self._at(row)] = False

    def _allowed(self, row: Row) -> bool:
        return row not in self._tried and not any(row[i] == k for i, k in self._excluded)

    def exclude(self, param: str, value: Any) -> None:
        i = self._names.index(param) if param in self._names else -1
        k = self._index[i].get(value) if i >= 0 else None
        if k is None or (i, k) in self._excluded:
            return
        self._excluded.append((i, k))
        if self._whole:
            self._untried[self._pool[:, i] == k] = False

    def _neighbours(self, row: Row) -> list[Row]:
        out = []
        for i, c in enumerate(self._cards):
            order = self._order[i]
            if order:       # the adjacent values in numeric order
                at = order.index(row[i])
                alternatives = [order[j] for j in (at - 1, at + 1) if 0 <= j < c]
            else:
                alternatives = [k for k in range(c) if k != row[i]]
            out += [row[:i] + (k,) + row[i + 1:] for k in alternatives]
        return out

    # --- earlier measurements -------------------------------------------------------
    def learn(self, sources: list[list[tuple[Config, float]]]) -> int:
        """Earlier measurements of this template (other shapes, another device, an earlier run), one list
        per source: a model of each source's log scores (capped and standardized like the scores here,
        fitted with every term) predicts every configuration, and that prediction enters the model as one
        more feature, its weight's prior mean 1 (variance ``transfer``). The search then starts at the
        configuration the prediction likes best, and the weight is learned from the measurements here: a
        source that ranks them wrongly loses its say. Returns how many earlier measurements were used."""
        if self._rows or self._mean is not None:
            raise RuntimeError("learn() comes before the first measurement")
        rows, ys = [], []
        for records in sources:
            got = [(r, math.log(v)) for c, v in records
                   if (r := self._row(c)) is not None and math.isfinite(v) and v > 0]
            if len(got) < 3:
                continue
            rows += [r for r, _ in got]
            ys.append(self._warped(np.array([v for _, v in got])))
        if not rows:
            return 0
        f = self._f
        phi = f.dense(np.array(rows, dtype=np.int32))
        prior = self._prior(grown=1.0)
        s2 = self.opts["noise"]
        self._src = np.linalg.solve(phi.T @ phi + np.diag(s2 / prior), phi.T @ np.concatenate(ys))
        width = f.width + 1
        if self._whole:
            self._pool_phi = np.concatenate([self._pool_phi, self._transferred(self._pool)[:, None]],
                                            axis=1).astype(np.float32)
        self._phi = np.zeros((64, width))
        self._gram = np.zeros((width, width))
        return len(rows)

    def _transferred(self, rows: np.ndarray) -> np.ndarray:
        return self._f.predict(self._src[:, None], rows)[:, 0]

    def _predict(self, weights: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Predictions (n x k) of k weight vectors for configurations not in a scored-whole pool."""
        out = self._f.predict(weights[:self._f.width], rows)
        if self._src is not None:
            out += self._transferred(rows)[:, None] * weights[self._f.width][None, :]
        return out

    def _dense(self, rows: np.ndarray) -> np.ndarray:
        phi = self._f.dense(rows)
        if self._src is not None:
            phi = np.concatenate([phi, self._transferred(rows)[:, None]], axis=1)
        return phi

    # --- the model ----------------------------------------------------------------
    def _prior(self, grown: float | None = None) -> np.ndarray:
        """Prior variance of each weight (scores are standardized); interactions earn theirs with data."""
        f, d = self._f, len(self._cards)
        prior = np.empty(f.width + (self._src is not None))
        prior[:f.main_width] = 1.0 / d
        prior[f.rank_at:f.pair_start] = 0.5 / d
        grow = min(1.0, len(self._rows) / (2.0 * f.main_width)) if grown is None else grown
        prior[f.pair_start:f.width] = max(1e-6, 0.5 * grow / max(1, len(f.pairs)))
        if self._src is not None:
            prior[f.width] = self.opts["transfer"]
        return prior

    def _warped(self, y: np.ndarray) -> np.ndarray:
        """Log scores as the model fits them: capped at the ``cap`` quantile (from three on), standardized."""
        if len(y) > 2 and self.opts["cap"] < 1.0:
            y = np.minimum(y, np.quantile(y, self.opts["cap"]))
        return (y - y.mean()) / (y.std() or 1.0) if len(y) else y

    def _solve(self, k: int) -> None:
        """Posterior mean and k posterior draws, by perturbed least squares,
        w = A^-1 (Phi^T (y + e) / s2 + w0 / v) with e ~ N(0, s2), w0 ~ N(0, v),
        and the draws' predictions for the candidates."""
        n = len(self._rows)
        phi = self._phi[:n]
        new = phi[self._in_gram:]
        self._gram += new.T @ new
        self._in_gram = n
        y = self._warped(np.array(self._y))
        prior, s2 = self._prior(), self.opts["noise"]
        m = np.zeros(len(prior))                # the prior mean: 1 on the earlier measurements' prediction
        if self._src is not None:
            m[self._f.width] = 1.0
        e = self._np.standard_normal((n, k)) * math.sqrt(s2)
        w0 = m[:, None] + self._np.standard_normal((len(prior), k)) * np.sqrt(prior)[:, None]
        rhs = np.concatenate([phi.T @ y[:, None] + s2 * m[:, None] / prior[:, None],
                              phi.T @ (y[:, None] + e) + s2 * w0 / prior[:, None]], axis=1)
        sol = np.linalg.solve(self._gram + np.diag(s2 / prior), rhs)
        self._mean, draws = sol[:, 0], sol[:, 1:]
        if self._whole:
            self._scores = self._pool_phi @ draws.astype(np.float32)
        else:
            self._draws = draws
        self._left = k
        self._solved_at = n

    def _refresh(self) -> None:
        """Solve the model again when the schedule says so (or its draws are used up)."""
        n = len(self._rows)
        if self._mean is None or self._left == 0 or n >= self._solved_at + max(1, self._solved_at // 10):
            self._solve(max(1, n // 10) + 1)     # the draws until the next solve is due, and one spare

    def _draw(self) -> int:
        """A fresh posterior draw (its column)."""
        self._refresh()
        self._left -= 1
        return self._left

    def _thompson(self) -> Row | None:
        """The untried configuration that one posterior draw predicts fastest."""
        col = self._draw()
        if self._whole:
            scores = np.where(self._untried, self._scores[:, col], np.inf)
            rows = self._pool
        else:
            rows = self._candidates()
            scores = self._predict(self._draws[:, col:col + 1], rows)[:, 0]
        return self._best_allowed(rows, scores)

    def _best_allowed(self, rows: np.ndarray, scores: np.ndarray) -> Row | None:
        """The allowed row of lowest finite score (``scores`` is consumed)."""
        while len(scores):
            i = int(np.argmin(scores))
            if not np.isfinite(scores[i]):
                break
            row = tuple(int(x) for x in rows[i])
            if self._allowed(row):
                return row
            scores[i] = np.inf
        return None

    def _candidates(self) -> np.ndarray:
        """For a space too large to score whole: a fresh random sample and the neighbours of the best
        configurations, untried ones only."""
        best = [self._rows[i] for i in np.argsort(self._y, kind="stable")[:8]]
        near = np.array([r for b in best for r in self._neighbours(b)], dtype=np.int32).reshape(-1, len(self._cards))
        rows = np.unique(np.concatenate([self._sample(self.opts["pool"]), near]), axis=0)
        tried = np.array(list(self._tried), dtype=np.int32).reshape(-1, len(self._cards))
        code = np.ravel_multi_index(rows.T, self._cards)
        return rows[~np.isin(code, np.ravel_multi_index(tried.T, self._cards))]

    # --- proposals --------------------------------------------------------------------
    def _space_filling(self) -> Row | None:
        """An untried configuration far (in Hamming distance) from the measured ones."""
        for _ in range(8):
            sample = self._sample(64)
            if self._rows:
                measured = np.array(self._rows, dtype=np.int32)
                dist = (sample[:, None, :] != measured[None, :, :]).sum(axis=2).min(axis=1)
                order = np.argsort(-dist, kind="stable")
            else:
                order = range(len(sample))
            for i in order:
                row = tuple(int(x) for x in sample[i])
                if self._allowed(row):
                    return row
        return None

    def _exploit(self) -> Row | None:
        """The untried configuration the posterior mean predicts fastest (for a space too large to score
        whole: among a fresh sample and the neighbours of the best)."""
        self._refresh()
        if self._whole:
            scores = np.where(self._untried, self._pool_phi @ self._mean.astype(np.float32), np.inf)
            rows = self._pool
        else:
            rows = self._candidates()
            scores = self._predict(self._mean[:, None], rows)[:, 0]
        return self._best_allowed(rows, scores)

    def budget(self, left: int | None, total: int | None) -> None:
        self._budget_left, self._budget_total = left, total

    def _finishing(self) -> bool:
        """In the last ``finish`` share of a known budget: exploit what the model has learned."""
        left, total = self._budget_left, self._budget_total
        if left is None or not total or self.opts["finish"] <= 0 or self._mean is None:
            return False
        return left <= math.ceil(self.opts["finish"] * total)

    def ask(self) -> Config | None:
        self._proposals += 1
        row = self._propose()
        if row is None:
            row = self._anything()
        if row is None:
            return None
        self._mark(row)
        return self._config(row)

    def _propose(self) -> Row | None:
        measured = len(self._rows)
        if self._src is not None:       # earlier measurements replace the start: the model knows where to look
            return self._exploit() if not measured else self._search()
        if measured < self.opts["declared_first"]:
            return self._anything()         # the first untried configuration in declaration order
        if measured < self.opts["declared_first"] + self.opts["near"]:
            row = self._near()
            if row is not None:
                return row
        if measured < max(2, self.opts["initial"]):
            return self._space_filling()
        return self._search()

    def _search(self) -> Row | None:
        every = self.opts["exploit_every"]
        if self._finishing() or every and self._proposals % every == 0 and self._mean is not None:
            row = self._exploit()
            if row is not None:
                return row
        return self._thompson()

    def _near(self) -> Row | None:
        """The untried one-parameter neighbour of the best measured configuration that one posterior
        draw predicts fastest."""
        if not self._rows:
            return None
        best = self._rows[int(np.argmin(self._y))]
        rows = [r for r in self._neighbours(best) if self._allowed(r)]
        if not rows:
            return None
        col = self._draw()
        if self._whole:
            scores = self._scores[[self._at(r) for r in rows], col].astype(float)
        else:
            scores = self._predict(self._draws[:, col:col + 1], np.array(rows, dtype=np.int32))[:, 0]
        return rows[int(np.argmin(scores))]

    def _anything(self) -> Row | None:
        """Nothing left that the model would propose: the first untried configuration."""
        for config in self.space.configs():
            row = self._row(config)
            if row is not None and self._allowed(row):
                return row
        return None

    def tell(self, config: Config, score: float) -> None:
        row = self._row(config)
        if row is None:
            return
        self._mark(row)
        if not (math.isfinite(score) and score > 0) or row in self._measured:
            return
        self._measured.add(row)
        n = len(self._rows)
        if n == len(self._phi):
            self._phi = np.concatenate([self._phi, np.zeros_like(self._phi)])
        if self._whole:
            self._phi[n] = self._pool_phi[self._at(row)]
        else:
            self._phi[n] = self._dense(np.array([row], dtype=np.int32))[0]
        self._rows.append(row)
        self._y.append(math.log(score))
