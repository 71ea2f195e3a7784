"""A kernel file on disk with its spec: what every command starts from."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kerntune.engine.evaluate import KernelInstance
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.source.extract import Extraction, extract, needs_extraction
from kerntune.source.includes import INCLUDE, flatten
from kerntune.source.instantiate import bind
from kerntune.source.names import parse_kernel_name
from kerntune.source.parse import parse
from kerntune.spec.load import LoadedSpec, load_for_kernel, problems_error, read_text
from kerntune.spec.model import ImplementationLaunch, LaunchSpec, Problem, launch_problems
from kerntune.spec.signature import local_pointer_fix, local_pointers, signature_problems
from kerntune.tuner.kernel_files import read_header

LANG_BY_SUFFIX = {".cu": "cuda", ".cuh": "cuda", ".cl": "opencl"}


def language_of(path: Path) -> str:
    if path.is_dir():             # not "cannot tell the language": the name is not the problem
        raise KerntuneError(ErrorCode.USAGE, f"{path} is a folder, not a kernel file",
                            hint="pass one kernel file: CUDA kernels end in .cu, OpenCL kernels in .cl (templates "
                                 "add .j2); `kerntune regress` is the command that searches folders")
    suffixes = [s for s in path.suffixes if s != ".j2"]
    lang = LANG_BY_SUFFIX.get(suffixes[-1] if suffixes else "")
    if lang is None:
        raise KerntuneError(ErrorCode.USAGE, f"cannot tell the language of {path}",
                            hint="CUDA kernels end in .cu, OpenCL kernels in .cl (templates add .j2)")
    return lang


@dataclass(frozen=True)
class KernelFile:
    path: Path
    lang: str
    source: str                       # what is compiled: the file, or the device code extracted from it
    loaded: LoadedSpec
    extraction: Extraction | None = None   # set when the file is an extension source (torch launcher, local headers)
    header: ImplementationLaunch | None = None   # the launch kerntune's header above the kernel names (best.cu)

    @property
    def spec(self):
        return self.loaded.spec

    @property
    def stem(self) -> str:
        return self.path.name.split(".")[0]

    @property
    def own_launch(self) -> ImplementationLaunch | None:
        """This file's launch where it is not the spec's ``launch``: the spec's ``launches`` entry for
        the file's stem, else the launch in kerntune's header above the kernel (a handed-back best.cl
        copied elsewhere)."""
        return own_launch(self.spec, self.stem, self.header)

    @property
    def kernel_name(self) -> str:
        """This file's entry point: its own launch's ``kernel``, else the spec's."""
        return entry_point(self.spec, self.own_launch)

    def instance(self, label: str | None = None) -> KernelInstance:
        """This file as a kernel to run: the spec's launch and options, or the file's own launch
        (a launch, plus compile options for this file)."""
        impl = self.own_launch
        options = tuple(getattr(self.spec.compile_options, self.lang)) + tuple(impl.compile_options if impl else ())
        launch = LaunchSpec(grid=impl.grid, block=impl.block, shared_mem=impl.shared_mem) if impl else None
        return KernelInstance(source=self.source, name=self.kernel_name, lang=self.lang, options=options,
                              launch=launch, label=label or self.path.name,
                              file=str(self.path) if self.extraction is None else None)


def own_launch(spec, stem: str, header: ImplementationLaunch | None) -> ImplementationLaunch | None:
    """The spec's ``launches`` entry for ``stem`` (what the user wrote wins), else the header's."""
    return spec.launches.get(stem) or header


def entry_point(spec, impl: ImplementationLaunch | None) -> str:
    return impl.kernel if impl is not None and impl.kernel else spec.kernel


def header_launch(path: Path, lang: str, text: str, loaded: LoadedSpec) -> ImplementationLaunch | None:
    """The launch kerntune wrote above a handed-back kernel, checked against the spec's sizes; None
    when the file has no such header. Its compile options are the ones beyond the spec's."""
    try:
        launch = read_header(text)
    except ValueError as e:
        raise KerntuneError(ErrorCode.FILE, f"{path}: kerntune's header above the kernel: {e}",
                            hint="mend the header to kerntune's form: a line '// kerntune: <anything>', then "
                                 "'// launch: grid [..], block [..], dynamic shared memory <bytes> B' and "
                                 "'// compile options: <flags or none>'; or give the file a `launches:` entry "
                                 f"named {path.name.split('.')[0]!r} in the spec") from None
    if launch is None:
        return None
    problems = launch_problems(loaded.spec, ("launch",), launch)
    if problems:
        raise KerntuneError(ErrorCode.SPEC, f"{path}: the launch in kerntune's header names sizes the spec "
                                            f"{loaded.origin} does not have: "
                                            + "; ".join(f"{'.'.join(map(str, p.path[1:]))}: {p.message}"
                                                        for p in problems),
                            hint="the file was written for another spec: pass that one with --spec, or give "
                                 "the file a `launches:` entry in this one")
    base = list(getattr(loaded.spec.compile_options, lang))
    options = launch.compile_options
    if base and options[:len(base)] == base:
        launch = launch.model_copy(update={"compile_options": options[len(base):]})
    return launch


def include_dirs(loaded: LoadedSpec, extra: list[Path] = ()) -> list[Path]:
    """The spec's ``include_dirs`` (relative to the spec) and any given on the command line."""
    dirs = []
    for d in [*(loaded.base_dir / x for x in loaded.spec.include_dirs), *extra]:
        if not d.is_dir():
            raise KerntuneError(ErrorCode.FILE, f"include folder not found: {d}",
                                hint="include_dirs in the spec are relative to the spec file")
        dirs.append(d)
    return dirs


def device_source(path: Path, text: str, lang: str, kernel: str, dirs: list[Path]) -> tuple[str, Extraction | None]:
    """The code to compile for ``kernel``: an extension source's extracted device code; an OpenCL
    file with its local headers inlined (:func:`kerntune.source.includes.flatten`: found beside the
    file or in the spec's include_dirs, whatever the working folder, and part of the text every
    compiled binary is keyed on, so a header edited or another folder's header is never a stale
    binary's); else the file."""
    if lang == "cuda" and needs_extraction(text):
        ex = extract(path, text, kernel, dirs)
        return ex.source, ex
    if lang == "opencl" and INCLUDE.search(text):
        return flatten(path, text, dirs).text, None
    return text, None


def check_signature(kf: "KernelFile") -> None:
    """Refuse a spec whose arguments disagree with the kernel's parameters (exit 2, every problem listed)."""
    spec = kf.spec
    name = kf.kernel_name
    if kf.lang == "opencl" and not parse_kernel_name(name).is_plain:
        raise KerntuneError(ErrorCode.SPEC, f"{kf.loaded.origin}: kernel {name!r} is a C++ name, but "
                                            f"{kf.path.name} is OpenCL C: name the __kernel function")
    parsed = parse(kf.source, kf.lang)
    try:
        k = parsed.find(name)
    except KerntuneError as e:
        # the parser finds kernels, and none is this one: a spec for another kernel (exit 2, not the
        # compiler's 'no kernel named' as a kernel failure). A kernel a macro may define stays the compiler's
        if parsed.kernels and not parsed.has_errors and not re.search(r"#\s*define[^\n]*(__kernel|kernel|__global__)",
                                                                      kf.source):
            raise KerntuneError(ErrorCode.SPEC, f"{kf.loaded.origin}: {e.message}",
                                hint=f"name one of them in the spec's `kernel:`, or pass the spec written for "
                                     f"{kf.path.name} with --spec") from None
        return          # not found by the parser (e.g. defined through a macro): the compiler will tell
    if k.node.has_error:
        return          # the kernel does not parse: the compiler's message says more than a comparison would
    k = parsed.kernel(name)   # template arguments against template parameters
    bindings = bind(k, parse_kernel_name(name)) if k.is_template else {}
    mismatches = signature_problems(spec, k, bindings, kf.lang)
    if mismatches:
        problems = [Problem(("args", m.arg) if m.arg is not None else ("args",), m.message) for m in mismatches]
        raise problems_error(kf.loaded, problems, f"the spec does not match the signature of {k.qualified_name} "
                                                  f"in {kf.path.name}",
                             hint=local_pointer_fix(k) if local_pointers(k) else
                             f"fix args in the spec (or write a fresh one with `kerntune init {kf.path}`)")


def load_kernel(path: Path, spec_path: Path | None = None, extra_include_dirs: list[Path] = ()) -> KernelFile:
    lang = language_of(path)
    text = read_text(path, "kernel file")
    loaded = load_for_kernel(path, spec_path)
    stem = path.name.split(".")[0]
    header = None if stem in loaded.spec.launches else header_launch(path, lang, text, loaded)
    name = entry_point(loaded.spec, own_launch(loaded.spec, stem, header))
    source, extraction = device_source(path, text, lang, name, include_dirs(loaded, list(extra_include_dirs)))
    kf = KernelFile(path=path, lang=lang, source=source, loaded=loaded, extraction=extraction, header=header)
    check_signature(kf)
    return kf
