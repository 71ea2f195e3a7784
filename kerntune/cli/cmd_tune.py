"""`kerntune tune` and `kerntune show`: the tuning stage from the command line."""

from __future__ import annotations

import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, List, Optional

import typer

from rich.markup import escape

from kerntune.cli import checks, signals
from kerntune.cli.output import Progress, err, fmt_bytes, grid, out, print_json, print_table, set_json
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.fmt import shell


def parse_duration(text: str | None) -> float | None:
    if text is None:
        return None
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if not m:
        raise KerntuneError(ErrorCode.USAGE, f"cannot understand the duration {text!r}",
                            hint="use seconds (600), or a number with s, m or h (90s, 10m, 1h)")
    seconds = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]
    if not 0 < seconds < float("inf"):
        raise KerntuneError(ErrorCode.USAGE, f"the time limit {text!r} "
                                             + ("leaves no time" if seconds <= 0 else "is too long"),
                            hint="a time limit must leave time to measure: use seconds (600), or a number with "
                                 "s, m or h (90s, 10m, 1h); leave the option out for no time limit")
    return seconds


def parse_options(items: list[str] | None) -> dict[str, str]:
    out_: dict[str, str] = {}
    for item in items or []:
        if "=" not in item:
            raise KerntuneError(ErrorCode.USAGE, f"strategy option {item!r} is not KEY=VALUE",
                                hint="-o is --option, a strategy's KEY=VALUE (`kerntune strategies` lists them), "
                                     "not an output: the run's folder is --run-dir")
        k, v = item.split("=", 1)
        out_[k.strip()] = v.strip()
    return out_


def tune(
    template_path: Optional[Path] = typer.Argument(None, help="The kernel template (.cu.j2 or .cl.j2); "
                                                             "omit with --resume."),
    spec: Optional[Path] = typer.Option(None, "--spec", "-s", help="The kernel spec the template implements."),
    baseline: Optional[Path] = typer.Option(None, "--baseline", "-b",
                                            help="The original kernel: the reference for verification and the "
                                                 "baseline for speedups (default: the template's first values)."),
    device: Optional[str] = typer.Option(None, "--device", "-d",
                                         help="CUDA ordinal, 'cpu', opencl:P:D, or replay:RUN_DIR (serve timings "
                                              "from a finished run, no GPU)."),
    strategy: Optional[str] = typer.Option(None, "--strategy", help="surrogate (the default: model-based), "
                                                                     "exhaustive, random, local, tpe or nsga2 "
                                                                     "(`kerntune strategies` lists them)."),
    option: Optional[List[str]] = typer.Option(None, "--option", "-o", help="Strategy option KEY=VALUE; repeatable."),
    prior: Optional[List[Path]] = typer.Option(None, "--prior", help="Start from earlier measurements of this "
                                               "template: a run directory of an earlier tune or optimize (another "
                                               "shape set or device) or a Kernel Tuner cache; repeatable. The "
                                               "search measures what they rank best first and learns how far "
                                               "to trust them (surrogate only)."),
    budget: Optional[int] = typer.Option(None, "--budget", min=1, help="Measured evaluations allowed (pruned and "
                                                                       "duplicate configurations do not count)."),
    time_limit: Optional[str] = typer.Option(None, "--time-limit", help="Wall-time limit: 600, 90s, 10m, 1h."),
    seed: int = typer.Option(0, "--seed", min=0, max=checks.SEED_MAX, help="Seed for the strategy and the verification inputs."),
    shape_set: Optional[str] = typer.Option(None, "--shape-set", help="A named shape set of the spec."),
    run_dir: Optional[Path] = typer.Option(None, "--run-dir", help="Where to keep the run (default: runs/NAME-TIME)."),
    resume: Optional[Path] = typer.Option(None, "--resume", help="Continue an interrupted run; nothing is re-measured."),
    warmup: int = typer.Option(20, "--warmup", min=0, help="Untimed runs per shape."),
    repeats: int = typer.Option(100, "--repeats", "-r", min=1, help="Timed runs per shape (at most, see --precision)."),
    precision: float = typer.Option(0.02, "--precision", min=0.0, max=0.5,
                                    help="While tuning, stop timing a shape once the 95% interval of its median is within "
                                   "+-this fraction of it, or once it lies above 1.05x the best so far on that shape (racing) "
                                   "(at least 20 runs, at most --repeats; 0: always --repeats). "
                                   "The confirmation at the end always times --final-repeats runs."),
    timeout: float = typer.Option(300, "--timeout", callback=checks.seconds,
                                  help="Seconds per evaluation before a hung kernel is killed."),
    reject_spills: bool = typer.Option(False, "--reject-spills", help="Prune configurations that spill registers."),
    compile_workers: Optional[int] = typer.Option(None, "--compile-workers", min=0,
                                                  help="Processes compiling upcoming candidates during measurement "
                                                       "(default 2 on a GPU, 0 on a CPU device, where compiling would "
                                                       "disturb the timings)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="No device: render and compile every feasible CUDA "
                                                          "instance with nvcc/ptxas for --target, report prunings "
                                                          "(CUDA templates; takes no --device, --budget or other "
                                                          "search option)."),
    target: str = typer.Option("h100", "--target", "-t", help="Device profile for --dry-run."),
    arch: Optional[str] = typer.Option(None, "--arch", help="Architecture for --dry-run (default: the profile's)."),
    final_repeats: Optional[int] = typer.Option(None, "--final-repeats", min=6, show_default="100, or the resumed run's",
                                      help="Timed runs per shape when the winners are confirmed against the baseline."),
    top_k: Optional[int] = typer.Option(None, "--top-k", min=1, show_default="3, or the resumed run's",
                              help="The search's N fastest configurations (geomean over the shapes) join each shape's "
                                   "best in the confirmation, which picks the general configuration among them again "
                                   "(1: the search's own pick only)."),
    memcheck: Optional[bool] = typer.Option(None, "--memcheck/--no-memcheck", show_default="on, or the resumed run's",
                                  help="Run each would-be best, and the winners at the end, under the memory and race "
                                       "checker (Oclgrind for OpenCL, compute-sanitizer for CUDA) on small shapes."),
    memcheck_all: bool = typer.Option(False, "--memcheck-all",
                                      help="Run every verified candidate under the checker, not only would-be bests."),
    json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Search a template's parameters on a device, under its resource limits.

    Every candidate is verified against the original kernel (--baseline), or
    the spec's NumPy reference, on every shape plus a held-out one and on
    several input distributions, with fresh inputs, before it is timed; every
    would-be best also runs under the memory and race checker. At the end the
    search's fastest configurations (--top-k) and each shape's best are
    confirmed: verified again and timed interleaved with the baseline, with
    95% confidence intervals; the general configuration and each shape's best
    are picked again on those timings, and best.<ext> and per_shape/ hold
    what was confirmed.
    Every evaluation is written to RUN_DIR/tuning.db as it finishes: interrupt
    at will and continue with --resume RUN_DIR.
    """
    set_json(json)
    if dry_run:
        # a dry run uses no device and measures nothing: an option that only a search reads would be
        # ignored in silence (`--dry-run --device cpu` compiled for the H100 profile and said nothing of it)
        unused = [name for name, value in (("--device", device), ("--resume", resume), ("--run-dir", run_dir),
                                           ("--baseline", baseline), ("--strategy", strategy), ("--option", option),
                                           ("--prior", prior), ("--budget", budget), ("--time-limit", time_limit))
                  if value]
        return _dry_run(template_path, spec, target, arch, shape_set, reject_spills, json, unused)
    from kerntune.agents.tester import confirm_span_s

    confirm_span_s()      # a bad $KERNTUNE_CONFIRM_SECONDS: refused now, not after the search, at the final test
    from kerntune.tuner.run import TuneSettings
    from kerntune.tuner.store import RunStore, discard_empty_run

    limit_s = parse_duration(time_limit)
    if resume is not None:
        store = RunStore.in_dir(resume)
        lock = _hold(resume)
        from kerntune.tuner.run import original_from_store, template_from_store

        template, loaded = template_from_store(store)
        original = original_from_store(store)
        settings = TuneSettings.from_meta(store.get("settings", {}, dict[str, Any]), budget=budget,
                                          time_limit_s=limit_s)
        replayed = store.get("replay_of", None, str)   # a replay resumes on the run it replays
        device = device or (f"replay:{replayed}" if replayed else
                            (store.get("device", None, dict[str, Any]) or {}).get("id"))
        run_path = resume
    else:
        from kerntune.kernelfile import load_kernel
        from kerntune.spec.load import load_file
        from kerntune.tuner.template import check_against_spec, load_template

        original = None
        if template_path is None and spec is None and device is not None and device.startswith("replay:"):
            from kerntune.tuner.run import original_from_store, template_from_store

            source = RunStore.in_dir(Path(device.split(":", 1)[1]), readonly=True)
            template, loaded = template_from_store(source)   # the replayed run's own template and spec
            original = original_from_store(source)
        elif template_path is None or spec is None:
            if template_path is not None and not template_path.exists():
                load_template(template_path)     # says the template is not there, before what else is missing
            raise KerntuneError(ErrorCode.USAGE, "tune needs a TEMPLATE and --spec (or --resume RUN_DIR, or "
                                                 "--device replay:RUN_DIR alone)", hint=_spec_hint(template_path))
        else:
            template = load_template(template_path)
            loaded = load_file(spec)
            check_against_spec(template, loaded.spec)
        if baseline is not None:
            kf = load_kernel(baseline, spec)
            if kf.lang != template.lang:
                raise KerntuneError(ErrorCode.USAGE, f"the baseline {baseline} is {kf.lang}, the template is "
                                                     f"{template.lang}")
            original = kf.instance(label=baseline.name)
        from kerntune.tuner.strategies import DEFAULT_STRATEGY

        settings = TuneSettings(strategy=strategy or DEFAULT_STRATEGY, options=parse_options(option), budget=budget, time_limit_s=limit_s,
                                seed=seed, warmup=warmup, repeats=repeats, precision=precision, timeout_s=timeout,
                                reject_spills=reject_spills, shape_set=shape_set)
        from kerntune.tuner.strategies import make_strategy
        from kerntune.tuner.space import Space

        chosen = make_strategy(settings.strategy, Space.of(template), 0, settings.options)  # validate options up front
        if prior:
            settings = replace(settings, priors=_priors(prior, chosen, Space.of(template), json))
        from kerntune.spec.shapes import spec_shapes

        spec_shapes(loaded.spec, shape_set)  # validate the shape set up front
        run_path = run_dir or Path("runs") / f"{Path(template.origin).name.split('.')[0]}-{time.strftime('%Y%m%d-%H%M%S')}"
        if (run_path / "tuning.db").exists():
            raise KerntuneError(ErrorCode.USAGE, f"{run_path} already holds a run",
                                hint=f"continue it with --resume {shell(run_path)}, or choose another --run-dir")
        from kerntune.record.store import RunDir

        if RunDir.is_run(run_path):
            raise KerntuneError(ErrorCode.USAGE, f"{run_path} already holds a `kerntune optimize` run",
                                hint="choose another --run-dir (a tune run there would make that run unreadable)")
        fresh_dir = not run_path.exists()
        store = RunStore.in_dir(run_path, create=True)
        lock = _hold(run_path)
    if memcheck_all:
        settings = replace(settings, memcheck="all")
    # how the winners are confirmed: a resume kept none of them (a run started with --no-memcheck and
    # --final-repeats 6 was confirmed under the checker with 100 repeats when resumed)
    given = {"final_repeats": final_repeats, "top_k": top_k, "memcheck": memcheck}
    recorded = store.get(CONFIRM_KEY, {}, dict[str, Any]) if resume is not None else {}
    chosen = {k: v if v is not None else recorded.get(k, CONFIRM_DEFAULTS[k]) for k, v in given.items()}
    store.set(CONFIRM_KEY, chosen)
    final_repeats, top_k, memcheck = chosen["final_repeats"], chosen["top_k"], chosen["memcheck"]
    # a resumed run's final test, kept when it was run with these settings (the search clears it)
    from kerntune.tuner.confirm import TEST_KEY

    kept = {"test": store.get(TEST_KEY), "device": _which(store.get("device") or {})} \
        if resume is not None and recorded == chosen else None
    try:
        outcome = _run(template, loaded, store, settings, original, device, compile_workers, run_path, json,
                       final_repeats, memcheck, top_k, kept)
    except KerntuneError:
        if resume is None:     # a new run that failed before measuring anything (a bad device, shapes a
            discard_empty_run(run_path, fresh_dir)   # replay lacks) leaves no empty run behind to trip over
        raise
    if json:
        print_json(outcome)
    del lock      # held until here: the run is written


ENDING_KEY = "ending"      # meta: True from the search's stop until the final test and the kernels are written
CONFIRM_KEY = "confirm_settings"       # meta: --final-repeats, --top-k, --memcheck of the run, kept on resume
CONFIRM_DEFAULTS = {"final_repeats": 100, "top_k": 3, "memcheck": True}


def _hold(run_path: Path):
    """Take the run for this process: a second `tune --resume` of a run still going measured the same
    configurations and died on the database's UNIQUE key (exit 70, "a bug in kerntune"), or both
    finished and the second's kernels and confirmation replaced the ones the first had printed
    (adversarial tour). A round of an optimize run is refused while that run goes on, too."""
    from kerntune.record.store import RunDir

    parent = run_path.parent.parent
    if run_path.parent.name == "rounds" and RunDir.is_run(parent):
        pid = RunDir(parent).holder()
        if pid is not None:
            raise KerntuneError(ErrorCode.USAGE, f"{run_path} is a round of the `kerntune optimize` run in {parent}, "
                                                 f"in progress in another kerntune process"
                                                 + (f" (pid {pid})" if pid else ""),
                                hint="wait for it to finish (then `kerntune show` it)")
    run = RunDir(run_path)
    run.hold()
    return run


def _spec_hint(template_path: Optional[Path]) -> str:
    """Where the spec of a template may be: beside it, or under kernels/ where the template sits under templates/."""
    if template_path is None:
        return ("for example: kerntune tune templates/examples/vector_add.cl.j2 --spec kernels/examples/vector_add.yaml")
    from kerntune.spec.load import sidecar_for

    stem = template_path.name.split(".")[0]
    found = sidecar_for(template_path)
    parts = template_path.parts
    if found is None and "templates" in parts:
        i = len(parts) - 1 - parts[::-1].index("templates")
        mirror = Path(*parts[:i], "kernels", *parts[i + 1:-1])
        found = next((c for c in (mirror / f"{stem}.yaml", mirror / stem / "spec.yaml") if c.is_file()), None)
    if found is not None:
        return f"the spec of this template is probably {found}: add --spec {found}"
    return "--spec names the spec of the kernel the template rewrites; `kerntune init KERNEL` writes one for a kernel"


def _priors(paths: list[Path], strategy, space, json: bool) -> tuple[str, ...]:
    """Check --prior up front (before a run directory is made) and say what it gives."""
    from kerntune.tuner.priors import load_priors, require_learning

    require_learning(strategy.name)
    sources = load_priors(paths, space)
    if not json:
        err.print(f"starting from {sum(map(len, sources))} earlier measurements: " +
                  ", ".join(f"{p} ({len(m)})" for p, m in zip(paths, sources)))
    return tuple(str(p.resolve()) for p in paths)


def _run(template, loaded, store, settings, original, device, compile_workers, run_path, json, final_repeats=100,
         memcheck=True, top_k=3, kept=None):
    from kerntune.tuner.evaluators import LiveEvaluator, ReplayEvaluator
    from kerntune.tuner.run import Tuner
    from kerntune.tuner.store import RunStore
    from kerntune.tuner.kernel_files import write_tuned_kernels
    from kerntune.tuner.summary import summarize

    from kerntune.cli.render_tune import LiveProgress, render_summary

    worker = None
    if device is not None and device.startswith("replay:"):
        source = Path(device.split(":", 1)[1])
        evaluator = ReplayEvaluator(RunStore.in_dir(source, readonly=True))
        store.set("replay_of", str(source.resolve()))
        if evaluator.baseline is not None and store.get("baseline") is None:
            store.set("baseline", evaluator.baseline.model_dump(mode="json"))
    else:
        from kerntune.engine.devices import resolve
        from kerntune.engine.supervisor import DeviceWorker

        ref, info = resolve(device, template.lang)
        from kerntune.spec.signature import require_fits

        require_fits(loaded.spec, info, [settings.shape_set])
        workers = compile_workers if compile_workers is not None else (2 if info.kind == "gpu" else 0)
        settings = replace(settings, lookahead=2 * workers)
        worker = DeviceWorker(ref)
        evaluator = LiveEvaluator(worker, compile_workers=workers)
    from kerntune.engine.checker import MemoryChecker

    checker = MemoryChecker(evaluator.device, enabled=memcheck, timeout_s=settings.timeout_s) if worker else None
    tuner = Tuner(template, loaded, evaluator, store, settings, original, checker=checker)

    def stopped(what: str):
        def then():
            store.set("stop_reason", "interrupted")
            signals.report(what)
        return signals.stopping(then)

    reason = "interrupted"
    try:
        with stopped(f"everything measured so far is in {run_path}; continue with `kerntune tune --resume {shell(run_path)}`"):
            if json:
                reason = tuner.run()
            else:
                err.print(escape(f"run directory: {run_path}  (interrupt with Ctrl-C; continue with --resume "
                                 f"{run_path})"))
                with LiveProgress(f"tuning {Path(template.origin).name} on {evaluator.device.name}") as live:
                    tuner.on_progress = live.update
                    reason = tuner.run()
    finally:
        evaluator.close()
    store.set("stop_reason", reason)
    store.set(ENDING_KEY, True)     # until the final test and the kernels are written (a kill in between)
    summary = summarize(store, str(run_path), reason)      # the one summary of this run
    try:
        with stopped(f"while confirming the winners; continue with `kerntune tune --resume {shell(run_path)}`"):
            if worker is not None:
                test = _kept_test(kept, store, summary, _which(evaluator.device.model_dump(mode="json")), top_k, json)
                if test is None:
                    test = _confirm(worker, template, loaded, store, summary, settings, original, checker,
                                    final_repeats, json, top_k)
                summary = summary.model_copy(update={"test": test})
    finally:
        if worker is not None:
            worker.close()
    written = write_tuned_kernels(Path(run_path), template, loaded.spec, summary, original)
    if worker is not None:    # each crashed configuration's kernel, for the memory checker (not in a replay)
        from kerntune.tuner.crashed import write_crashed

        crashed = write_crashed(Path(run_path), store, template, loaded, evaluator.device.id, settings.shape_set)
        summary = summary.model_copy(update={"crashed": crashed})
    if written:               # what show and report check the files against (record.audit.audit_tune)
        from kerntune.record.audit import TUNE_DIGESTS, digest

        store.set(TUNE_DIGESTS, {rel: digest((Path(run_path) / rel).read_bytes())
                                 for rel in written + ["kernels.json"]})
    store.set(ENDING_KEY, False)
    summary = summary.model_copy(update={"kernels": written})
    if not json:
        render_summary(summary)
        if written:
            out.print(f"kernels (launch and compile options in each file's header): "
                      f"{', '.join(str(Path(run_path) / w) for w in written[:3])}"
                      f"{f' and {len(written) - 3} more (kernels.json lists them)' if len(written) > 3 else ''}")
        out.print(escape(f"details: kerntune show {shell(run_path)}"))
    return summary


def _which(device: dict) -> tuple:
    """A device as a final test depends on it: where it is and what it is."""
    return tuple(device.get(k) for k in ("id", "name", "vendor", "driver"))


def _kept_test(kept, store, summary, device, top_k, json):
    """The final test a resumed run already stored, stored again, when nothing it depends on changed: the
    same picks of the search, the same device, the same --final-repeats, --top-k and --memcheck (a run
    killed after its test, or resumed once finished, ran the whole test again)."""
    from kerntune.tuner.confirm import TEST_KEY, kept_test

    if not kept or kept["device"] != device:
        return None
    test = kept_test(kept["test"], summary, top_k)
    if test is not None:
        store.set(TEST_KEY, test.model_dump(mode="json"))
        if not json:
            err.print("final test: kept from the run's record, not run again (it confirmed what the search "
                      "picks now, on this device, with the same --final-repeats, --top-k and --memcheck)")
    return test


def _confirm(worker, template, loaded, store, summary, settings, original, checker, final_repeats, json, top_k):
    from kerntune.tuner.confirm import confirm

    if json:
        return confirm(worker, template, loaded, store, summary, settings, original, checker, final_repeats,
                       top_k=top_k)
    with Progress() as progress:
        progress.status("confirming the winners")
        return confirm(worker, template, loaded, store, summary, settings, original, checker, final_repeats,
                       on_step=progress.status, top_k=top_k)


def _dry_run(template_path, spec, target, arch, shape_set, reject_spills, json, unused=()):
    from kerntune.hardware import load_profile
    from kerntune.spec.load import load_file
    from kerntune.spec.shapes import verification_shapes
    from kerntune.tuner.dryrun import dry_run
    from kerntune.tuner.template import check_against_spec, load_template

    if template_path is None or spec is None:
        raise KerntuneError(ErrorCode.USAGE, "--dry-run needs a TEMPLATE and --spec")
    template = load_template(template_path)
    if template.lang != "cuda":
        raise KerntuneError(ErrorCode.USAGE, f"--dry-run compiles CUDA templates offline with nvcc; {template_path} "
                                             "is OpenCL, which compiles only on an OpenCL device",
                            hint="leave out --dry-run and tune it on the device with a small budget, e.g. "
                                 f"`kerntune tune {shell(template_path)} --spec {shell(spec) if spec else 'SPEC'} "
                                 "--device cpu --budget 5`")
    if unused:
        raise KerntuneError(ErrorCode.USAGE, f"--dry-run uses no device and measures nothing: {', '.join(unused)} "
                                             "would be ignored",
                            hint="a dry run compiles every feasible CUDA instance offline with nvcc for a "
                                 "device profile (--target, default h100) and counts the prunings; leave out "
                                 f"{', '.join(unused)}, or leave out --dry-run to search on the device")
    loaded = load_file(spec)
    check_against_spec(template, loaded.spec)
    profile = load_profile(target)
    if arch is not None:
        checks.cuda_arch(arch)        # a mistyped --arch is the user's error, not every instance's
    shapes = tuple(verification_shapes(loaded.spec, shape_set))
    if json:
        report = dry_run(template, loaded.spec, profile, arch or profile.arch or "sm_90", shapes,
                         reject_spills=reject_spills)
        print_json(report)
        return
    with Progress() as progress:
        progress.status("compiling")
        report = dry_run(template, loaded.spec, profile, arch or profile.arch or "sm_90", shapes,
                         reject_spills=reject_spills,
                         progress=lambda d, t: progress.count("compiling with nvcc", d, t))
    counts = report.counts()
    out.print(f"[bold]{template_path}[/] for {profile.name} ({report.arch}): {report.space_size} configurations")
    print_table(grid(["", ""], [[k.replace("_", " "), str(counts.get(k, 0))]
                                 for k in ("compiled", "pruned", "duplicate", "compile_error", "render_error")],
                     right=frozenset({1}), show_header=False))
    if report.pruned_by_reason():
        out.print("pruned by reason: " + ", ".join(f"{k} {v}" for k, v in report.pruned_by_reason().items()))
    compiled = [e for e in report.entries if e.status == "compiled" and e.resources]
    if compiled:
        regs = [e.resources.registers or 0 for e in compiled]
        spills = sum(1 for e in compiled if e.resources.spills)
        smem = max(e.resources.static_shared_bytes or 0 for e in compiled)
        out.print(f"registers {min(regs)}..{max(regs)} per thread; up to {fmt_bytes(smem)} static shared memory; "
                  f"{spills} spilling")
    for e in report.entries:
        if e.status in ("compile_error", "render_error"):
            out.print(f"[red]{e.status}[/] {e.key}: {e.message}")
    if counts.get("compile_error") or counts.get("render_error"):
        raise KerntuneError(ErrorCode.COMPILE, "some instances of the template do not compile or render")


def show(
    run_dir: Path = typer.Argument(..., help="A run directory written by `kerntune tune`, or by `kerntune optimize` "
                                             "(its result; each round's search is RUN_DIR/rounds/NN)."),
    json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Per-shape best, the general configuration, failures and prunings by reason.

    Of an optimize run: its result as the run printed it (the final test's
    per-shape table); `kerntune show RUN_DIR/rounds/01` shows round 1's search.
    """
    set_json(json)
    from kerntune.cli.render_tune import render_summary
    from kerntune.record.store import RunDir
    from kerntune.tuner.store import RunStore
    from kerntune.tuner.summary import summarize

    if RunDir.is_run(run_dir):
        _show_optimize(RunDir.open(run_dir), json)
        return
    store = RunStore.in_dir(run_dir, readonly=True)
    summary = summarize(store, str(run_dir))
    if store.get(ENDING_KEY) and summary.stop_reason not in ("", "interrupted"):
        pid = RunDir(run_dir).holder()
        if pid is not None:
            raise KerntuneError(ErrorCode.RUN, f"{run_dir} is a `kerntune tune` run still writing its end (its final "
                                               f"test and kernels), in another kerntune process"
                                               f"{f' (pid {pid})' if pid else ''}", hint="wait for it to finish")
        raise KerntuneError(ErrorCode.RUN, f"{run_dir} is a `kerntune tune` run that stopped after its search but "
                                           "before its end was written (its final test and kernels)",
                            hint=f"finish it with `kerntune tune --resume {shell(run_dir)}` (the search's "
                                 "evaluations are kept)")
    from kerntune.record.audit import TUNE_DIGESTS, audit_tune, untrusted

    # the final test, and the kernel files against their digests
    error = untrusted(str(run_dir), audit_tune(run_dir, summary.test, store.get(TUNE_DIGESTS, None, dict[str, str])))
    if error is not None:
        raise error
    if json:
        print_json(summary)
    else:
        render_summary(summary)


def _show_optimize(run, json: bool) -> None:
    from kerntune.cli.cmd_optimize import render_result
    from kerntune.record.audit import untrusted
    from kerntune.record.ending import unfinished
    from kerntune.reporting.load_optimize import load_optimize

    result = run.results()
    rounds = sorted(p.name for p in (run.path / "rounds").glob("[0-9]*") if (p / "tuning.db").exists())
    summaries = sorted(p.name for p in (run.path / "rounds").glob("[0-9]*") if (p / "summary.json").exists())
    each = f"`kerntune show {shell(run.path / 'rounds' / rounds[0])}`" if rounds else \
        (f"{run.path}/rounds/{summaries[0]}/summary.json (the rounds' databases were left out of this run "
         "folder)" if summaries else "none has a search yet")
    error = unfinished(run, each)
    if error is not None:
        raise error
    error = untrusted(str(run.path), load_optimize(run.path).record_problems)     # audit, and the headline
    if error is not None:
        raise error
    if json:
        print_json(result)
        return
    render_result(result.model_copy(update={"run_dir": str(run.path)}), wrote="files:")   # where it is now
    out.print(f"each round's search: {escape(each)}" + (f" ... rounds/{rounds[-1]}" if len(rounds) > 1 else ""))


def strategies(json: bool = typer.Option(False, "--json", help="Print machine-readable JSON.")) -> None:
    """List the search strategies and their options (set with --option KEY=VALUE)."""
    set_json(json)
    from kerntune.tuner.strategies import DEFAULT_STRATEGY, REGISTRY, strategy_class

    rows = []
    for name in REGISTRY:
        cls = strategy_class(name)
        rows.append({"name": name, "default": name == DEFAULT_STRATEGY, "summary": cls.summary,
                     "options": {k: {"default": o.default, "allowed": o.allowed(), "help": o.help}
                                 for k, o in cls.options.items()}})
    if json:
        print_json(rows)
        return
    for r in rows:
        out.print(f"[bold]{r['name']}[/]{' (the default)' if r['default'] else ''}: {r['summary']}")
        for k, o in r["options"].items():
            out.print(f"    {k} (default {o['default']!r}; {o['allowed']}): {o['help']}")


def register(app: typer.Typer) -> None:
    app.command("tune")(tune)
    app.command("show")(show)
    app.command("strategies")(strategies)
