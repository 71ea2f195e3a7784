"""KernelBench's fast_p: the fraction of kernels that are correct AND faster than
their baseline by more than a factor p (speedup > p). fast_0 is the fraction
correct. Kernels that failed count in the denominator.

Sources: finished optimize runs (one kernel per run: what the run hands back,
``best.<ext>``: the tester-confirmed general configuration with its
geometric-mean speedup, or the original itself, correct with speedup 1.0,
when nothing beat it), pair files from ``kerntune export pairs`` (one kernel
per line, its ``speedup``), or any records with ``correct`` and ``speedup``
(e.g. :class:`~kerntune.scoring.reward.Reward`).

"Faster than p" is kerntune's one decision (:mod:`kerntune.speedup`): when a
kernel's speedup comes with a confidence interval (optimize runs, pairs,
rewards), it counts only when the interval's lower bound is above p; a bare
number counts by itself. fast_0 and fast_1 are therefore never earned by noise.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Optional, Protocol

from pydantic import Field

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.export.runs import Run, Skip, expand, require_usable
from kerntune.results import Record

DEFAULT_PS = (0.0, 1.0, 1.5, 2.0)


class Scored(Protocol):
    correct: bool
    speedup: Optional[float]


class KernelOutcome(Record):
    name: str
    source: str                      # the run directory, or FILE:LINE of a pair
    correct: bool
    speedup: Optional[float] = None
    speedup_lo: Optional[float] = None   # the lower bound of its 95% confidence interval, when it has one
    note: str = ""
    problem: str = ""                # the optimize run it comes from (run id): one kernel counts per problem
    kind: str = ""                   # a pair's kind (general, round, per_shape); "" for a run
    # the kernel the run optimized, on its device: its name, the hash of its source with its launch and
    # compile options (a pair's original_hash), the device's name and id; "" when it cannot be told
    kernel_id: str = Field(default="", exclude=True)


def _beats(o: Scored, p: float) -> bool:
    if not o.correct or o.speedup is None:
        return False
    lo = getattr(o, "speedup_lo", None)
    if lo is None:
        interval = getattr(o, "interval", None)          # a Reward
        lo = interval.lo if interval is not None else None
    return (lo if lo is not None else o.speedup) > p


class FastP(Record):
    p: float
    count: int                       # correct and faster than p (the interval's lower bound, when there is one)
    fraction: float


class FastPReport(Record):
    total: int
    correct: int
    fast_p: list[FastP]
    kernels: list[KernelOutcome] = []
    excluded: list[Skip] = []


def fast_p(outcomes: Iterable[Scored], p: float) -> float:
    """The fraction of ``outcomes`` that are correct with a speedup above ``p`` (0.0 for none)."""
    items = list(outcomes)
    if not items:
        return 0.0
    return sum(1 for o in items if _beats(o, p)) / len(items)


def from_run(run: Run) -> KernelOutcome | Skip:
    if run.unusable:
        return Skip(run_dir=str(run.path), reason=run.unusable)
    name = f"{run.manifest.kernel_name} ({run.manifest.kernel_file})"
    test = run.test
    kid = _run_kernel_id(run)
    if test is not None and test.improved and test.general is not None and test.general.verified:
        g = test.general
        return KernelOutcome(name=name, source=str(run.path), correct=True, speedup=g.geomean_speedup,
                             speedup_lo=g.geomean.lo if g.geomean is not None else None,
                             note=f"round {g.round}: {g.key}", problem=run.run_id, kernel_id=kid)
    return KernelOutcome(name=name, source=str(run.path), correct=True, speedup=1.0,
                         note="no verified improvement: the original is handed back", problem=run.run_id,
                         kernel_id=kid)


def _kernel_id(kernel: Any, original_hash: Any, device: Any) -> str:
    if not kernel or not original_hash or not isinstance(device, dict):
        return ""
    return json.dumps([str(kernel), str(original_hash), str(device.get("name")), str(device.get("id"))])


def _run_kernel_id(run: Run) -> str:
    from kerntune.export.pairs import kernel_identity

    try:
        oh = kernel_identity(run.original_source, run.original_launch(), run.original_options())
    except KerntuneError:       # a run whose original or spec cannot be read: its kernel cannot be told
        return ""
    return _kernel_id(run.manifest.kernel_name, oh, run.device)


def from_pairs(path: Path) -> list[KernelOutcome]:
    out = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise KerntuneError(ErrorCode.FILE, f"cannot read {path}: {e}") from None
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            d: Any = json.loads(line)
        except json.JSONDecodeError as e:
            raise KerntuneError(ErrorCode.FILE, f"{path}:{i}: not a JSON object: {e}",
                                hint="pass pair files written by `kerntune export pairs`") from None
        if not isinstance(d, dict) or "speedup" not in d or "verification" not in d:
            raise KerntuneError(ErrorCode.FILE, f"{path}:{i}: not a kerntune pair (no speedup/verification)",
                                hint="pass pair files written by `kerntune export pairs`")
        label = f" for {d['specialized_for']}" if d.get("specialized_for") else ""
        changed = _changed(d)
        out.append(KernelOutcome(name=f"{d.get('kernel', '?')} {d.get('kind', '')}{label}".strip(),
                                 source=f"{path}:{i}",
                                 correct=not changed and bool((d.get("verification") or {}).get("verified")),
                                 speedup=d.get("speedup"),
                                 speedup_lo=(d.get("speedup_interval") or {}).get("lo"), note=changed,
                                 problem=str(d.get("run_id") or f"{path}:{i}"), kind=str(d.get("kind") or ""),
                                 kernel_id=_kernel_id(d.get("kernel"), d.get("original_hash"), d.get("device"))))
    return out


def _changed(d: dict) -> str:
    """Why a pair is not the one `kerntune export pairs` wrote ("" when it is): a kernel whose source,
    launch or options no longer hash to the pair's hashes was changed after the export, and its
    verification and speedup are not about it (a pair edited to the original's source counted as
    correct and 50x faster)."""
    from kerntune.export.pairs import kernel_identity

    try:
        for side in ("original", "optimized"):
            if kernel_identity(d[f"{side}_source"], d[f"{side}_launch"], d[f"{side}_compile_options"]) \
                    != d[f"{side}_hash"]:
                return f"not counted: its {side} kernel was changed after the export (the hash does not match)"
    except (KeyError, TypeError):
        return "not counted: a pair without its sources, launches and hashes cannot be checked"
    return ""


def one_per_problem(kernels: list[KernelOutcome]) -> tuple[list[KernelOutcome], list[Skip]]:
    """fast_p counts each problem once, by the kernel the tool hands back: a run named as a folder and
    also in a pair file, or several pairs of one run (its general kernel, each round's best, each
    shape's), are one problem. Its kernel: the run's own answer where the run folder was given, else its
    general pair, else its first pair. The others are listed as left out."""
    rank = lambda k: 0 if not k.kind else 1 if k.kind == "general" else 2   # noqa: E731
    chosen: dict[str, KernelOutcome] = {}
    for k in kernels:
        if k.problem not in chosen or rank(k) < rank(chosen[k.problem]):
            chosen[k.problem] = k
    kept = [k for k in kernels if chosen[k.problem] is k]
    dropped = [Skip(run_dir=k.source, reason=f"the same problem (run {k.problem}) as {chosen[k.problem].source}: "
                                             "counted once, by the kernel the run hands back")
               for k in kernels if chosen[k.problem] is not k]
    return kept, dropped


def collect(paths: list[Path]) -> tuple[list[KernelOutcome], list[Skip]]:
    """Kernels from run directories (or folders of them) and pair files (.jsonl)."""
    kernels: list[KernelOutcome] = []
    skipped: list[Skip] = []
    given = [p if p.is_file() else [Run(rd) for rd in expand([p], "`kerntune score fast-p` scores")] for p in paths]
    if all(isinstance(g, list) for g in given):      # runs only: refused as `show` refuses them when none
        require_usable([run for g in given for run in g])      # can be scored
    for g in given:
        if isinstance(g, Path):
            kernels += from_pairs(g)
            continue
        for run in g:
            got = from_run(run)
            (skipped if isinstance(got, Skip) else kernels).append(got)
    kernels, dropped = one_per_problem(kernels)
    one_run_per_kernel(kernels)
    return kernels, skipped + dropped


def one_run_per_kernel(kernels: list[KernelOutcome]) -> None:
    """Two runs of one kernel (the same source, launch and options, on the same device: a kernel optimized
    twice, or a copy of its file optimized beside it) are one problem that fast_p would count twice, and
    which run's answer speaks for it is the user's choice, not kerntune's: refused, naming both."""
    first: dict[str, KernelOutcome] = {}
    for k in kernels:
        if not k.kernel_id:
            continue
        if k.kernel_id in first:
            a = first[k.kernel_id]
            raise KerntuneError(ErrorCode.USAGE, f"{a.source} and {k.source} are two runs of the same kernel "
                                                 f"({k.name.split(' ')[0]}: the same source, launch and compile "
                                                 "options, on the same device): fast_p would count it twice",
                                hint="fast_p counts each kernel once: score one run per kernel (leave one of the "
                                     "two out, or score them in separate calls)")
        first[k.kernel_id] = k


def report(kernels: list[KernelOutcome], skipped: list[Skip], ps: Iterable[float] = DEFAULT_PS) -> FastPReport:
    rows = [FastP(p=p, count=sum(1 for k in kernels if _beats(k, p)),
                  fraction=fast_p(kernels, p)) for p in ps]
    return FastPReport(total=len(kernels), correct=sum(1 for k in kernels if k.correct), fast_p=rows,
                       kernels=kernels, excluded=skipped)
