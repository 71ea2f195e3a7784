"""`kerntune bench`: verify against the reference on every shape, then time."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from rich.markup import escape

from kerntune.cli import checks
from kerntune.cli.output import (Progress, finish, fmt_bytes, fmt_interval, fmt_ms, fmt_pct, grid, out, print_table,
                                 set_json)
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.hardware import cache_floor
from kerntune.results import EvalResult, Status, settled_summary


def bench(
    kernel_file: Path = typer.Argument(..., help="The kernel source (.cu or .cl)."),
    against: Optional[Path] = typer.Option(None, "--against", "-a",
                                           help="A second implementation of the same spec: verified against "
                                                "KERNEL's outputs and timed beside it, with the speedup."),
    spec: Optional[Path] = typer.Option(None, "--spec", "-s", help="The spec file (default: inline block or sidecar)."),
    device: Optional[str] = typer.Option(None, "--device", "-d",
                                         help="CUDA ordinal, 'cpu', or opencl:P:D (default: GPU 0, else the CPU)."),
    warmup: int = typer.Option(20, "--warmup", min=0, help="Untimed runs before timing each shape."),
    repeats: int = typer.Option(100, "--repeats", "-r", min=1, help="Timed runs per shape (median reported)."),
    no_flush: bool = typer.Option(False, "--no-flush", help="Do not flush the L2 cache between timed runs."),
    seed: Optional[int] = typer.Option(None, "--seed", min=0, max=checks.SEED_MAX, help="Seed for the random inputs (default: fresh, and printed)."),
    shape_set: Optional[str] = typer.Option(None, "--shape-set", help="A named shape set of the spec "
                                                                      "(default: its `shapes`)."),
    shape: Optional[List[str]] = typer.Option(None, "--shape", help="Only these shapes (label or 'n=..,m=..'); "
                                                                    "repeatable. Held-out shapes are always verified."),
    timeout: float = typer.Option(300, "--timeout", callback=checks.seconds,
                                  help="Seconds allowed per verification or timing step; a kernel "
                                       "that hangs longer is killed and reported as a timeout."),
    memcheck: bool = typer.Option(True, "--memcheck/--no-memcheck",
                                  help="Also run each kernel under the memory and race checker (Oclgrind for OpenCL, "
                                       "compute-sanitizer for CUDA) on small shapes."),
    json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Verify a kernel on every spec shape (plus a held-out odd shape), then time it.

    Verification uses fresh seeded random inputs from several distributions
    (the spec's range, shifted, all-negative, large and small magnitudes,
    values that repeat),
    outputs poisoned twice (NaN, then zeros or a random finite value: every
    element must be written), unchanged inputs, and tolerances by dtype; the
    reference is the spec's NumPy function, or with --against, KERNEL's own
    outputs. Each kernel then runs under the memory and race checker.
    Timing uses device events, warm-up, repeats, an L2 flush between runs and
    a device-to-device copy measured in the same session, and checks what
    the timed runs wrote; the table shows median, IQR, achieved GB/s and % of
    that copy. With --against, both are timed interleaved run by run and the
    speedup comes with a 95% confidence interval.
    """
    set_json(json)
    from kerntune.engine.bench import BenchOptions, bench as run_bench
    from kerntune.engine.devices import resolve
    from kerntune.engine.supervisor import DeviceWorker
    from kerntune.kernelfile import load_kernel

    a = load_kernel(kernel_file, spec)
    b = None
    if against is not None:
        b = load_kernel(against, spec or a.loaded.origin if not a.loaded.inline else spec)
        if b.lang != a.lang:
            raise KerntuneError(ErrorCode.USAGE, f"{kernel_file} is {a.lang} and {against} is {b.lang}: "
                                                 "they cannot run side by side on one device")
        if b.loaded.digest != a.loaded.digest:
            raise KerntuneError(ErrorCode.SPEC, f"{kernel_file} and {against} have different specs",
                                hint="two implementations compared side by side must share one spec (use --spec)")
    opts = BenchOptions(warmup=warmup, repeats=repeats, flush_l2=not no_flush, seed=seed, timeout_s=timeout,
                        only=tuple(shape or ()), shape_set=shape_set, memcheck=memcheck)
    from kerntune.engine.bench import select_shapes
    from kerntune.spec.shapes import spec_shapes

    listed = spec_shapes(a.spec, shape_set)
    unknown = [o for o in opts.only if not select_shapes(listed, (o,))]
    if unknown:
        shapes = ", ".join(s.label if s.label == s.key else f"{s.label} ({s.key})" for s in listed)
        raise KerntuneError(ErrorCode.USAGE, f"no spec shape matches --shape {', '.join(unknown)}",
                            hint=f"--shape takes a label or its sizes, as the spec lists them: {shapes}")
    ref, info = resolve(device, a.lang)
    from kerntune.spec.signature import require_fits

    require_fits(a.spec, info, [shape_set])
    with DeviceWorker(ref) as worker, Progress() as progress:
        progress.status("starting the worker")
        report = run_bench(worker, a, b, opts, step=progress.status)
    if not json:
        _render(report, [_launch_line(kf) for kf in (a, b) if kf is not None and kf.header is not None])
    finish(report, _failure(report))      # under --json: one document, with the failure in it


def _crash_hint(status: str, check, lang: str) -> str | None:
    # imported here, not at the top: every command imports this module at start-up, and engine.checker
    # brings the engine with it (-X importtime: 194 ms of the CLI's start under load)
    from kerntune.engine.checker import crash_hint

    return crash_hint(status, check, lang)


def _failure(report) -> KerntuneError | None:
    failed = [r for r in (report.kernel, report.against) if r is not None and r.status is not Status.OK]
    if not failed:
        return None
    f = failed[0]
    return KerntuneError(f.status.error_code, f"{f.kernel}: {f.status.value.replace('_', ' ')}: {f.message}",
                         detail=f.compile_log if f.status is Status.COMPILE_ERROR else None,
                         hint=(_unwritten_hint(f) if f is report.kernel else None) or _crash_hint(f.status.value, f.check, f.device.lang if f.device else ""))


def _unwritten_hint(r: EvalResult) -> str | None:
    """For the kernel under test (the original, in `bench A --against B`) leaving output elements
    unwritten: a spec whose output is larger than what the kernel writes is the usual cause (`init`
    guesses extents from the indexing, and a loop striding by the block size read as padding gave a
    transpose's output 7 rows too many: a user tour)."""
    v = r.verification
    bad = [a.name for s in (v.shapes if v is not None else []) for a in s.args if not a.ok and a.reason == "unwritten"]
    if not bad:
        return None
    return (f"if the kernel never writes those elements, the spec's shape of {bad[0]} is larger than what it "
            f"writes: check `shape:` of {bad[0]} in the spec (`kerntune init` guesses it from the indexing)")


def _verification_line(r: EvalResult) -> str:
    v = r.verification
    if r.status is not Status.OK and v is None:
        return f"[red]{r.status.value}[/]: {escape(r.message)}"
    if v is None:
        return "not verified"
    ref = {"numpy": "the NumPy reference", "kernel": "the reference kernel's outputs",
           "self": "itself (no reference: outputs written, inputs unchanged, results reproducible)"}[v.reference]
    shapes = {s.label.split(" [")[0]: s.holdout for s in v.shapes}
    held = sum(shapes.values())
    n = len(shapes) - held
    where = (f"{n} spec shape{'s' if n != 1 else ''} + {held} held out, {len(v.distributions)} input "
             f"distribution{'s' if len(v.distributions) != 1 else ''} each")
    if v.ok:
        worst = max((a.rel_l2_err for s in v.shapes for a in s.args), default=0.0)
        settled = v.settled()
        note = f"; {escape(settled_summary(settled))}" if settled else ""
        from kerntune.engine.inplace import summary     # here: the CLI's start-up does not load the engine

        in_place = summary(v.shapes)
        note += f"; {escape(in_place)}" if in_place else ""
        if v.unchecked():
            note += f"; [yellow]{escape(v.unchecked())}[/]"
        return f"[green]correct[/] on {where} against {ref} (worst relative L2 error {worst:.1e}){note}"
    return f"[red]WRONG[/] against {ref}: {escape(v.first_failure())}"


def _check_line(c) -> str:
    if c.status.value == "clean":
        note = f"; {escape(c.message)}" if c.message else ""
        return f"[green]clean[/] under {c.tool} on {escape(', '.join(c.shapes))} ({c.seconds:.1f} s){note}"
    if c.status.value == "unchecked":
        return f"[yellow]not checked[/]: {escape(c.message)}"
    return f"[red]{c.status.value.replace('_', ' ')}[/] under {c.tool}: {escape(c.message)}"


def _launch_line(kf) -> str:
    h = kf.header
    options = f", compile options {' '.join(h.compile_options)}" if h.compile_options else ""
    return escape(f"launch  {kf.path.name}: grid {h.grid}, block {h.block}, shared memory {h.shared_mem} B{options} "
                  "(from the kerntune header above the kernel)")


def _render(report, notes: list[str] = ()) -> None:
    d = report.device
    out.print(escape(f"device  {d.id}  {d.name}  ({d.driver})"))
    if report.copy_bandwidth:
        c = report.copy_bandwidth
        out.print(f"copy    {c.gbs:.1f} GB/s device-to-device (read+write, {fmt_bytes(c.bytes_per_copy)}, "
                  f"median of {c.stats.n})")
    out.print(f"inputs  seed {report.seed} (rerun with --seed {report.seed} to reproduce)")
    for note in notes:
        out.print(note)
    for r in (report.kernel, report.against):
        if r is not None:
            out.print(f"verify  {escape(r.kernel)}: {_verification_line(r)}")
            if r.check is not None:
                out.print(f"check   {escape(r.kernel)}: {_check_line(r.check)}")
    if not any(row.kernel or row.against for row in report.rows):
        return
    two = report.against is not None
    names = [report.kernel.kernel] + ([report.against.kernel] if two else [])
    headers = ["shape"]
    for name in names:
        headers += [f"{name}\nmedian", "IQR", "GB/s", "% copy"]
    if two:
        headers.append("speedup [95% CI]")
    rows = []
    for row in report.rows:
        cells = [row.label]
        for timing in ([row.kernel, row.against] if two else [row.kernel]):
            if timing is None:
                cells += ["-", "-", "-", "-"]
            else:
                s = timing.stats
                cells += [fmt_ms(s.median_ms), fmt_ms(s.iqr_ms), f"{timing.achieved_gbs:.1f}", fmt_pct(timing.pct_of_copy)]
        if two:
            cells.append(fmt_interval(row.interval))
        rows.append(cells)
    print_table(grid(headers, rows, right=frozenset(range(1, len(headers)))))
    cached = _beyond_the_copy_from_cache(report)
    if cached:
        out.print(escape(f"note    % copy above 100 on {', '.join(cached)}: each moves less than "
                         f"{fmt_bytes(cache_floor(report.device))} (read+write), which the device's caches can "
                         f"partly hold; the copy was timed moving {fmt_bytes(2 * report.copy_bandwidth.bytes_per_copy)}"
                         " through memory"))
    if two and report.geomean is not None:
        words = {"faster": "[green]faster[/]", "slower": "[red]slower[/]", "same": "the same speed",
                 "unsure": "[yellow]not distinguishable from noise[/]"}
        out.print(f"geometric-mean speedup of {escape(report.against.kernel)} over {escape(report.kernel.kernel)}: "
                  f"[bold]{escape(fmt_interval(report.geomean))}[/] (95% confidence interval): "
                  f"{words.get(report.verdict, report.verdict)}")
        if report.geomean.method.startswith("none: "):
            out.print(escape(f"note    {report.geomean.method[6:]} at 95% (the sign test needs 6): no speedup is "
                             "claimed; time more runs with --repeats 6 or more (the default is 100)"))


def register(app: typer.Typer) -> None:
    app.command("bench")(bench)


def _beyond_the_copy_from_cache(report) -> list[str]:
    """The shapes timed faster than the copy while moving fewer bytes than the caches hold (an honest
    float4 copy of 256 KiB ran at 205% of it): a number that reads as impossible, and is not."""
    floor = cache_floor(report.device)
    return [row.label for row in report.rows
            if any(t is not None and (t.pct_of_copy or 0) > 100 and t.bytes_moved < floor
                   for t in (row.kernel, row.against))]
