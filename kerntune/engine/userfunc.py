"""Load the user's own Python functions named in a spec (reference and input
generator). These come from the user's files, like a test suite; nothing an
LLM writes ever reaches this module."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any, Callable

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.spec.model import FunctionRef

_CACHE: dict[tuple, Callable[..., Any]] = {}


def load_function(ref: FunctionRef, base_dir: Path, what: str) -> Callable[..., Any]:
    key = (ref.file, ref.code, ref.function, str(base_dir))
    if key in _CACHE:
        return _CACHE[key]
    if ref.file is not None:
        path = (base_dir / ref.file).resolve()
        if not path.exists():
            raise KerntuneError(ErrorCode.SPEC, f"{what} file not found: {path}",
                                hint=f"the spec's '{what}' path is relative to the spec's folder, {base_dir.resolve()}")
        name = f"kerntune_user_{abs(hash(str(path)))}"
        mod_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules[name] = module
        try:
            mod_spec.loader.exec_module(module)
        except Exception as e:
            raise KerntuneError(ErrorCode.SPEC, f"importing the {what} file {path} failed: {type(e).__name__}: {e}") from None
        namespace = vars(module)
        origin = str(path)
    else:
        namespace: dict[str, Any] = {"__name__": "kerntune_inline"}
        try:
            exec(compile(ref.code, f"<spec {what}>", "exec"), namespace)  # the user's own spec text
        except Exception as e:
            raise KerntuneError(ErrorCode.SPEC, f"the inline {what} code failed: {type(e).__name__}: {e}") from None
        origin = "inline code"
    fn = namespace.get(ref.function)
    if not callable(fn):
        raise KerntuneError(ErrorCode.SPEC, f"{what}: no function {ref.function!r} in {origin}")
    _CACHE[key] = fn
    return fn


def call_user(fn: Callable[..., Any], what: str, kwargs: dict[str, Any], extra: dict[str, Any]) -> Any:
    """Call with the keyword arguments its signature accepts (``extra`` only if named)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}
    takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    args = {k: v for k, v in kwargs.items() if takes_all or k in params}
    args.update({k: v for k, v in extra.items() if k in params})
    try:
        return fn(**args)
    except KerntuneError:
        raise
    except Exception as e:
        raise KerntuneError(ErrorCode.SPEC, f"the {what} function raised {type(e).__name__}: {e}") from None


def require_functions(spec, base_dir: Path) -> None:
    """The spec's reference and inputs functions are there (their files import, the functions
    exist): checked before a command creates anything, rather than when a run first calls them."""
    for ref, what in ((spec.reference, "reference"), (spec.inputs, "inputs")):
        if ref is not None:
            load_function(ref, base_dir, what)
