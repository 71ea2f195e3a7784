"""`kerntune extract`: the device code of one kernel, out of an extension source."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from kerntune.cli import checks
from kerntune.cli.output import err, print_json, set_json
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.results import Record
from kerntune.fmt import shell
from kerntune.fsutil import check_output_file, refuse_existing, write_atomic


class DroppedItem(Record):
    kind: str
    name: str
    origin: str
    why: str


class ExtractReport(Record):
    source_file: str
    kernel: str                       # the name expression a spec's `kernel` should hold
    template: bool
    instantiation_from: Optional[str] = None
    guessed: list[str] = []           # template parameters whose argument was chosen, not read
    other_instantiations: list[str] = []
    written: Optional[str] = None
    inlined: list[str] = []
    includes: list[str] = []
    kept: list[str] = []
    dropped: list[DroppedItem] = []
    compiled: Optional[str] = None    # "sm_90: 32 registers, 0 B spills" when --compile
    source: Optional[str] = None      # with --stdout


def extract(
    kernel_file: Path = typer.Argument(..., help="An extension source (.cu): kernels plus their PyTorch launcher."),
    kernel: Optional[str] = typer.Option(None, "--kernel", "-k",
                                         help="The kernel: NAME, ns::NAME or NAME<ARGS> (default: the only one)."),
    instantiate: Optional[str] = typer.Option(None, "--instantiate", "-i",
                                              help="Template arguments for a templated kernel, e.g. "
                                                   "'__nv_bfloat16, 128' (default: what the launcher uses)."),
    include_dir: Optional[List[Path]] = typer.Option(None, "--include-dir", "-I",
                                                     help="A folder of local headers (repeatable); the file's own "
                                                          "folder and include/ folders above it are searched too."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Where to write the device code (default: KERNEL_NAME.cu in the "
                                               "current folder)."),
    stdout: bool = typer.Option(False, "--stdout", help="Print the device code instead of writing it."),
    compile_check: bool = typer.Option(False, "--compile", help="Also compile the extracted kernel offline with "
                                                                "nvcc for --arch."),
    arch: str = typer.Option("sm_90", "--arch", help="Architecture for --compile."),
    force: bool = typer.Option(False, "--force", "-f", help="Overwrite an existing output file."),
    json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Extract the device code a kernel needs from an extension source.

    Keeps the kernel and what it uses (device functions, types, constants,
    macros; local headers are inlined) and drops host code: the PyTorch
    launcher, torch/ATen/c10/pybind11 includes, op registration. Everything
    dropped is listed. For a templated kernel the instantiation comes from
    --kernel NAME<ARGS>, --instantiate, or the launcher's own launches (the
    template stays a template in the output, so per-dtype specs can share it).
    The result compiles on its own (checked offline with nvcc; --compile) and is what `kerntune init`,
    `check` and `optimize` work on; they also extract implicitly when given
    the extension source itself.
    """
    set_json(json)
    checks.exclusive({"--stdout": stdout, "--output": output is not None},
                     hint="--output names the file to write and --stdout prints the code instead: pick one")
    from kerntune.kernelfile import language_of
    from kerntune.source.extract import extract as run_extract
    from kerntune.source.includes import flatten
    from kerntune.source.launcher import choose
    from kerntune.source.parse import parse
    from kerntune.spec.load import read_text

    if language_of(kernel_file) != "cuda":
        raise KerntuneError(ErrorCode.USAGE, f"{kernel_file} is not CUDA: extraction is for CUDA C++ extension "
                                             "sources (.cu)")
    text = read_text(kernel_file, "kernel file")
    dirs = list(include_dir or [])
    for d in dirs:
        if not d.is_dir():
            raise KerntuneError(ErrorCode.FILE, f"--include-dir {d} is not a folder")
    flat = flatten(kernel_file, text, dirs)
    choice = choose(parse(flat.text, "cuda"), flat.text, kernel, instantiate, str(kernel_file), flat.origin)
    insts = [choice.name, *choice.others] if choice.kernel.is_template else []
    ex = run_extract(kernel_file, text, choice.name, dirs, instantiations=insts, flat=flat)
    report = ExtractReport(
        source_file=str(kernel_file), kernel=choice.name, template=choice.kernel.is_template,
        instantiation_from=choice.instantiation.where if choice.instantiation else None,
        guessed=list(choice.instantiation.guessed) if choice.instantiation else [],
        other_instantiations=list(choice.others), inlined=list(ex.inlined), includes=list(ex.includes),
        kept=list(ex.kept), dropped=[DroppedItem(kind=d.kind, name=d.name, origin=d.origin, why=d.why)
                                     for d in ex.dropped])
    failed: str | None = None           # nvcc's log when the extracted code does not compile
    if compile_check:
        from kerntune.backends.base import CompileFailed
        from kerntune.backends.nvcc import compile_offline

        checks.cuda_arch(arch)
        try:
            res = compile_offline(ex.source, choice.name, arch=arch).resources
        except CompileFailed as e:
            if checks.unsupported_arch(e.log):
                raise checks.arch_error(arch) from None
            failed = e.log
        else:
            report = report.model_copy(update={"compiled": f"{arch}: {res.registers} registers, "
                                                          f"{res.spill_store_bytes or 0} B spill stores"})
    if failed is not None and stdout:
        raise _does_not_compile(choice.name, arch, failed, None)
    if stdout:
        report = report.model_copy(update={"source": ex.source})
        if json:
            print_json(report)
        else:
            typer.echo(ex.source, nl=False)   # raw: no wrapping of long lines
            _summary(report)
        return
    dest = output or Path(choice.kernel.name + ".cu")
    if dest.resolve() == kernel_file.resolve():
        raise KerntuneError(ErrorCode.USAGE, f"refusing to overwrite the source {kernel_file}", hint="pick --output")
    check_output_file(dest, "kernel.cu")
    if dest.suffix.lower() != ".cu":
        # the extension picks the language for every later command: CUDA in a .cl file is read as OpenCL
        raise KerntuneError(ErrorCode.USAGE, f"the device code is CUDA, and {dest.name} would be read as "
                                             f"{'OpenCL' if dest.suffix.lower() == '.cl' else 'another kind of file'}",
                            hint=f"name it {dest.stem}.cu")
    refuse_existing(dest, force)
    write_atomic(dest, ex.source, what=f"the device code {dest}")
    if failed is not None:        # written all the same: the code to fix is there
        raise _does_not_compile(choice.name, arch, failed, dest)
    report = report.model_copy(update={"written": str(dest)})
    if json:
        print_json(report)
        return
    _summary(report)
    err.print(f"wrote the device code of [bold]{choice.name}[/] to {dest}")
    err.print(f"next: `kerntune init {shell(dest)}` (then `kerntune check {shell(dest)}`)")


def _does_not_compile(name: str, arch: str, log: str, dest: Path | None) -> KerntuneError:
    """The extracted code does not compile: nvcc's errors, with their line numbers those of ``dest``
    (the file written, where the code is to be fixed; None under --stdout)."""
    if dest is None:
        return KerntuneError(ErrorCode.COMPILE, f"the extracted {name} does not compile for {arch}", detail=log,
                             hint="a local header may be missing (--include-dir), or the kernel uses what only "
                                  "host code or another CUDA version has")
    return KerntuneError(ErrorCode.COMPILE, f"the extracted {name} does not compile for {arch}; the device code is "
                                            f"written to {dest}, to be fixed there",
                         detail=log.replace("kernel.cu(", f"{dest.name}(").replace('"kernel.cu"', f'"{dest.name}"'),
                         hint=f"the line numbers are {dest.name}'s; a local header may be missing (--include-dir), "
                              "or the kernel uses what only host code or another CUDA version has")


def _summary(r: ExtractReport) -> None:
    if r.template:
        src = r.instantiation_from or ""
        guess = f" (guessed {', '.join(r.guessed)}: pass --instantiate to choose)" if r.guessed else ""
        err.print(f"kernel {r.kernel}, instantiation from {src}{guess}")
        if r.other_instantiations:
            err.print("  the launcher also uses: " + ", ".join(r.other_instantiations))
    if r.inlined:
        err.print("inlined: " + ", ".join(r.inlined))
    if r.dropped:
        err.print(f"dropped {len(r.dropped)}:")
        for d in r.dropped:
            err.print(f"  {d.origin}: {d.kind} {d.name} ({d.why})", markup=False)
    if r.compiled:
        err.print(f"compiled: {r.compiled}")


def register(app: typer.Typer) -> None:
    app.command("extract")(extract)
