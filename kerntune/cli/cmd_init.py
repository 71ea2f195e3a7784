"""`kerntune init`: write a spec from what a kernel's code does."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import List, Optional

import typer

from kerntune.cli import checks
from kerntune.cli.output import err, print_json, set_json
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.fmt import shell
from kerntune.fsutil import check_output_file, write_atomic


def init(
    kernel_file: Path = typer.Argument(..., help="The kernel source (.cu or .cl); an extension source with its "
                                                 "PyTorch launcher works as it is."),
    kernel: Optional[str] = typer.Option(None, "--kernel", "-k", help="Which kernel, when the file defines several: "
                                                                      "NAME, ns::NAME or NAME<ARGS>."),
    instantiate: Optional[str] = typer.Option(None, "--instantiate", "-i",
                                              help="Template arguments of a templated kernel, e.g. "
                                                   "'__nv_bfloat16, 128' (default: what the launcher uses)."),
    include_dir: Optional[List[Path]] = typer.Option(None, "--include-dir", "-I",
                                                     help="A folder of local headers (repeatable); written into the "
                                                          "spec's include_dirs."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Where to write the spec (default: KERNEL's stem + .yaml beside it)."),
    inline: bool = typer.Option(False, "--inline", help="Put the spec in a /* kerntune ... */ block at the top of "
                                                        "the kernel file instead of a sidecar file."),
    stdout: bool = typer.Option(False, "--stdout", help="Print the spec instead of writing it."),
    force: bool = typer.Option(False, "--force", "-f", help="Overwrite an existing spec where this one goes (the "
                                                            "sidecar file, or with --inline the inline block); a "
                                                            "spec in the other place is never removed: init "
                                                            "refuses then."),
    json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Write a spec for a kernel, inferred from its code.

    Argument types come from the signature (template arguments substituted).
    Intents come from how the body uses each pointer, followed through casts,
    pointer arithmetic, helper functions and atomics (only written: out;
    written only under a condition on loaded data, or atomically: inout).
    Array shapes are the elements the kernel's index arithmetic reaches, as
    expressions of its integer parameters; divisions by constants become
    `multiple_of` constraints; the launch comes from __launch_bounds__ and the
    bounds the kernel checks its indices against. Default shapes fit in 1 MiB
    and 64 MiB of arrays. What cannot be inferred is marked TODO. For an
    extension source the kernel's device code is extracted first (see
    `kerntune extract`). Complete the spec, then run `kerntune check`.
    """
    set_json(json)
    checks.exclusive({"--inline": inline, "--stdout": stdout, "--output": output is not None},
                     hint="--output names the spec file, --inline puts the spec into the kernel file and "
                          "--stdout prints it: pick one")
    from kerntune.kernelfile import language_of
    from kerntune.source.extract import extract, needs_extraction
    from kerntune.source.includes import INCLUDE, flatten
    from kerntune.source.instantiate import resolve
    from kerntune.source.launcher import choose, launcher_block
    from kerntune.source.parse import parse
    from kerntune.spec.infer import infer
    from kerntune.spec.load import inline_block, read_text, sidecar_for
    from kerntune.spec.signature import local_pointer_fix, local_pointers
    from kerntune.spec.skeleton import skeleton

    lang = language_of(kernel_file)
    source = read_text(kernel_file, "kernel file")
    dirs = list(include_dir or [])
    for d in dirs:
        if not d.is_dir():
            raise KerntuneError(ErrorCode.FILE, f"--include-dir {d} is not a folder")
    extension = lang == "cuda" and needs_extraction(source)
    if extension:
        flat = flatten(kernel_file, source, dirs)
        choice = choose(parse(flat.text, lang), flat.text, kernel, instantiate, str(kernel_file), flat.origin)
        device = extract(kernel_file, source, choice.name, dirs, flat=flat).source
    else:
        if instantiate and lang != "cuda":
            raise KerntuneError(ErrorCode.USAGE, "--instantiate is for templated CUDA kernels")
        choice = choose(parse(source, lang), source, kernel, instantiate, str(kernel_file))
        # an OpenCL file's local headers are part of what is compiled (kernelfile.device_source): a
        # work-group size defined there decides the launch
        device = flatten(kernel_file, source, dirs).text if lang == "opencl" and INCLUDE.search(source) else source
    resolved = resolve(device, lang, choice.name)
    local = local_pointers(resolved.kernel)
    if local:
        raise KerntuneError(ErrorCode.SPEC, f"{choice.name} takes __local pointer parameters ({', '.join(local)}), "
                                            "which a spec cannot give: their size is set by the host at each launch",
                            hint=local_pointer_fix(resolved.kernel))
    launch = launcher_block(choice.kernel.name, source) if lang == "cuda" else None
    inf = infer(device, resolved.kernel, resolved.bindings, lang, launch)
    note = ""
    if choice.instantiation is not None:
        guessed = ", ".join(choice.instantiation.guessed)
        if choice.instantiation.where == "guessed":       # no launch of the kernel anywhere in the file
            note = f"instantiation guessed: the file never launches it; {guessed} chosen"
        else:
            note = f"instantiation from {choice.instantiation.where}"
            if guessed:
                note += f"; {guessed} chosen (the launcher dispatches over types)"
        if choice.others:
            note += f"; also used: {', '.join(choice.others)}"
    if inline and extension:
        raise KerntuneError(ErrorCode.USAGE, "--inline would put the spec into an extension source",
                            hint="write a sidecar spec (the default) or use --output")
    default = kernel_file.with_name(kernel_file.name.split(".")[0] + ".yaml")
    dest = None if stdout else (kernel_file if inline else output or default)
    spec_dir = (dest.parent if dest is not None else kernel_file.parent).resolve()
    rel_dirs = [os.path.relpath(d.resolve(), spec_dir) for d in dirs]
    text = skeleton(inf, choice.name, kernel_file.name, note, rel_dirs)
    if stdout:
        if json:
            print_json({"kernel": choice.name, "spec": text, "todos": inf.todos})
        else:
            typer.echo(text, nl=False)        # raw: no wrapping of long lines
        return
    if inline:
        side = sidecar_for(kernel_file)
        _refuse_beside(side, f"a sidecar spec, {side}", kernel_file,
                       f"overwrite it with `kerntune init {shell(kernel_file)} --force`",
                       f"to put the spec into the kernel file instead, delete {side} first")
        if inline_block(source) is not None and not force:
            raise KerntuneError(ErrorCode.USAGE, f"{kernel_file} already has an inline spec block",
                                hint="edit it, or pass --force to replace it")
        body = source
        if inline_block(source) is not None:
            start = source.index("/*")
            body = source[source.index("*/", start) + 2:].lstrip("\n")
        write_atomic(kernel_file, "/* kerntune\n" + text + "*/\n" + body)
    else:
        check_output_file(dest, "kernel.yaml")
        if dest.resolve() == default.resolve():
            _refuse_beside(inline_block(source), "an inline spec block", kernel_file,
                           f"replace it with `kerntune init {shell(kernel_file)} --inline --force`",
                           "to have a sidecar spec instead, delete the block first")
        existing = dest if dest.exists() else (None if output else sidecar_for(kernel_file))
        if existing is not None and not force:
            raise KerntuneError(ErrorCode.USAGE, f"{existing} already exists",
                                hint=_overwrite_hint(existing, choice.name, kernel_file))
        write_atomic(dest, text, what=f"the spec {dest}")
    if json:
        print_json({"kernel": choice.name, "written": str(dest), "spec": text, "todos": inf.todos})
        return
    err.print(f"wrote the spec for [bold]{choice.name}[/] to {dest}"
              + (f" ({len(inf.todos)} TODO{'s' if len(inf.todos) > 1 else ''} to fill in)" if inf.todos else ""), highlight=False)
    for t in inf.todos:
        err.print(f"  TODO {t}", markup=False)
    for note in inf.notes:       # also in the spec's comments; said here too, since a note can change a dtype
        err.print(f"  note: {note}", markup=False)
    check = f"kerntune check {shell(kernel_file)}" + (f" --spec {shell(dest)}" if output else "")
    err.print(f"next: check the guesses, then `{check}`", markup=False)


def _overwrite_hint(existing: Path, name: str, kernel_file: Path) -> str:
    """--force, unless the existing spec is another kernel's (two kernels in one file share the default
    name): --force would destroy that spec, so the hint names a file of this kernel's own."""
    import yaml

    from kerntune.source.names import KernelNameError, parse_kernel_name

    try:
        other = yaml.safe_load(existing.read_text())["kernel"]
        theirs, ours = parse_kernel_name(other), parse_kernel_name(name)
    except (OSError, yaml.YAMLError, TypeError, KeyError, KernelNameError):
        return "pass --force to overwrite it"
    if theirs.text == ours.text:
        return "pass --force to overwrite it"
    stem = ours.base if theirs.base != ours.base else re.sub(r"\W+", "_", ours.text).strip("_")
    return (f"it is the spec of {theirs.text}: write this kernel's to a file of its own with "
            f"`-o {shell(kernel_file.with_name(stem + '.yaml'))}` (--force would overwrite it)")


def _refuse_beside(other: object, what: str, kernel_file: Path, replace: str, move: str) -> None:
    """Refuse to write a spec where the kernel already has one in the other place (inline block or
    sidecar file), --force or not: every command refuses a kernel with both, and --force replaces the
    spec it writes, never removes one elsewhere."""
    if other is not None:
        raise KerntuneError(ErrorCode.USAGE, f"{kernel_file} already has {what}",
                            hint=f"edit it, or {replace}; {move} (with both, every command "
                                 "refuses the kernel)")


def register(app: typer.Typer) -> None:
    app.command("init")(init)
