"""A kernel file on disk with its spec: what every command starts from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kerntune.engine.evaluate import KernelInstance
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.spec.load import LoadedSpec, load_for_kernel, read_text
from kerntune.spec.model import LaunchSpec

LANG_BY_SUFFIX = {".cu": "cuda", ".cuh": "cuda", ".cl": "opencl"}


def language_of(path: Path) -> str:
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
    source: str
    loaded: LoadedSpec

    @property
    def spec(self):
        return self.loaded.spec

    @property
    def stem(self) -> str:
        return self.path.name.split(".")[0]

    def instance(self, label: str | None = None) -> KernelInstance:
        """This file as a kernel to run: the spec's launch and options, or its ``launches``
        entry for this file's stem (a launch, plus compile options for this file)."""
        impl = self.spec.launches.get(self.stem)
        options = tuple(getattr(self.spec.compile_options, self.lang)) + tuple(impl.compile_options if impl else ())
        launch = LaunchSpec(grid=impl.grid, block=impl.block, shared_mem=impl.shared_mem) if impl else None
        return KernelInstance(source=self.source, name=self.spec.kernel, lang=self.lang, options=options,
                              launch=launch, label=label or self.path.name)


def load_kernel(path: Path, spec_path: Path | None = None) -> KernelFile:
    lang = language_of(path)
    source = read_text(path, "kernel file")
    loaded = load_for_kernel(path, spec_path)
    return KernelFile(path=path, lang=lang, source=source, loaded=loaded)
