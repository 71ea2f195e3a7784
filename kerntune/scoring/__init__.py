"""Scores for kernel-writing models and agents.

* :func:`reward` / :class:`Reward`: KernelCompare's reward of a candidate kernel
  against a baseline (0.4 compiles + 0.4 correct + 0.2 faster), run in kerntune's
  isolated worker, so a crashing candidate scores 0 instead of crashing the trainer.
* :func:`fast_p`: KernelBench's fast_p over a set of kernels.

Example (RL training loop)::

    from kerntune.engine.devices import resolve
    from kerntune.engine.supervisor import DeviceWorker
    from kerntune.scoring import RewardSettings, reward

    ref, _ = resolve("cpu", "opencl")
    with DeviceWorker(ref) as worker:              # one worker for many calls
        r = reward(candidate_text, baseline_text, "kernels/examples/vector_add.yaml",
                   lang="opencl", worker=worker, settings=RewardSettings(repeats=20))
        r.score, r.compiles, r.correct, r.faster, r.speedup
"""

from kerntune.scoring.fastp import FastPReport, KernelOutcome, fast_p
from kerntune.scoring.reward import Reward, RewardSettings, reward, score_instances

__all__ = ["FastPReport", "KernelOutcome", "Reward", "RewardSettings", "fast_p", "reward", "score_instances"]
