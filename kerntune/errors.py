"""One error type for everything a user can get wrong, with a closed set of codes.

Code deep in the package raises :class:`KerntuneError`; only the CLI turns it
into a message and an exit status (see ``kerntune.cli.output.fail``). Errors are
classified by their code, never by matching message text.
"""

from __future__ import annotations

from enum import Enum


class ErrorCode(str, Enum):
    USAGE = "usage"                    # a bad command-line value
    FILE = "file"                      # a file is missing or unreadable
    SPEC = "spec"                      # the kernel spec is invalid
    TEMPLATE = "template"              # a kernel template is invalid
    DEVICE = "device"                  # no such device, or it cannot run this kernel
    BACKEND = "backend"                # a backend library is missing or broken
    COMPILE = "compile"                # the kernel does not compile
    RESOURCE = "resource"              # the kernel does not fit the device
    VERIFY = "verify"                  # the kernel computes the wrong thing
    WORKER = "worker"                  # the isolated worker crashed or timed out
    RUN = "run"                        # a run directory is missing, corrupt or incompatible
    LLM = "llm"                        # the LLM endpoint failed or is misconfigured
    REGRESSION = "regression"          # a kernel got slower or wrong (CI gate)
    INTERNAL = "internal"              # a bug in kerntune


# Exit statuses: 1 is reserved for "ran fine but the answer is no" (verification
# failed, regression found); 2 for bad input; 3 for environment problems;
# 4 for failures of the kernel under test; 70 for bugs (EX_SOFTWARE).
EXIT_STATUS = {
    ErrorCode.USAGE: 2,
    ErrorCode.FILE: 2,
    ErrorCode.SPEC: 2,
    ErrorCode.TEMPLATE: 2,
    ErrorCode.RUN: 2,
    ErrorCode.DEVICE: 3,
    ErrorCode.BACKEND: 3,
    ErrorCode.LLM: 3,
    ErrorCode.COMPILE: 4,
    ErrorCode.RESOURCE: 4,
    ErrorCode.WORKER: 4,
    ErrorCode.VERIFY: 1,
    ErrorCode.REGRESSION: 1,
    ErrorCode.INTERNAL: 70,
}


class KerntuneError(Exception):
    """A problem the user can act on: what went wrong, and how to fix it."""

    def __init__(self, code: ErrorCode, message: str, hint: str | None = None, detail: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint
        self.detail = detail  # long text (a compile log) shown below the message

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS[self.code]

    def __reduce__(self):  # survive pickling across the worker boundary
        return (KerntuneError, (self.code, self.message, self.hint, self.detail))
