"""One way for the benchmark scripts to end on kerntune's own errors: the message and the hint,
exit status 1, no traceback (a bad device or input is the user's to fix, not a crash)."""

from __future__ import annotations

import sys
from typing import Callable


def run(main: Callable[[], int]) -> None:
    from kerntune.errors import KerntuneError

    try:
        raise SystemExit(main())
    except KerntuneError as e:
        print(f"error: {e.message}" + (f"\nhint: {e.hint}" if e.hint else ""), file=sys.stderr)
        raise SystemExit(1) from None
