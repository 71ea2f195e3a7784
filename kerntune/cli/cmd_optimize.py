"""`kerntune optimize`: from an existing kernel to a verified faster one."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Optional

import typer

from rich.markup import escape

from kerntune.cli import checks, signals
from kerntune.cli.output import (Progress, err, fmt_interval, fmt_ms, fmt_pct, grid, out, print_json, print_table,
                                 set_json)
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.fmt import shell

RESUMABLE = {ErrorCode.LLM, ErrorCode.WORKER, ErrorCode.DEVICE, ErrorCode.BACKEND}


class _View:
    """Progress of a run: on a terminal a live panel (round, phase, the tuner's progress, the best
    tuning estimate so far), erased at the end; elsewhere one line per step."""

    def __init__(self, title: str, rounds: int):
        self.title, self.rounds = title, rounds
        self.round, self.phase, self.best, self.tuning = 0, "starting", 1.0, ""
        self.progress = Progress()

    def __enter__(self):
        self.progress.__enter__()
        self.progress.line(escape(self.title))
        return self

    def __exit__(self, *exc):
        self.progress.__exit__(*exc)

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        step = ""
        if kind == "step":
            self.phase = step = data["text"]
        elif kind == "baseline":
            self.phase = step = "the original kernel is measured"
        elif kind == "round":
            self.round = data["round"]
            self.phase = step = f"round {self.round}/{self.rounds}: " + data["plan"].why
            self.tuning = ""
        elif kind == "prior":
            where = ", ".join(data["sources"])
            step = (f"round {data['round']}: starting from {data['used']} earlier measurements ({where})"
                    if data["used"] else f"round {data['round']}: no earlier run of this template to start from")
            if data.get("why"):
                step += f" ({data['why']})"
        elif kind == "tuning":
            p = data["progress"]
            best = f", best {1 / p.best_score:.3f}x" if p.best_score and p.best_score != float("inf") else ""
            self.tuning = (f"tuning: {p.measured}/{p.budget or '-'} evaluations ({p.ok} valid, {p.failed} failed, "
                           f"{p.pruned} pruned){best}")
            self.phase = f"round {data['round']}: searching"
        elif kind == "round_done":
            s = data["summary"]
            if s.general and s.general.geomean_speedup:
                self.best = max(self.best, s.general.geomean_speedup)
            step = (f"round {data['round']}/{self.rounds} done: {s.measured} evaluations, best "
                    f"{self.best:.3f}x (tuning estimate)")
        elif kind == "testing":
            self.phase = step = f"final test of {data['count']} candidates"
        lines = [escape(self.title),
                 f"round {self.round}/{self.rounds}   best so far {self.best:.3f}x (tuning estimate)",
                 f"[dim]{escape(self.phase)}[/]"] + ([escape(self.tuning)] if self.tuning else [])
        self.progress.show(lines, escape(step))


def optimize(
    kernel_path: Optional[Path] = typer.Argument(None, help="The kernel to make faster (.cu or .cl); omit with --resume."),
    spec: Optional[Path] = typer.Option(None, "--spec", "-s", help="The spec (default: inline block or sidecar)."),
    device: Optional[str] = typer.Option(None, "--device", "-d", help="CUDA ordinal, 'cpu', or opencl:P:D "
                                                                      "(default: GPU 0, else the CPU)."),
    llm: str = typer.Option("rules", "--llm", help="Generator: 'rules' (the built-in catalog, offline), 'openai' "
                                                   "(any OpenAI-compatible endpoint), or replay:RUN_DIR (a recorded "
                                                   "run's LLM conversation, no network)."),
    model: Optional[str] = typer.Option(None, "--model", help="LLM model name (with --llm openai)."),
    llm_base_url: Optional[str] = typer.Option(None, "--llm-base-url", help="OpenAI-compatible endpoint, e.g. "
                                                                            "http://localhost:8000/v1 (vLLM, Ollama)."),
    llm_api_key_env: str = typer.Option("OPENAI_API_KEY", "--llm-api-key-env",
                                        help="Environment variable holding the API key (never written anywhere)."),
    llm_timeout: float = typer.Option(300, "--llm-timeout", min=0.1, callback=checks.seconds,
                                      help="Seconds to wait for one LLM answer "
                                           "before retrying (3 retries at most)."),
    rounds: int = typer.Option(3, "--rounds", min=1, help="Rounds of rewrite and tuning at most."),
    evaluations: int = typer.Option(120, "--evaluations", "-e", min=1, help="Measured evaluations over all rounds."),
    time_limit: Optional[str] = typer.Option(None, "--time-limit", help="Wall-time budget: 600, 90s, 10m, 1h."),
    llm_calls: int = typer.Option(20, "--llm-calls", min=1, help="LLM requests allowed over the run."),
    shape_set: Optional[str] = typer.Option(None, "--shape-set", help="A named shape set of the spec."),
    run_dir: Optional[Path] = typer.Option(None, "--run-dir", help="Where to keep the run (default: runs/NAME-TIME)."),
    resume: Optional[Path] = typer.Option(None, "--resume", help="Continue an interrupted run: every evaluation measured is kept; an interrupted final test starts again."),
    warmup: int = typer.Option(20, "--warmup", min=0, help="Untimed runs per shape."),
    repeats: int = typer.Option(100, "--repeats", "-r", min=1,
                                help="Timed runs per shape while tuning (at most, see --precision)."),
    precision: float = typer.Option(0.02, "--precision", min=0.0, max=0.5,
                                    help="While tuning, stop timing a shape once the 95% interval of its median is within "
                                   "+-this fraction of it, or once it lies above 1.05x the best so far on that shape (racing) "
                                   "(at least 20 runs, at most --repeats; 0: always --repeats). "
                                   "The final test always times --final-repeats runs."),
    final_repeats: int = typer.Option(200, "--final-repeats", min=6,
                                      help="Timed runs per shape in the final test (at least 6: with fewer paired "
                                           "runs no 95% interval is finite, and nothing could be called faster)."),
    timeout: float = typer.Option(300, "--timeout", callback=checks.seconds,
                                  help="Seconds per evaluation before a hung kernel is killed."),
    seed: int = typer.Option(0, "--seed", min=0, max=checks.SEED_MAX, help="Seed for strategies and inputs."),
    memcheck: bool = typer.Option(True, "--memcheck/--no-memcheck",
                                  help="Run each would-be best of a round, and every candidate of the final test, "
                                       "under the memory and race checker (Oclgrind for OpenCL, compute-sanitizer for "
                                       "CUDA) on small shapes."),
    memcheck_all: bool = typer.Option(False, "--memcheck-all",
                                      help="Run every verified candidate under the checker, not only would-be bests."),
    strategy: Optional[str] = typer.Option(None, "--strategy", help="The tuner's search strategy each round "
                                                                    "(default: surrogate, as `kerntune tune`; "
                                                                    "`kerntune strategies` lists them)."),
    prior: Optional[list[Path]] = typer.Option(None, "--prior",
                                               help="Start from earlier measurements: an earlier optimize run "
                                                    "of this kernel (another shape set or device), a tune run or "
                                                    "a Kernel Tuner cache; repeatable. Each round starts from "
                                                    "the earlier rounds whose template declares the same "
                                                    "parameters and values (surrogate only)."),
    json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Rewrite a kernel into parameterized templates and search them, verified against the original.

    Each round the generator (the rule catalog, or an LLM) writes a template
    from the best kernel so far; the tuner searches it on the device; every
    candidate is verified against the original on every shape. At the end
    the tester re-verifies the best candidates on fresh inputs and shapes and
    re-times them beside the original, interleaved run by run. A speedup is
    claimed only when its 95% confidence interval clears +2%. The run
    directory keeps everything: best.<ext>, one kernel per shape, report.md,
    results.json.
    """
    set_json(json)
    from kerntune.agents.tester import confirm_span_s

    confirm_span_s()      # a bad $KERNTUNE_CONFIRM_SECONDS: refused now, not once the worker measured the baseline
    from kerntune.agents.loop import Optimizer
    from kerntune.agents.original import load_original
    from kerntune.cli.cmd_tune import parse_duration
    from kerntune.engine.devices import resolve
    from kerntune.engine.supervisor import DeviceWorker
    from kerntune.kernelfile import load_kernel
    from kerntune.record.models import Budget, LLMSettings, OptimizeSettings
    from kerntune.record.store import RunDir

    if resume is not None:
        if prior:
            raise KerntuneError(ErrorCode.USAGE, "--prior is not for a resumed run",
                                hint="a resumed run goes on with the --prior it was started with")
        if kernel_path is not None:
            raise KerntuneError(ErrorCode.USAGE, "give a KERNEL or --resume RUN_DIR, not both",
                                hint="a resumed run continues with its own copy of the kernel (RUN_DIR/original/)")
        run = RunDir.open(resume)
        run.hold()
        m = run.manifest()
        kf = load_original(run, m)
        settings = m.settings
        device = device or m.device.id
    else:
        if kernel_path is None:
            raise KerntuneError(ErrorCode.USAGE, "optimize needs a KERNEL (or --resume RUN_DIR)")
        kf = load_kernel(kernel_path, spec)
        from kerntune.spec.shapes import spec_shapes

        spec_shapes(kf.spec, shape_set)
        budget = Budget(evaluations=evaluations, time_s=parse_duration(time_limit), llm_calls=llm_calls, rounds=rounds)
        llm_settings = None
        if llm != "rules":   # every LLM setting is checked before the run directory exists
            from kerntune.agents.llm.generator import LLMGenerator

            llm_settings = LLMGenerator.check_settings(LLMSettings(
                provider=llm, model=model, base_url=llm_base_url, api_key_env=llm_api_key_env, timeout_s=llm_timeout))
        if strategy is not None:
            from kerntune.tuner.strategies import strategy_class

            strategy_class(strategy)     # an unknown name is refused before the run directory exists
        priors = _priors(prior or [], strategy, json)
        settings = OptimizeSettings(budget=budget, shape_set=shape_set, seed=seed, strategy=strategy, warmup=warmup, repeats=repeats,
                                    precision=precision, final_repeats=final_repeats, timeout_s=timeout,
                                    memcheck=("all" if memcheck_all else "best") if memcheck else "off",
                                    generator="rules" if llm == "rules" else "llm", llm=llm_settings,
                                    priors=priors)
        from kerntune.spec.signature import require_fits

        from kerntune.engine.userfunc import require_functions

        require_functions(kf.spec, kf.loaded.base_dir)
        ref, info = resolve(device, kf.lang)
        require_fits(kf.spec, info, [shape_set])     # before the run directory exists
        path = run_dir or Path("runs") / f"{kf.stem}-{time.strftime('%Y%m%d-%H%M%S')}"
        there_before = {p.name for p in path.iterdir()} if path.is_dir() else None
        made_from = _first_missing(path)
        run = RunDir.create(path)
        run.hold()
    if resume is not None:
        ref, info = resolve(device, kf.lang)
    new_run = None if resume is not None else (there_before, made_from)   # a new run: what was there before it
    generator = make_generator(settings, run)
    with DeviceWorker(ref) as worker:
        if json:
            opt = Optimizer(kf, settings, run, worker, generator)
            result = _run(opt, run, new_run)
        else:
            err.print(f"run directory: {escape(str(run.path))}  (interrupt with Ctrl-C; continue with --resume "
                      f"{escape(str(run.path))})")
            with _View(f"optimizing {kf.path.name} on {info.name} with the {generator.name} generator",
                       settings.budget.rounds) as view:
                opt = Optimizer(kf, settings, run, worker, generator, on_event=view)
                result = _run(opt, run, new_run)
    if json:
        print_json(result)
    else:
        render_result(result)


def _priors(paths: list[Path], strategy: Optional[str], json: bool) -> list[str]:
    """Check --prior up front (before the run directory exists) and say what it holds."""
    if not paths:
        return []
    from kerntune.tuner.priors import declared, expand, read_prior, require_learning
    from kerntune.tuner.strategies import DEFAULT_STRATEGY

    require_learning(strategy or DEFAULT_STRATEGY)
    runs = [expand(p) for p in paths]
    for p in (q for r in runs for q in r):      # every database and cache readable, before anything runs
        declared(p) if p.is_dir() else read_prior(p)
    if not json:
        err.print("starting from earlier runs: " + ", ".join(
            f"{p} ({len(r)} round{'s' if len(r) != 1 else ''})" if r != [p] else str(p) for p, r in zip(paths, runs)))
    return [str(p.resolve()) for p in paths]


def make_generator(settings, run):
    from kerntune.agents.generator import RuleGenerator

    if settings.generator == "rules":
        return RuleGenerator()
    from kerntune.agents.llm.generator import LLMGenerator

    if settings.llm is None:
        raise KerntuneError(ErrorCode.RUN, f"{run.path}: the run uses an LLM but records no LLM settings")
    return LLMGenerator.from_settings(settings.llm, run)


def _first_missing(path: Path) -> Optional[Path]:
    """The highest folder of ``path`` (itself included) that does not exist yet: what creating it makes."""
    path = path.absolute()
    top = None
    while not path.exists():
        top = path
        if path.parent == path:
            break
        path = path.parent
    return top


def _run(opt, run, new_run):
    """``opt.run()``; ``new_run``: None for a resumed run, else (the folder's entries before the run,
    or None when it did not exist; the first folder the run created). A new run that fails before
    the original kernel is measured is removed (there is nothing in it, and its run.json would refuse
    the next try with the same --run-dir); what was in the folder before stays."""
    try:
        return opt.run()      # run.json says how it ended, whatever happens (an interrupt arrives as one)
    except KeyboardInterrupt:
        signals.report(f"the run is kept in {run.path}; continue it with `kerntune optimize --resume {shell(run.path)}`")
        raise
    except KerntuneError as e:         # an endpoint or a device failed: the run is kept, say how to continue it
        if new_run is not None and run.discard_unmeasured(*new_run):
            e.hint = ((e.hint + "; ") if e.hint else "") + f"nothing was measured, so the run was removed from {run.path}"
            raise
        if e.code in RESUMABLE and "--resume" not in (e.hint or ""):
            e.hint = ((e.hint + "; ") if e.hint else "") + f"the run is kept: continue it with " \
                                                            f"`kerntune optimize --resume {shell(run.path)}`"
        raise


def render_result(r, wrote: str = "wrote") -> None:
    """The result first (the sentence of report.md), then the numbers behind it (``wrote``: how the last
    line names the files, as the run writes them or as `kerntune show` finds them)."""
    out.print(f"[bold]{escape(r.headline)}[/]" if r.headline else f"[bold]{escape(r.kernel)}[/]")
    rows = [[w.label, fmt_ms(w.baseline_ms), fmt_ms(w.best_ms), fmt_interval(w.interval), fmt_pct(w.pct_of_copy),
             w.winner if w.winner == "original" else f"round {w.round}: {w.winner}"] for w in r.per_shape]
    if rows:
        print_table(grid(["shape", "original", "best", "speedup [95% CI]", "% of\ncopy", "winner"], rows,
                         title="Per shape (final test: re-verified, re-timed interleaved with the original)"
                         if r.test is not None and r.test.candidates else
                         "Per shape (the original kernel: no candidate reached a final test)",
                         right=frozenset({1, 2, 3, 4})))
    g = r.test.general if r.test is not None else None
    if r.improved:
        out.print(f"general configuration (round {r.general_round}): {escape(r.general_key)}  "
                  f"{fmt_interval(r.general_interval)} geomean")
    elif g is not None and g.geomean is not None:
        out.print(f"best candidate: round {g.round}: {escape(g.key)}  {fmt_interval(g.geomean)} geomean, which does "
                  f"not clear {r.test.threshold:.2f}x: {r.files.best} is the original kernel")
    for note in r.notes:
        out.print(f"[yellow]note[/]: {escape(note)}")
    if r.llm.calls or r.llm.failed_attempts:
        out.print(f"LLM: {r.llm.calls} calls, {r.llm.prompt_tokens} prompt + {r.llm.completion_tokens} completion "
                  "tokens")
    for rd in r.rounds:
        for v in rd.set_aside:
            out.print(f"[yellow]round {rd.round} set aside[/] {escape(v)}")
    out.print(f"memory checker: {escape(r.checker)}")
    out.print(f"stopped: {escape(r.stop_reason)}")
    out.print(f"{wrote} {escape(r.run_dir)}/{r.files.best}, per_shape/, report.md, results.json")


def register(app: typer.Typer) -> None:
    app.command("optimize")(optimize)
