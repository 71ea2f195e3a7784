"""`kerntune init`: write a spec skeleton from a kernel's signature."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kerntune.cli.output import err, out, print_json, set_json
from kerntune.errors import ErrorCode, KerntuneError


def init(
    kernel_file: Path = typer.Argument(..., help="The kernel source (.cu or .cl)."),
    kernel: Optional[str] = typer.Option(None, "--kernel", "-k", help="Which kernel, when the file defines several."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Where to write the spec (default: KERNEL's stem + .yaml beside it)."),
    inline: bool = typer.Option(False, "--inline", help="Put the spec in a /* kerntune ... */ block at the top of "
                                                        "the kernel file instead of a sidecar file."),
    stdout: bool = typer.Option(False, "--stdout", help="Print the spec instead of writing it."),
    force: bool = typer.Option(False, "--force", "-f", help="Overwrite an existing spec."),
    json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Write a spec skeleton for a kernel, inferred from its signature.

    Argument types, intents (in / out / inout, from how the body uses each
    pointer) and sizes (integer scalars) are filled in; what cannot be
    inferred is marked TODO. Complete it, then run `kerntune check`.
    """
    set_json(json)
    from kerntune.kernelfile import language_of
    from kerntune.source.parse import parse
    from kerntune.spec.load import inline_block, read_text, sidecar_for
    from kerntune.spec.skeleton import skeleton

    lang = language_of(kernel_file)
    source = read_text(kernel_file, "kernel file")
    parsed = parse(source, lang)
    if not parsed.kernels:
        what = "__global__ function" if lang == "cuda" else "__kernel function"
        raise KerntuneError(ErrorCode.USAGE, f"no {what} found in {kernel_file}")
    if kernel is None:
        if len(parsed.kernels) > 1:
            names = ", ".join(k.name for k in parsed.kernels)
            raise KerntuneError(ErrorCode.USAGE, f"{kernel_file} defines several kernels: {names}",
                                hint="choose one with --kernel NAME")
        target = parsed.kernels[0]
    else:
        target = parsed.kernel(kernel)
    text = skeleton(parsed, target, kernel_file.name)
    if stdout:
        if json:
            print_json({"kernel": target.name, "spec": text})
        else:
            out.print(text, end="", markup=False)
        return
    if inline:
        if inline_block(source) is not None and not force:
            raise KerntuneError(ErrorCode.USAGE, f"{kernel_file} already has an inline spec block",
                                hint="edit it, or pass --force to replace it")
        block = inline_block(source)
        body = source
        if block is not None:
            start = source.index("/*")
            body = source[source.index("*/", start) + 2:].lstrip("\n")
        dest = kernel_file
        dest.write_text("/* kerntune\n" + text + "*/\n" + body)
    else:
        dest = output or kernel_file.with_name(kernel_file.name.split(".")[0] + ".yaml")
        existing = dest if dest.exists() else (None if output else sidecar_for(kernel_file))
        if existing is not None and not force:
            raise KerntuneError(ErrorCode.USAGE, f"{existing} already exists", hint="pass --force to overwrite it")
        dest.write_text(text)
    if json:
        print_json({"kernel": target.name, "written": str(dest), "spec": text})
    else:
        todo = text.count("TODO")
        err.print(f"wrote the spec for [bold]{target.name}[/] to {dest}"
                  + (f" ({todo} TODOs to fill in)" if todo else ""))
        err.print(f"next: check the guesses, then `kerntune check {kernel_file}`")


def register(app: typer.Typer) -> None:
    app.command("init")(init)
