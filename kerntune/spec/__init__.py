"""Kernel specs: the YAML description of how to call and judge a kernel."""

from kerntune.spec.load import LoadedSpec, load_file, load_for_kernel
from kerntune.spec.model import ArgSpec, KernelSpec, LaunchSpec, Shape

__all__ = ["ArgSpec", "KernelSpec", "LaunchSpec", "LoadedSpec", "Shape", "load_file", "load_for_kernel"]
