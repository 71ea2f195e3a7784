"""Where the tuner's measurements come from: a live device (through the
isolated worker, with a pool of compile workers that build upcoming
candidates while the current one is measured), or a replay of a finished
run's database (no GPU needed: strategies can be exercised and compared)."""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from kerntune.engine.evaluate import EvalRequest, KernelInstance
from kerntune.engine.supervisor import DeviceWorker
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.fmt import shell
from kerntune.results import DeviceInfo, EvalResult, Status
from kerntune.spec.model import Shape
from kerntune.tuner.store import RunStore


class Evaluator(Protocol):
    device: DeviceInfo

    def prefetch(self, inst: KernelInstance) -> None: ...

    def evaluate(self, req: EvalRequest, timeout_s: float, key: str) -> EvalResult: ...

    def close(self) -> None: ...


class LiveEvaluator:
    replays = False

    def __init__(self, worker: DeviceWorker, compile_workers: int = 0, compile_timeout_s: float = 300.0):
        self.worker = worker
        self.device = worker.info
        self.compile_timeout_s = compile_timeout_s
        self._pool = ThreadPoolExecutor(max_workers=compile_workers) if compile_workers > 0 else None
        self._compilers: list[DeviceWorker] = []
        self._local = threading.local()
        self._lock = threading.Lock()
        self._pending: dict[str, Future] = {}

    def _compiler(self) -> DeviceWorker:
        w = getattr(self._local, "worker", None)
        if w is None:
            w = DeviceWorker(self.worker.device)
            self._local.worker = w
            with self._lock:
                self._compilers.append(w)
        return w

    def _compile(self, inst: KernelInstance) -> None:
        try:
            self._compiler().compile(inst.source, inst.name, inst.options, self.compile_timeout_s)
        except KerntuneError:
            pass  # the measuring worker compiles again and records the error properly

    def prefetch(self, inst: KernelInstance) -> None:
        """Compile ahead in another process: the backend's disk cache (CuPy's
        kernel cache, PyOpenCL's binary cache) makes the measuring worker's
        compile of the same source nearly free."""
        if self._pool is None or inst.digest in self._pending:
            return
        self._pending[inst.digest] = self._pool.submit(self._compile, inst)

    def evaluate(self, req: EvalRequest, timeout_s: float, key: str) -> EvalResult:
        fut = self._pending.pop(req.candidate.digest, None)
        if fut is not None:
            fut.result()
        return self.worker.evaluate(req, timeout_s)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        for w in self._compilers:
            w.close()


class ReplayEvaluator:
    """Serves recorded results by configuration key (a 'replay device').
    A configuration the run never recorded (Kernel Tuner leaves out what its
    restrictions exclude) is answered as pruned."""

    replays = True

    def __init__(self, store: RunStore):
        self.store = store
        device = store.get("device", None, DeviceInfo)
        if device is None:
            raise KerntuneError(ErrorCode.RUN, f"{store.path} records no device; it cannot be replayed")
        self.device = device.model_copy(update={"backend": "replay"})
        self._rows = {e.key: e for e in store.evaluations()}
        self.baseline = store.get("baseline", None, EvalResult) or None

    def prefetch(self, inst: KernelInstance) -> None:
        return None

    def require_shapes(self, shapes) -> None:
        """Refuse to replay on shapes the run did not record: every configuration would come back
        timed on none of them (a search of empty cells that exited 0)."""
        recorded = {Shape.of({k: v for k, v in s.items() if k != "label"}).key: s.get("label", "")
                    for s in self.store.get("shapes", []) or []}
        missing = [sh for sh in shapes if sh.key not in recorded]
        if recorded and missing:
            has = ", ".join(f"{label} ({key})" if label else key for key, label in recorded.items())
            raise KerntuneError(ErrorCode.USAGE, f"the replayed run {self.store.path.parent} recorded no timing "
                                                 f"for {', '.join(f'{sh.label} ({sh.key})' for sh in missing)}; "
                                                 f"it has {has}",
                                hint="replay it on the shapes it recorded: `kerntune tune --device "
                                     f"{shell('replay:' + str(self.store.path.parent))}` alone takes its own "
                                     "template, spec and shapes; with your spec, pick them with --shape-set")

    def evaluate(self, req: EvalRequest, timeout_s: float, key: str) -> EvalResult:
        row = self._rows.get(key)
        if row is None:
            return EvalResult(status=Status.RESOURCE_LIMIT, kernel=key, message="not in the recorded run",
                              reason="not_recorded")
        if row.duplicate_of is not None:
            original = next((e for e in self._rows.values() if e.id == row.duplicate_of), None)
            row = original or row
        if row.result is not None:
            return row.result
        status = Status.RESOURCE_LIMIT if row.status == Status.PRUNED.value else Status(row.status)
        return EvalResult(status=status, kernel=key, message=row.message, reason=row.reason)

    def close(self) -> None:
        return None
