"""The worker process: owns one device and evaluates kernels on it.

Messages are ``(kind, payload)`` tuples over a multiprocessing pipe. Replies
are ``("ok", value, poisoned)`` or ``("error", KerntuneError)``. When a
kernel poisons the device context the worker replies, then exits, and the
supervisor starts a fresh one.
"""

from __future__ import annotations

import signal
import traceback
from dataclasses import dataclass
from typing import Any

from kerntune.errors import ErrorCode, KerntuneError


@dataclass(frozen=True)
class CompileRequest:
    source: str
    name: str
    options: tuple[str, ...] = ()


def _handle(evaluator: Any, kind: str, payload: Any) -> Any:
    from kerntune.backends.base import CompileFailed

    if kind == "evaluate":
        return evaluator.evaluate(payload)
    if kind == "compare":
        return evaluator.timer.compare(payload)
    if kind == "compile":
        try:
            kernel = evaluator.backend.compile(payload.source, payload.name, payload.options)
        except CompileFailed as e:
            raise KerntuneError(ErrorCode.COMPILE, f"{payload.name} does not compile", detail=e.log) from None
        return evaluator.backend.resources(kernel), evaluator.backend.compile_log(kernel)
    if kind == "info":
        return evaluator.backend.info()
    raise KerntuneError(ErrorCode.INTERNAL, f"unknown worker request {kind!r}")


def worker_main(conn: Any, device: Any, exact_alloc: bool = False) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor decides when this process ends
    from kerntune.backends import open_backend
    from kerntune.engine.evaluate import Evaluator

    try:
        evaluator = Evaluator(open_backend(device, exact_alloc=exact_alloc))
        conn.send(("ready", evaluator.backend.info()))
    except KerntuneError as e:
        conn.send(("error", e))
        return
    except Exception as e:
        conn.send(("error", KerntuneError(ErrorCode.DEVICE, f"cannot open device {device.id}: {type(e).__name__}: {e}",
                                          detail=traceback.format_exc())))
        return
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            evaluator.backend.close()
            return
        kind, payload = msg
        try:
            conn.send(("ok", _handle(evaluator, kind, payload), evaluator.poisoned))
        except KerntuneError as e:
            conn.send(("error", e))
        except Exception as e:
            conn.send(("error", KerntuneError(ErrorCode.INTERNAL, f"{type(e).__name__}: {e}",
                                              detail=traceback.format_exc())))
        if evaluator.poisoned:
            return


def isolated_main(conn: Any, fn: Any, args: tuple) -> None:
    """Run one function in a throwaway process (device enumeration)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        conn.send(("ok", fn(*args)))
    except KerntuneError as e:
        conn.send(("error", e))
    except Exception as e:
        conn.send(("error", KerntuneError(ErrorCode.INTERNAL, f"{type(e).__name__}: {e}", detail=traceback.format_exc())))


def _resolve(qualname: str) -> Any:
    import importlib

    module, _, attr = qualname.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def main(argv: list[str]) -> None:
    """``python -m kerntune.engine.worker FD device ID`` or ``FD call module:function``."""
    from multiprocessing.connection import Connection

    conn = Connection(int(argv[0]))
    mode, target = argv[1], argv[2]
    if mode == "device":
        from kerntune.backends import parse_device

        worker_main(conn, parse_device(target), exact_alloc="exact-alloc" in argv[3:])
    elif mode == "call":
        import pickle

        args = pickle.loads(bytes.fromhex(argv[3])) if len(argv) > 3 else ()
        isolated_main(conn, _resolve(target), args)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
