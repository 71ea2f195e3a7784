"""The parent side of isolation: start, talk to, time-limit and replace workers.

Every compile-and-run happens in a worker process, started fresh
as a new interpreter running ``kerntune.engine.worker`` from the same kerntune
as the caller (so no GPU state is ever inherited, the caller's ``__main__`` is
never re-imported, and a ``kerntune`` folder in the working directory, such as
a checkout, never shadows the installed package) and connected over a socket
pair. A worker that crashes (illegal access, segfault, abort) or exceeds its
time limit (hung kernel) is killed; the evaluation is recorded as CRASH or
TIMEOUT with the reason, and the next request starts a fresh worker.

A worker never outlives kerntune: :func:`kill_all` ends every worker process
(and whatever it started: each worker leads its own process group), at exit
and on every signal the CLI catches; and a worker whose parent is gone (even
killed with SIGKILL) notices and exits (see ``kerntune.engine.worker``).
"""

from __future__ import annotations

import atexit
import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Callable

from kerntune.backends import DeviceRef
from kerntune.engine.evaluate import EvalRequest
from kerntune.engine.worker import CompileRequest
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.engine.timed import CompareRequest
from kerntune.results import Comparison, DeviceInfo, EvalResult, Status, TimedKernel

_LIVE: "weakref.WeakSet[_Process]" = weakref.WeakSet()     # every worker process not yet killed
# the folder that holds this kerntune package (site-packages when installed, the checkout otherwise)
_PKG_ROOT = str(Path(__file__).resolve().parents[2])
# ``python -m`` and ``-c`` put the working directory first on sys.path; the worker replaces it with
# _PKG_ROOT so it imports exactly the kerntune its parent runs
_WORKER_BOOT = ("import sys, runpy; sys.path[:1] = [{root!r}] if sys.path[:1] == [''] else [{root!r}] + sys.path[:1]; "
                "runpy.run_module('kerntune.engine.worker', run_name='__main__', alter_sys=True)")


class WorkerCrashed(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class WorkerTimedOut(Exception):
    pass


def _exit_reason(code: int | None, stderr_tail: str = "") -> str:
    if code is None:
        reason = "the worker stopped answering"
    elif code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        reason = f"the worker was killed by {name}"
    else:
        reason = f"the worker exited with status {code}"
    tail = stderr_tail.strip().splitlines()[-3:]
    return reason + (f"; its last words: {' | '.join(tail)}" if tail else "")


class _Process:
    """A worker subprocess and its connection."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None, prefix: tuple[str, ...] = ()):
        ours, theirs = socket.socketpair()
        self.log = tempfile.TemporaryFile(mode="w+b", prefix="kerntune-worker-")
        env = {**os.environ, **env} if env else None
        self.proc = subprocess.Popen(
            [*prefix, sys.executable, "-c", _WORKER_BOOT.format(root=_PKG_ROOT), str(theirs.fileno()), *args],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, env=env,
            start_new_session=True,  # Ctrl-C reaches the CLI, which decides the worker's fate
        )
        theirs.close()
        self.conn = Connection(ours.detach())
        _LIVE.add(self)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr_tail(self) -> str:
        try:
            self.log.seek(0)
            return self.log.read()[-2000:].decode(errors="replace")
        except (OSError, ValueError):
            return ""

    def reason(self) -> str:
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        return _exit_reason(self.proc.returncode, self.stderr_tail())

    def receive(self, timeout_s: float) -> tuple:
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerTimedOut()
            try:
                ready = self.conn.poll(min(remaining, 0.5))
            except (OSError, EOFError):
                ready = True
            if ready:
                try:
                    return self.conn.recv()
                except (EOFError, OSError):
                    raise WorkerCrashed(self.reason()) from None
            if not self.alive():
                raise WorkerCrashed(self.reason())

    def send(self, msg: Any) -> None:
        try:
            self.conn.send(msg)
        except (OSError, BrokenPipeError):
            raise WorkerCrashed(self.reason()) from None

    def kill(self) -> None:
        """Kill the worker and its process group (a wrapper such as compute-sanitizer, compilers)."""
        _LIVE.discard(self)
        if self.proc.returncode is None:     # not reaped yet: its pid is still its group's id, never another's
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)     # its own session: the group is the worker's
            except OSError:
                pass
        if self.alive():
            self.proc.kill()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        for closable in (self.conn, self.log):
            try:
                closable.close()
            except OSError:
                pass


# On an OpenCL device (a CPU, as a rule) the kernels run on the host's own cores. NumPy's BLAS (OpenBLAS)
# starts a helper thread per core, and after each call (np.dot in verification, a reference's matmul)
# that thread spins for a while: a timed kernel then has one core fewer. On a 2-core host it ran 2x
# slower in as many as half the timed runs, and a configuration's median flipped between recordings
# (docs/search.md, "Are the recorded landscapes a property of the kernel?"). The worker's host math
# uses one thread there; a value the user set is kept.
ONE_HOST_THREAD = {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def worker_env(device: DeviceRef, env: dict[str, str] | None) -> dict[str, str] | None:
    """The environment a device's worker starts with (None: the caller's own)."""
    if device.backend != "opencl":
        return env
    quiet = {k: v for k, v in ONE_HOST_THREAD.items() if k not in os.environ}
    return {**quiet, **(env or {})} or None


class DeviceWorker:
    """One worker process bound to one device, replaced whenever it dies. ``env`` and
    ``prefix`` (a command the worker runs under, e.g. compute-sanitizer) serve the memory
    checker; ``exact_alloc`` asks for buffers that end where their arrays do: one device allocation
    each (no pool) and no canary after them (judge.canary_bytes), so an access past an array's end
    is past an allocation's end, where the checker sees it."""

    def __init__(self, device: DeviceRef, start_timeout_s: float = 120.0, env: dict[str, str] | None = None,
                 prefix: tuple[str, ...] = (), exact_alloc: bool = False):
        self.device = device
        self.start_timeout_s = start_timeout_s
        self.env = env
        self.prefix = prefix
        self.exact_alloc = exact_alloc
        self._p: _Process | None = None
        self._info: DeviceInfo | None = None
        self.restarts = 0

    # --- lifecycle ------------------------------------------------------------
    def start(self) -> None:
        if self._p is not None and self._p.alive():
            return
        self.kill()
        self._p = _Process(["device", self.device.id] + (["exact-alloc"] if self.exact_alloc else []),
                           env=worker_env(self.device, self.env), prefix=self.prefix)
        try:
            reply = self._p.receive(self.start_timeout_s)
        except WorkerTimedOut:
            self.kill()
            raise KerntuneError(ErrorCode.DEVICE, f"the worker for {self.device.id} did not start within "
                                                  f"{self.start_timeout_s:.0f} s") from None
        except WorkerCrashed as e:
            self.kill()
            raise KerntuneError(ErrorCode.DEVICE, f"the worker for {self.device.id} died while starting: {e.reason}") from None
        if reply[0] == "error":
            self.kill()
            raise reply[1]
        self._info = reply[1]
        if self._info.backend == "opencl" and self._info.vector_width is None and not self.env and not self.prefix:
            self._info = self._info.model_copy(update={"vector_width": vector_width(self.device)})

    @property
    def info(self) -> DeviceInfo:
        if self._info is None:
            self.start()
        assert self._info is not None
        return self._info

    def kill(self) -> None:
        if self._p is not None:
            self._p.kill()
        self._p = None

    def close(self) -> None:
        if self._p is not None and self._p.alive():
            try:
                self._p.conn.send(None)
                self._p.proc.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def fresh(self) -> None:
        """End this worker process; the next request starts a new one (new buffers, new allocations,
        a new compile of every kernel)."""
        self.close()

    def __enter__(self) -> "DeviceWorker":
        return self

    def __exit__(self, kind: Any, *exc: Any) -> None:
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            self.kill()          # interrupted: no time to wait for a worker that may be stuck in a kernel
        else:
            self.close()

    # --- requests -------------------------------------------------------------
    def call(self, kind: str, payload: Any, timeout_s: float) -> Any:
        """Send one request; return its value. Raises KerntuneError for errors the
        worker reports, WorkerTimedOut / WorkerCrashed when it hangs or dies."""
        self.start()
        p = self._p
        assert p is not None
        try:
            p.send((kind, payload))
            reply = p.receive(timeout_s)
        except (WorkerTimedOut, WorkerCrashed):
            self.kill()
            self.restarts += 1
            raise
        if reply[0] == "error":
            if not p.alive():
                self.kill()
            raise reply[1]
        _, value, poisoned = reply
        if poisoned:  # the worker exits after replying; reap it now
            self.kill()
            self.restarts += 1
        return value

    def evaluate(self, req: EvalRequest, timeout_s: float) -> EvalResult:
        """Evaluate; a hang or a crash becomes a TIMEOUT or CRASH result, never an exception."""
        t0 = time.perf_counter()
        try:
            return self.call("evaluate", req, timeout_s)
        except WorkerTimedOut:
            return EvalResult(status=Status.TIMEOUT, kernel=req.candidate.label, device=self._info,
                              message=f"did not finish within the time limit of {timeout_s:g} s; the worker was killed",
                              seconds=time.perf_counter() - t0)
        except WorkerCrashed as e:
            return EvalResult(status=Status.CRASH, kernel=req.candidate.label, device=self._info,
                              message=f"{e.reason} (the kernel crashed its process)", seconds=time.perf_counter() - t0)

    def compare(self, req: CompareRequest, timeout_s: float) -> Comparison:
        """Time several kernels interleaved on one shape; a hang or a crash marks every one
        of them (the session cannot tell which kernel caused it)."""
        t0 = time.perf_counter()
        try:
            return self.call("compare", req, timeout_s)
        except (WorkerTimedOut, WorkerCrashed) as e:
            status = Status.TIMEOUT if isinstance(e, WorkerTimedOut) else Status.CRASH
            why = (f"did not finish within the time limit of {timeout_s:g} s" if status is Status.TIMEOUT
                   else f"{e.reason} (a kernel crashed its process)")
            return Comparison(shape=req.shape.as_dict(), label=req.shape.label, seconds=time.perf_counter() - t0,
                              kernels=[TimedKernel(label=k.label, status=status, message=why) for k in req.kernels])

    def compile(self, source: str, name: str, options: tuple[str, ...], timeout_s: float) -> Any:
        try:
            return self.call("compile", CompileRequest(source, name, tuple(options)), timeout_s)
        except WorkerTimedOut:
            raise KerntuneError(ErrorCode.COMPILE, f"compiling {name} did not finish within {timeout_s:g} s") from None
        except WorkerCrashed as e:
            raise KerntuneError(ErrorCode.COMPILE, f"compiling {name} crashed the worker: {e.reason}") from None


def run_isolated(fn: Callable[..., Any], *args: Any, timeout_s: float = 60.0, what: str = "the request",
                 env: dict[str, str] | None = None) -> Any:
    """Run a module-level kerntune function in a throwaway process with a time limit (``env``: variables
    it starts with beside the caller's, such as a simulator's ICD folder)."""
    target = f"{fn.__module__}:{fn.__qualname__}"
    extra = [pickle.dumps(args).hex()] if args else []
    p = _Process(["call", target, *extra], env=env)
    try:
        reply = p.receive(timeout_s)
    except WorkerTimedOut:
        raise KerntuneError(ErrorCode.DEVICE, f"{what} did not finish within {timeout_s:g} s",
                            hint="a GPU driver may be hung; check `nvidia-smi`") from None
    except WorkerCrashed as e:
        raise KerntuneError(ErrorCode.DEVICE, f"{what} failed: {e.reason}") from None
    finally:
        p.kill()
    if reply[0] == "error":
        raise reply[1]
    return reply[1]


_VECTOR_WIDTHS: dict[str, int] = {}


def vector_width(device: DeviceRef) -> int:
    """The widest OpenCL vector ``device``'s compiler takes natively (see opencl.widest_vector), learned once
    per process in a throwaway one; 8 if the probe crashes or hangs. A worker under a checker (``env``,
    ``prefix``: a simulator's device) is not asked: its info keeps None, which the rules read as 16."""
    if device.id not in _VECTOR_WIDTHS:
        from kerntune.backends.opencl import widest_vector

        try:
            width = run_isolated(widest_vector, device.platform, device.index, timeout_s=120,
                                 what="probing the widest vector")
        except KerntuneError:
            width = 8
        _VECTOR_WIDTHS[device.id] = width
    return _VECTOR_WIDTHS[device.id]


@atexit.register
def kill_all() -> None:
    """Kill every worker process this process started (at exit, and from the CLI's signal handlers)."""
    for p in list(_LIVE):
        try:
            p.kill()
        except Exception:
            pass
