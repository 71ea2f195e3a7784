"""The worker process: owns one device and evaluates kernels on it.

Messages are ``(kind, payload)`` tuples over a multiprocessing pipe. Replies
are ``("ok", value, poisoned)`` or ``("error", KerntuneError)``. When a
kernel poisons the device context the worker replies, then exits, and the
supervisor starts a fresh one.

A worker runs in its own session (Ctrl-C in the terminal is for kerntune),
so it must not outlive its parent: a watchdog thread looks every half second
whether the parent closed its end of the connection (it does when it exits,
however it exits) or the worker was re-parented, and then ends the process at
once, even while the main thread is stuck in a hung kernel.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
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
    from kerntune.backends.base import CompileFailed, stateless

    if kind == "evaluate":
        return evaluator.evaluate(payload)
    if kind == "compare":
        return evaluator.timer.compare(payload)
    if kind == "compile":
        try:
            stateless(payload.source, evaluator.backend.info().lang, payload.options)
            kernel = evaluator.backend.compile(payload.source, payload.name, payload.options)
        except CompileFailed as e:
            raise KerntuneError(ErrorCode.COMPILE, f"{payload.name} does not compile", detail=e.log) from None
        return evaluator.backend.resources(kernel), evaluator.backend.compile_log(kernel)
    if kind == "info":
        return evaluator.backend.info()
    raise KerntuneError(ErrorCode.INTERNAL, f"unknown worker request {kind!r}")


WATCH_SECONDS = 0.5
ORPHANED = 75        # the exit status of a worker whose parent is gone


def parent_gone(sock: socket.socket, parent: int) -> bool:
    """Whether the process at the other end of ``sock`` is gone: the connection reads as closed
    (peeked, so nothing is consumed), or this process was re-parented."""
    if os.getppid() != parent:
        return True
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except (BlockingIOError, InterruptedError):
        return False                 # open, nothing to read: the parent is there
    except OSError:
        return True


def watch_parent(fd: int, parent: int) -> threading.Thread:
    """Exit this process when the parent is gone (see the module doc)."""
    sock = socket.socket(fileno=os.dup(fd))

    def watch() -> None:
        while True:
            time.sleep(WATCH_SECONDS)
            if parent_gone(sock, parent):
                os._exit(ORPHANED)

    t = threading.Thread(target=watch, name="kerntune-parent-watch", daemon=True)
    t.start()
    return t


def worker_main(conn: Any, device: Any, exact_alloc: bool = False) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor decides when this process ends
    from kerntune.backends import open_backend
    from kerntune.engine.evaluate import Evaluator

    try:
        evaluator = Evaluator(open_backend(device, exact_alloc=exact_alloc), canary=not exact_alloc)
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

    fd = int(argv[0])
    watch_parent(fd, os.getppid())
    conn = Connection(fd)
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
