"""`kerntune score fast-p|reward`: KernelBench's fast_p over many kernels, KernelCompare's reward of one."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.markup import escape
from rich.text import Text

from kerntune.cli import checks
from kerntune.cli.output import Progress, err, fmt_interval, fmt_x, grid, out, print_json, print_table, set_json
from kerntune.results import settled_summary
from kerntune.speedup import THRESHOLD
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.fmt import shell

app = typer.Typer(help="Scores: KernelBench's fast_p over a set of kernels, and KernelCompare's reward "
                       "(0.4 compiles + 0.4 correct + 0.2 faster) of a candidate kernel.", no_args_is_help=True)


@app.command("fast-p")
def fast_p_cmd(
    sources: List[Path] = typer.Argument(..., help="Optimize run directories (or folders of them), and/or pair files "
                                                   "(.jsonl) from `kerntune export pairs`."),
    p: Optional[List[float]] = typer.Option(None, "--p", help="Speedup threshold; repeatable "
                                                              "(default: 0, 1, 1.5 and 2)."),
    json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """KernelBench's fast_p: the fraction of kernels correct AND faster than their baseline by more than p.

    From a run: the kernel it hands back (the tester-confirmed general
    configuration and its geometric-mean speedup, or the original at 1.0x when
    nothing beat it). From a pair file: each run's general pair (else its first
    pair). Each problem (run) counts once, also when it is given both as a run
    and in a pair file; two runs of the same kernel (a kernel optimized twice,
    or a copy of it) on the same device are refused, since fast_p would count
    it twice. Runs that did not finish are left out and listed."""
    set_json(json)
    from kerntune.scoring.fastp import DEFAULT_PS, collect, report

    ps = list(p) if p else list(DEFAULT_PS)
    bad = [x for x in ps if not 0 <= x < float("inf")]      # nan and inf too: fast_nan would read 0.000
    if bad:
        raise KerntuneError(ErrorCode.USAGE, f"--p must be a finite number, 0 or more, found {bad[0]:g}",
                            hint="p is a speedup factor: 1.0 means faster at all, 1.5 means 1.5x faster")
    kernels, skipped = collect(sources)
    if not kernels:
        raise KerntuneError(ErrorCode.RUN, "no finished run or pair to score",
                            hint="; ".join(f"{s.run_dir}: {s.reason}" for s in skipped[:3]) or None)
    rep = report(kernels, skipped, ps)
    if json:
        print_json(rep)
        return
    # the lower bound is what is compared with p: a 3.08x [1.44, 6.61] kernel is not faster than 1.5x, and a
    # table of 3.08x alone beside "0 of 1 faster than 1.5x" read as a miscount
    rows = [[k.name, Path(k.source).name, Text("yes", style="green") if k.correct else Text("no", style="red"),
             fmt_x(k.speedup), "" if k.speedup_lo is None else fmt_x(k.speedup_lo), k.note] for k in rep.kernels]
    print_table(grid(["kernel", "from", "correct", "speedup", "lower bound", "note"], rows, right=frozenset({3, 4})))
    for row in rep.fast_p:
        out.print(f"fast_{row.p:g} = {row.fraction:.3f}  ({row.count} of {rep.total} kernels correct and faster "
                  f"than {row.p:g}x)")
    if any(k.speedup_lo is not None for k in rep.kernels):
        out.print("a kernel with a lower bound (of its speedup's 95% confidence interval) counts as faster than p "
                  "only when that bound is above p")
    for s in rep.excluded:
        err.print(f"left out {s.run_dir}: {s.reason}", style="dim")


@app.command("reward")
def reward_cmd(
    candidate: Path = typer.Argument(..., help="The candidate kernel (.cu or .cl)."),
    baseline: Path = typer.Option(..., "--baseline", "-b", help="The original kernel the candidate must match and beat."),
    spec: Optional[Path] = typer.Option(None, "--spec", "-s", help="The spec (default: the baseline's inline block or "
                                                                   "sidecar)."),
    device: Optional[str] = typer.Option(None, "--device", "-d",
                                         help="CUDA ordinal, 'cpu', or opencl:P:D (default: GPU 0, else the CPU)."),
    shape_set: Optional[str] = typer.Option(None, "--shape-set", help="A named shape set of the spec."),
    seed: Optional[int] = typer.Option(None, "--seed", min=0, max=checks.SEED_MAX, help="Seed for inputs and fresh shapes (default: fresh)."),
    warmup: int = typer.Option(10, "--warmup", min=0, help="Untimed runs per shape."),
    repeats: int = typer.Option(50, "--repeats", "-r", min=1, help="Timed runs per shape and kernel."),
    min_speedup: float = typer.Option(THRESHOLD, "--min-speedup", min=1.0, callback=checks.finite,
                                      help="What the lower bound of the geomean speedup's 95% confidence interval "
                                           "must reach for the 0.2 'faster' points."),
    timeout: float = typer.Option(60, "--timeout", callback=checks.seconds,
                                  help="Seconds per stage before a hung candidate is killed."),
    memcheck: bool = typer.Option(True, "--memcheck/--no-memcheck",
                                  help="'Correct' also means clean under the memory and race checker."),
    json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """KernelCompare's reward of CANDIDATE: 0.4 compiles + 0.4 correct + 0.2 faster.

    Correct: verified against the baseline kernel on every shape, the held-out
    shapes and two fresh shapes, with fresh inputs from several distributions,
    and clean under the memory and race checker. Faster: both timed interleaved
    run by run on every shape; the 95% confidence interval of the geomean
    speedup must clear --min-speedup.
    The candidate runs in the isolated worker: a crash or hang scores 0 for the
    stages it did not pass. The exit status is 0 whenever a score was computed."""
    set_json(json)
    from kerntune.engine.devices import resolve
    from kerntune.engine.supervisor import DeviceWorker
    from kerntune.kernelfile import load_kernel
    from kerntune.scoring.reward import RewardSettings, score_instances, unloadable
    from kerntune.spec.shapes import spec_shapes

    base = load_kernel(baseline, spec)
    spec_shapes(base.spec, shape_set)
    try:
        cand = load_kernel(candidate, spec or base.loaded.origin)
    except KerntuneError as e:     # a candidate file that is there but holds no kernel of the spec scores 0
        if not candidate.is_file() or e.code not in (ErrorCode.FILE, ErrorCode.SPEC):
            raise
        return _show(unloadable(e.message), json, min_speedup)
    if cand.lang != base.lang:
        raise KerntuneError(ErrorCode.USAGE, f"{candidate} is {cand.lang} and {baseline} is {base.lang}",
                            hint="the candidate must be in the baseline's language")
    settings = RewardSettings(shape_set=shape_set, seed=seed, warmup=warmup, repeats=repeats,
                              min_speedup=min_speedup, timeout_s=timeout, memcheck=memcheck)
    ref, _ = resolve(device, base.lang)
    with DeviceWorker(ref) as worker:
        if json:
            r = score_instances(worker, base.loaded, cand.instance(label=candidate.name),
                                base.instance(label=baseline.name), settings)
        else:
            with Progress() as progress:
                progress.status("scoring")
                r = score_instances(worker, base.loaded, cand.instance(label=candidate.name),
                                    base.instance(label=baseline.name), settings)
    # the command that runs a crashing candidate under the memory checker, as it was scored
    bench = shell("kerntune", "bench", candidate, "--spec", spec or base.loaded.origin,
                  *(["--device", device] if device else []), *(["--shape-set", shape_set] if shape_set else []))
    from kerntune.engine.checker import crash_hint

    _show(r, json, min_speedup, crash_hint(r.status, r.check, cand.lang, bench))


def _show(r, json: bool, min_speedup: float, hint: str | None = None) -> None:
    if json:      # the hint travels as a field: null where there is none
        print_json({**r.model_dump(mode="json"), "hint": hint})
        return
    yes = {True: "[green]yes[/]", False: "[red]no[/]"}
    out.print(f"reward {r.score:.1f}   compiles {yes[r.compiles]} (0.4)   correct {yes[r.correct]} (0.4)   "
              f"faster {yes[r.faster]} (0.2)")
    if r.interval is not None:
        shapes = ", ".join(f"{k} {fmt_interval(v)}" for k, v in r.intervals.items())
        out.print(f"speedup {fmt_interval(r.interval)} geomean, 95% confidence interval (its lower bound must reach "
                  f"{min_speedup:g}x): {shapes}")
    if r.check is not None:
        out.print(f"memory check: {r.check.status.value}" + (f" ({escape(r.check.message)})" if r.check.message else ""))
    if r.message:
        out.print(f"{r.stage}: {r.status.replace('_', ' ')}: {escape(r.message)}")
    if hint:
        out.print(f"hint: {escape(hint)}")
    if r.settled:
        out.print(f"correct with {escape(settled_summary(r.settled))}")
    if r.unchecked:
        out.print(f"[yellow]{escape(r.unchecked)}[/]")
    if r.stage != "load":         # a candidate that did not load ran on no inputs
        out.print(f"inputs seed {r.seed} (--seed {r.seed} reproduces them)", style="dim")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="score")
