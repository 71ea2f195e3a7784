"""`kerntune regress`: the CI gate. Verify kernels and compare their timings with a stored baseline."""

from __future__ import annotations

import re
from contextlib import ExitStack
from pathlib import Path
from typing import List, Optional

import typer

from rich.markup import escape
from rich.text import Text

from kerntune.cli import checks
from kerntune.cli.output import Progress, fmt_ms, grid, out, print_json, print_table, set_json
from kerntune.errors import ErrorCode, KerntuneError


def parse_tolerance(text: str) -> float:
    """'5%' or '0.05' -> 0.05: the slowdown allowed, as a fraction (a kernel fails when it is slower than
    1 + tolerance times its baseline). A bare number must be a fraction below 1: '5' could mean 5% or 500%
    (6x as slow), so it is refused rather than guessed; from 100% on, write a percentage."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(%?)\s*", text)
    if not m:
        raise KerntuneError(ErrorCode.USAGE, f"cannot understand the tolerance {text!r}",
                            hint="a percentage (5%) or a fraction below 1 (0.05)")
    number = float(m.group(1))
    if not m.group(2) and number >= 1:
        raise KerntuneError(ErrorCode.USAGE, f"the tolerance {text.strip()} is ambiguous: {number:g}% or "
                                             f"{number * 100:g}%?",
                            hint=f"write {number:g}% (a fraction below 1 also works: {number / 100:g}); a "
                                 f"tolerance of {number * 100:g}% allows a kernel {1 + number:g}x as slow, for "
                                 "noisy machines only, and must be written as a percentage")
    value = number / 100 if m.group(2) else number
    if value >= 10:
        raise KerntuneError(ErrorCode.USAGE, f"a tolerance of {text.strip()} lets everything through",
                            hint="it must be below 1000% (a kernel 11x as slow); typical values are 3% to 20% on "
                                 "a GPU, 50% to 100% on a shared CPU (docs/ci.md)")
    return value


def regress(
    paths: List[Path] = typer.Argument(..., help="Kernel files (.cu, .cl) or folders searched for kernels with a spec."),
    baseline: Path = typer.Option(..., "--baseline", "-b", help="The baseline file (JSON), e.g. bench/baseline.json."),
    device: Optional[str] = typer.Option(None, "--device", "-d",
                                         help="CUDA ordinal, 'cpu', or opencl:P:D (default: GPU 0, else the CPU)."),
    tolerance: str = typer.Option("5%", "--tolerance", help="Slowdown allowed before a kernel fails (it fails when "
                                  "slower than 1 + tolerance times its baseline): a percentage (5%; below 1000%, "
                                  "e.g. 100% on a noisy machine) or a fraction below 1 (0.05). A bare 1 or more "
                                  "is refused as ambiguous (5: 5% or 500%?)."),
    alpha: float = typer.Option(0.05, "--alpha", min=0.0001, max=0.5,
                                help="Significance of the rank test that must exclude noise before a slowdown counts."),
    batches: Optional[int] = typer.Option(None, "--batches", min=1,
                                          help="Independent timing batches per shape (default: the baseline's, else 5)."),
    warmup: Optional[int] = typer.Option(None, "--warmup", min=0,
                                         help="Untimed runs before each batch (default: the baseline's, else 20)."),
    repeats: Optional[int] = typer.Option(None, "--repeats", "-r", min=1,
                                          help="Timed runs per batch (default: the baseline's, else 100)."),
    no_flush: bool = typer.Option(False, "--no-flush", help="Do not flush the L2 cache between timed runs."),
    seed: Optional[int] = typer.Option(None, "--seed", min=0, max=checks.SEED_MAX, help="Seed for the random inputs (default: fresh, and printed)."),
    shape_set: Optional[str] = typer.Option(None, "--shape-set", help="A named shape set of the specs "
                                                                      "(default: their `shapes`)."),
    timeout: float = typer.Option(300, "--timeout", callback=checks.seconds,
                                  help="Seconds allowed per verification or timing step."),
    update: bool = typer.Option(False, "--update", help="Record the measurements as the new baseline (atomically); "
                                                        "kernels that fail verification are not recorded."),
    allow_device_change: bool = typer.Option(False, "--allow-device-change",
                                             help="Compare with (or, with --update, replace) records made on "
                                                  "another device instead of stopping."),
    memcheck: bool = typer.Option(True, "--memcheck/--no-memcheck",
                                  help="Also run each verified kernel under the memory and race checker (Oclgrind "
                                       "for OpenCL, compute-sanitizer for CUDA) on small shapes."),
    json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Fail when a kernel got wrong or slower than its recorded baseline (the CI gate).

    Every kernel is verified on every shape plus held-out ones with fresh
    inputs (against its spec's NumPy reference; without one, against the
    baseline's recorded source), then timed in independent batches spread over
    the session. A shape counts as slower only when its median is beyond
    --tolerance AND an exact rank test of the batch medians excludes noise at
    --alpha (docs/ci.md). Exit status 1 when a kernel is wrong, broken or
    slower; --update records a new baseline.
    """
    set_json(json)
    from kerntune.regress import baseline as bl
    from kerntune.regress.gate import GateOptions, run_gate

    from kerntune.regress.gate import check_batches, check_settings

    tol = parse_tolerance(tolerance)
    if batches is not None:                      # before anything is loaded, and before any worker starts
        check_batches(batches)
    stored = bl.load(baseline, missing_ok=update)
    if update:                                   # not after every kernel was timed: the work would be lost
        from kerntune.fsutil import check_writable

        check_writable(baseline, "the baseline")
    kernels, skipped = _load(paths, device, baseline)
    if shape_set is not None:
        from kerntune.spec.shapes import spec_shapes

        for kf, _ in kernels:                    # an unknown shape set is an error before anything runs
            try:
                spec_shapes(kf.spec, shape_set)
            except KerntuneError as e:
                raise KerntuneError(e.code, f"{kf.path}: {e.message}", hint=e.hint) from None
    opts = GateOptions(tolerance=tol, alpha=alpha, warmup=warmup, repeats=repeats, batches=batches,
                       flush_l2=not no_flush, seed=seed, timeout_s=timeout, shape_set=shape_set, update=update,
                       allow_device_change=allow_device_change, memcheck=memcheck)
    check_settings([kf for kf, _ in kernels], baseline, stored, opts)   # a baseline record's batches too
    from kerntune.engine.supervisor import DeviceWorker

    with ExitStack() as stack:
        workers: dict[str, DeviceWorker] = {}
        pairs = []
        for kf, ref in kernels:
            if ref.id not in workers:
                workers[ref.id] = stack.enter_context(DeviceWorker(ref))
            pairs.append((kf, workers[ref.id]))
        if json:
            report, new = run_gate(pairs, baseline, stored, opts)
        else:
            with Progress() as progress:
                progress.status("starting the worker")
                report, new = run_gate(pairs, baseline, stored, opts, step=progress.status)
    report = report.model_copy(update={"kernels": report.kernels + skipped})
    if report.updated:
        bl.save(baseline, new)
    failure = _failure(report)
    if failure is not None:
        report = report.model_copy(update={"error": {"code": failure.code.value, "message": failure.message,
                                                     "hint": failure.hint}})
    if json:
        print_json(report)
        if failure is not None:
            raise SystemExit(failure.exit_status)
        return
    _render(report, opts)
    if failure is not None:
        raise failure


def _load(paths: list[Path], device: str | None, baseline: Path):
    """The kernels to check with their device, and the ones found in folders that cannot run on it."""
    from kerntune.engine.devices import resolve
    from kerntune.kernelfile import load_kernel
    from kerntune.regress.baseline import key_for
    from kerntune.regress.discover import find_kernels
    from kerntune.regress.gate import skipped as skip

    found = find_kernels(paths)
    loaded, broken = [], []
    for f in found:          # every kernel that cannot be loaded is named, not only the first
        try:
            loaded.append((f, load_kernel(f.path)))
        except KerntuneError as e:
            broken.append((f.path, e))
    if len(broken) == 1:
        raise broken[0][1]
    if broken:
        raise KerntuneError(broken[0][1].code, f"{len(broken)} kernels cannot be loaded:\n  " + "\n  ".join(
            f"{path}: {e.message}" for path, e in broken), hint=broken[0][1].hint)
    refs: dict[str, object] = {}
    errors: dict[str, KerntuneError] = {}
    for lang in sorted({kf.lang for _, kf in loaded}):
        try:
            refs[lang] = resolve(device, lang)[0]
        except KerntuneError as e:
            if e.code is not ErrorCode.DEVICE:
                raise
            errors[lang] = e
    if not refs:
        raise next(iter(errors.values()))
    kernels, skipped = [], []
    for f, kf in loaded:
        if kf.lang in refs:
            kernels.append((kf, refs[kf.lang]))
        elif f.explicit:
            raise errors[kf.lang]
        else:
            skipped.append(skip(f.path, key_for(f.path, baseline), kf.lang, f"not run: {errors[kf.lang].message}"))
    return kernels, skipped


def _failure(report) -> KerntuneError | None:
    bad = [k for k in report.kernels if k.failed]
    if not bad:
        return None
    counts: dict[str, int] = {}
    for k in bad:
        counts[k.status] = counts.get(k.status, 0) + 1
    what = ", ".join(f"{n} {s}" for s, n in counts.items())
    names = ", ".join(k.path for k in bad[:5]) + (" ..." if len(bad) > 5 else "")
    hint = ("if the slowdown is intended, record a new baseline with --update (and commit it)" if "slower" in counts
            else "run with the baseline's shape set, or record these shapes with --update" if "unmatched" in counts
            else "fix the kernel; `kerntune bench KERNEL` shows the verification in detail")
    return KerntuneError(ErrorCode.REGRESSION, f"regression: {what} ({names})", hint=hint)


_STYLE = {"pass": "green", "new": "cyan", "updated": "cyan", "slower": "bold red", "wrong": "bold red",
          "unmatched": "bold red",
          "failed": "bold red", "skipped": "yellow", "same": "green", "faster": "green", "unsure": "yellow"}


def _timing(s) -> str:
    return "-" if s is None else f"{fmt_ms(s.median_ms)} ±{fmt_ms(s.iqr_ms / 2)}"


def _render(report, opts) -> None:
    from kerntune.regress.gate import change

    ks = [k for k in report.kernels if k.status != "skipped"]
    first = next((k for k in ks if k.settings is not None), None)
    head = f"baseline {report.baseline}   tolerance {report.tolerance * 100:g}%   alpha {report.alpha:g}"
    if first is not None:
        s = first.settings
        head += (f"\ndevice {first.device}   {s.batches} batches x {s.repeats} runs (warm-up {s.warmup}) per shape"
                 f"   inputs seed {first.seed} (--seed {first.seed} reproduces them)")
    out.print(escape(head))
    rows: list[list] = []
    for k in ks:
        style = _STYLE.get(k.status, "")
        if not k.shapes:
            rows.append([k.path, "-", "-", "-", "-", "-", Text(k.status.upper(), style=style)])
            continue
        for i, row in enumerate(k.shapes):
            moved = "-" if row.ratio is None else change(row.ratio)
            if row.interval is not None and row.interval.lo > 0:
                t_iv = row.interval.inverted()        # current time / baseline time
                hi = "inf" if t_iv.hi == float("inf") else change(t_iv.hi)
                moved += f" [{change(t_iv.lo)}, {hi}]"
            p = "-" if row.p_value is None or row.verdict == "same" else f"{row.p_value:.3f}"
            verdict = "SLOWER" if row.verdict == "slower" else row.verdict
            rows.append([k.path if i == 0 else "", row.label, _timing(row.baseline), _timing(row.current), moved, p,
                         Text(verdict, style=_STYLE.get(row.verdict, ""))])
    print_table(grid(["kernel", "shape", "baseline", "now", "change [CI]", "p", "verdict"], rows,
                     right=frozenset({2, 3, 4, 5})))
    for k in ks:
        style = _STYLE.get(k.status, "")
        line = f"[{style}]{k.status.upper():9}[/] {escape(k.path)}"
        if k.reference:
            line += f"  verified against {dict(numpy='the NumPy reference', kernel='the baseline source', self='itself').get(k.reference, k.reference)}"
        if k.message:
            line += f": {escape(k.message)}"
        out.print(line)
        for n in k.notes:
            out.print(f"          note: {escape(n)}", style="dim")
    reasons: dict[str, int] = {}
    for k in report.kernels:
        if k.status == "skipped":
            reasons[k.message] = reasons.get(k.message, 0) + 1
    for why, n in reasons.items():
        out.print(f"[yellow]SKIPPED[/]  {n} kernel{'s' if n > 1 else ''} found in folders: {escape(why)} (--json lists "
                  "them)")
    if report.updated:
        out.print(f"recorded the new baseline in {report.baseline}")
    elif report.passed:
        out.print(f"[green]passed[/]: no kernel wrong or slower beyond {report.tolerance * 100:g}%")


def register(app: typer.Typer) -> None:
    app.command("regress")(regress)
