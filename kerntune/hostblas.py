"""NumPy's BLAS in kerntune's own process runs on one thread.

The main process runs the search's model between evaluations: a least-squares solve every tenth of the
budget, a matrix-vector product every fourth proposal. OpenBLAS runs such calls on a helper thread per
core, and those threads keep spinning for about 0.1 s after each call (measured: 0.11 s of CPU during a
0.5 s sleep after a solve and a product, on 2 cores; none with one thread). On a CPU device that takes a core from
the evaluation that starts next. The workers get OPENBLAS_NUM_THREADS=1 on OpenCL devices
(engine.supervisor); in the running process that variable is read too late (NumPy is loaded), so this
asks the loaded OpenBLAS itself. A value the user set is kept. Where the BLAS is not an OpenBLAS found
in the process's memory map (Linux), nothing changes.
"""

from __future__ import annotations

import ctypes
import importlib
import os

# the thread-count setters of the OpenBLAS builds NumPy ships (scipy-openblas, 64-bit or 32-bit ints)
# and of a system OpenBLAS
SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
           "openblas_set_num_threads64_", "openblas_set_num_threads")


def _loaded_openblas() -> list[str]:
    """Paths of the OpenBLAS libraries this process has loaded (Linux; [] elsewhere)."""
    try:
        with open("/proc/self/maps") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    paths = {fields[-1] for fields in map(str.split, lines) if len(fields) >= 6}
    return sorted(p for p in paths if p.startswith("/") and "openblas" in os.path.basename(p).lower())


def one_host_thread() -> bool:
    """Run this process's BLAS on one thread, unless OPENBLAS_NUM_THREADS is set; True when done."""
    if "OPENBLAS_NUM_THREADS" in os.environ:
        return False
    importlib.import_module("numpy")        # loads the BLAS, if it is not loaded yet
    for path in _loaded_openblas():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in SETTERS:
            setter = getattr(lib, name, None)
            if setter is not None:
                setter(1)
                return True
    return False
