"""The backend protocol: the few operations kerntune needs from a GPU API.

A backend wraps one device of one API (CuPy for CUDA, PyOpenCL for OpenCL).
It lives inside a worker process, never in the CLI process. Method names
follow the libraries they wrap where there is a natural one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, ClassVar, Collection, Sequence

import numpy as np

from kerntune.results import DeviceInfo, ResourceUsage


class CompileFailed(Exception):
    """The kernel did not compile; ``log`` holds the compiler's output."""

    def __init__(self, log: str):
        super().__init__(log)
        self.log = log


def stateless(source: str, lang: str, options: Sequence[str] = ()) -> None:
    """Refuse (CompileFailed) a kernel that keeps device variables between launches
    (kerntune.source.state), read with the macros its compile ``options`` define: its repeated
    launches do not each do one launch's work."""
    from kerntune.source.state import Unscannable, persistent_state, refusal, unscannable

    try:
        names = persistent_state(source, lang, options)
    except Unscannable as e:
        raise CompileFailed(unscannable(str(e))) from None
    if names:
        raise CompileFailed(refusal(names))


class LaunchFailed(Exception):
    """The runtime refused or aborted a launch. ``fatal`` means the device
    context is no longer usable (CUDA sticky errors such as an illegal address)
    and the worker must be replaced."""

    def __init__(self, message: str, fatal: bool = False):
        super().__init__(message)
        self.message = message
        self.fatal = fatal


class Backend(ABC):
    """One device of one GPU API."""

    lang: ClassVar[str]                    # source language it compiles: "cuda" or "opencl"
    name: ClassVar[str]                    # "cupy", "opencl"

    @abstractmethod
    def info(self) -> DeviceInfo: ...

    @abstractmethod
    def compile(self, source: str, kernel_name: str, options: Sequence[str] = ()) -> Any:
        """Compile and return a launchable kernel handle; raise CompileFailed."""

    @abstractmethod
    def resources(self, kernel: Any) -> ResourceUsage: ...

    def compile_log(self, kernel: Any) -> str:
        return ""

    # --- memory -----------------------------------------------------------
    @abstractmethod
    def alloc(self, nbytes: int) -> Any: ...

    @abstractmethod
    def view(self, buf: Any, offset: int, nbytes: int) -> Any:
        """``nbytes`` of ``buf`` from ``offset`` (a multiple of 64 KiB) on, as a buffer of its own that a
        kernel can be passed: what it writes there is in ``buf``."""

    @abstractmethod
    def upload(self, buf: Any, host: np.ndarray, offset: int = 0) -> None:
        """Copy a contiguous host array into an existing device buffer, ``offset`` bytes in."""

    @abstractmethod
    def download(self, buf: Any, host: np.ndarray, offset: int = 0) -> None:
        """Copy a device buffer, from ``offset`` bytes in, into an existing contiguous host array
        (blocking)."""

    @abstractmethod
    def copy(self, dst: Any, src: Any, nbytes: int) -> Any:
        """Enqueue a device-to-device copy; return what :meth:`elapsed_ms` needs."""

    def bandwidth_copy(self, dst: Any, src: Any, nbytes: int) -> Any:
        """The device-to-device copy that measures what the device moves (default: :meth:`copy`)."""
        return self.copy(dst, src, nbytes)

    # --- execution ----------------------------------------------------------
    @abstractmethod
    def launch(self, kernel: Any, grid: tuple[int, int, int], block: tuple[int, int, int],
               args: Sequence[Any], shared_mem: int = 0) -> Any:
        """Enqueue one launch (asynchronously); raise LaunchFailed."""

    @abstractmethod
    def synchronize(self) -> None:
        """Wait for all work on the whole device; raise LaunchFailed on a deferred error."""

    @abstractmethod
    def flush_l2(self) -> None:
        """Enqueue writes to a buffer larger than the last-level cache."""

    @abstractmethod
    def _start_timed(self) -> Any: ...

    @abstractmethod
    def _stop_timed(self, token: Any, enqueued: Any) -> Any: ...

    @abstractmethod
    def _elapsed_ms(self, handle: Any) -> float: ...

    def measure(self, run: Callable[[], Any], warmup: int, repeats: int, flush: bool = True,
                stop_after_ms: float | None = None, min_repeats: int = 5,
                prepare: Callable[[], Any] | None = None,
                inspect: Collection[int] = (), on_inspect: Callable[[int, int], None] | None = None,
                precision: float = 0.0, precision_after: int = 20, race_ms: float | None = None,
                ) -> tuple[list[float], str]:
        """Time ``run`` with device timers: ``warmup`` untimed calls, then
        ``repeats`` timed ones, each preceded (outside the timer) by
        ``prepare`` (restoring in-place arguments, poisoning outputs) and an L2
        flush. The device is synchronized before any timer is read.

        With ``stop_after_ms``, timing stops early once the median of the
        first ``min_repeats`` runs exceeds it (a candidate far slower than the
        best so far). With ``precision`` > 0, timing stops once the 95% interval
        of the median is within +-``precision`` of it (checked every 10 runs
        from ``precision_after`` on); with ``race_ms`` too, it stops ("slow") at
        those checks once the interval's lower end exceeds ``race_ms``. After each timed run whose index is in
        ``inspect``, ``on_inspect(0, index)`` is called (outside the timer) to
        check what the run wrote. Returns the samples and why timing stopped
        before ``repeats``: "slow", "converged", or "" (it did not).
        """
        samples, stopped = self.measure_many([run], warmup, repeats, flush, prepare=prepare, inspect=inspect,
                                             on_inspect=on_inspect, stop_after_ms=stop_after_ms,
                                             min_repeats=min_repeats, precision=precision,
                                             precision_after=precision_after, race_ms=race_ms)
        return samples[0], stopped

    def measure_many(self, runs: Sequence[Callable[[], Any]], warmup: int, repeats: int, flush: bool = True,
                     prepare: Callable[[], Any] | None = None, order: Callable[[int], Sequence[int]] | None = None,
                     inspect: Collection[int] = (), on_inspect: Callable[[int, int], None] | None = None,
                     stop_after_ms: float | None = None, min_repeats: int = 5, precision: float = 0.0,
                     precision_after: int = 20, race_ms: float | None = None) -> tuple[list[list[float]], str]:
        """Time several kernels interleaved run by run: in round ``i`` every
        run is timed once, in the order ``order(i)`` (default: as given), each
        preceded by ``prepare`` and a flush, so run ``i`` of one kernel and run
        ``i`` of another are a pair measured under the same conditions. Returns
        one list of samples per run, and why timing stopped before ``repeats``
        ("" when it did not; only a single run can stop early: "slow" with
        ``stop_after_ms`` or ``race_ms``, "converged" with ``precision``, see :meth:`measure`)."""
        from kerntune.speedup import median_interval, relative_halfwidth

        k = len(runs)
        order = order or (lambda i: range(k))
        for i in range(warmup):
            for j in order(-1 - i):
                if prepare is not None:
                    prepare()
                runs[j]()
        self.synchronize()
        handles: list[list[Any]] = [[] for _ in runs]
        for i in range(repeats):
            for j in order(i):
                if prepare is not None:
                    prepare()
                if flush:
                    self.flush_l2()
                token = self._start_timed()
                handles[j].append(self._stop_timed(token, runs[j]()))
                if i in inspect and on_inspect is not None:
                    self.synchronize()
                    on_inspect(j, i)
            if stop_after_ms is not None and k == 1 and i + 1 == min_repeats:
                self.synchronize()
                first = sorted(self._elapsed_ms(h) for h in handles[0])
                if first[len(first) // 2] > stop_after_ms:
                    return [first], "slow"
            if precision > 0 and k == 1 and i + 1 >= precision_after and (i + 1) % 10 == 0 and i + 1 < repeats:
                self.synchronize()
                so_far = [self._elapsed_ms(h) for h in handles[0]]
                med, lo, hi = median_interval(so_far)
                if race_ms is not None and lo > race_ms:
                    return [so_far], "slow"
                if relative_halfwidth(med, lo, hi) <= precision:
                    return [so_far], "converged"
        self.synchronize()
        return [[self._elapsed_ms(h) for h in hs] for hs in handles], ""

    def scalar(self, value: Any, storage: np.dtype) -> Any:
        """A scalar kernel argument of the given storage type."""
        return storage.type(value)

    def close(self) -> None:
        """Release device resources (the worker is exiting)."""
