"""Targets: what ``package.module[:attr]`` or ``path/to/file.py[:attr]`` names, loaded.

The command line and the configuration file both name servers (and hooks) this way;
both load them through here, so the errors read the same wherever the name came from.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, cast

from .._exceptions import MCPActorError
from ..server import Server

__all__ = ["TargetError", "load_hook", "load_server"]

_DEFAULT_ATTRS = ("server", "mcp", "app")


class TargetError(MCPActorError, ValueError):
    """A ``MODULE:ATTR`` or path given on the command line names no Server."""


def load_server(target: str) -> Server:
    """Load a Server from ``package.module[:attr]`` or ``path/to/file.py[:attr]``.

    A module is looked for in the current directory first, as ``python -m`` does.

    Raises:
        TargetError: the module or file is missing, fails to import (the message names
            the file and line), or holds no Server where the target says.
    """
    spec, _, attr = target.partition(":")
    try:
        module = _import_target(target, spec)
    except TargetError as exc:
        missing = exc.__cause__
        if not attr and isinstance(missing, ModuleNotFoundError) and missing.name == spec:
            # A bare word is as likely a plugin's name misspelt: say which are installed.
            raise TargetError(_not_found(target)) from missing
        raise
    if attr:
        obj: Any = _attribute(target, module, spec, attr)
        if callable(obj) and not isinstance(obj, Server):
            obj = obj()
        if not isinstance(obj, Server):
            raise TargetError(f"{target!r}: expected a mcpactor.Server, got {type(obj).__name__}")
        return obj
    for name in _DEFAULT_ATTRS:
        obj = getattr(module, name, None)
        if isinstance(obj, Server):
            return obj
    found = [value for value in vars(module).values() if isinstance(value, Server)]
    if len(found) == 1:
        return found[0]
    raise TargetError(
        f"{target!r}: found {len(found)} Server objects in {spec!r}; name one as {spec}:ATTR"
    )


def _not_found(target: str) -> str:
    from ..plugins import plugin_names

    installed = plugin_names()
    return "\n".join(
        [
            f"{target!r}: no installed plugin or module named {target!r}",
            f"  installed plugins: {', '.join(installed) if installed else 'none'}",
            "  (modules are looked for in the current directory and sys.path)",
        ]
    )


def load_hook(reference: str, *, option: str) -> Callable[..., Any]:
    """Load the function a ``module:function`` (or ``path/file.py:function``) reference names.

    ``option`` names where the reference came from, in the error.

    Raises:
        TargetError: the module does not import, or has no such callable.
    """
    spec, colon, attr = reference.partition(":")
    if not colon or not spec or not attr:
        raise TargetError(f"{option}: expected MODULE:FUNCTION, got {reference!r}")
    try:
        obj = _attribute(reference, _import_target(reference, spec), spec, attr)
    except TargetError as exc:
        raise TargetError(f"{option}: {exc}") from exc.__cause__
    if not callable(obj):
        raise TargetError(
            f"{option}: {reference!r} is not a function, it is a {type(obj).__name__}"
        )
    return cast("Callable[..., Any]", obj)


def _import_target(target: str, spec: str) -> ModuleType:
    from ..plugins import _describe_failure

    if spec.endswith(".py") or "/" in spec:
        return _import_file(target, Path(spec))
    # As ``python -m``: the current directory first, so ``pkg.module`` in it is found.
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if spec == missing or spec.startswith(missing + "."):
            raise TargetError(
                f"{target!r}: no module named {missing!r} (looked in the current directory "
                "and sys.path)"
            ) from exc
        raise TargetError(
            f"{target!r}: importing {spec!r} raised {_describe_failure(exc)}"
        ) from exc
    except SyntaxError as exc:
        raise TargetError(f"{target!r}: {_describe_failure(exc)}{_source(exc)}") from exc
    except Exception as exc:
        # Importing runs the module's code: whatever it raises is the module's failure.
        raise TargetError(
            f"{target!r}: importing {spec!r} raised {_describe_failure(exc)}"
        ) from exc


def _import_file(target: str, path: Path) -> ModuleType:
    from importlib.util import module_from_spec, spec_from_file_location

    from ..plugins import _describe_failure

    if not path.is_file():
        raise TargetError(f"{target!r}: no such file {str(path)!r}")
    module_name = f"_mcpactor_target_{path.stem}"
    loader_spec = spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise TargetError(f"{target!r}: cannot import {str(path)!r}")
    module = module_from_spec(loader_spec)
    sys.modules[module_name] = module
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        loader_spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[module_name]
        raise TargetError(f"{target!r}: {_describe_failure(exc)}{_source(exc)}") from exc
    except Exception as exc:
        del sys.modules[module_name]
        raise TargetError(f"{target!r}: running it raised {_describe_failure(exc)}") from exc
    return module


def _source(exc: SyntaxError) -> str:
    # The offending line under the message, as Python shows it (bounded: it is a file's).
    text = (exc.text or "").strip()
    return f"\n    {text[:200]}" if text else ""


def _attribute(target: str, module: ModuleType, spec: str, attr: str) -> Any:
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise TargetError(f"{target!r}: module {spec!r} has no attribute {attr!r}") from None
    return obj
