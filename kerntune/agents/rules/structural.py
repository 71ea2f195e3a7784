"""Structural rules (filled in below): elements per thread for element-wise
kernels, 16-byte vectorized accesses in strided loops, and warp-shuffle
reductions in place of shared-memory trees."""

from __future__ import annotations

from kerntune.agents.rules.base import Applied, Rule, RewriteState


class ElementsPerThread(Rule):
    name = "elements-per-thread"
    summary = "several elements per thread for element-wise kernels"

    def check(self, st: RewriteState) -> str:
        return "not implemented yet"


class Vectorize(Rule):
    name = "vectorize"
    summary = "16-byte vector accesses in block-strided loops"

    def check(self, st: RewriteState) -> str:
        return "not implemented yet"


class ShuffleReduction(Rule):
    name = "shuffle-reduction"
    summary = "warp-shuffle (sub-group) reductions in place of shared-memory trees"

    def check(self, st: RewriteState) -> str:
        return "not implemented yet"

    def apply(self, st: RewriteState) -> Applied:
        raise NotImplementedError
