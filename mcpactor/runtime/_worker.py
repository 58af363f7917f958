"""A worker process for ``offload="process"`` tools.

The pool (``_offload.py``) starts this file as a script, so it imports nothing but the
standard library until a call names a module: a fresh worker is ready in the time Python
takes to start.

The parent speaks on the worker's stdin and stdout; each message is an 8-byte big-endian
length and a pickle. A call is ``("call", sys_path, module, file, qualname, args, kwargs)``
and its answer ``("ok", value)`` or ``("error", pickled_exception_or_None, type_name,
message, traceback)``. EOF on stdin ends the worker. A call is never interrupted from
inside: the parent kills a worker whose call was cancelled or ran out of time.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pickle
import signal
import struct
import sys
import threading
import time
import traceback
from types import ModuleType
from typing import Any

_HEADER = struct.Struct("!Q")


def _read_exactly(fd: int, size: int) -> bytes:
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _load_module(name: str, file: str | None) -> ModuleType:
    module = sys.modules.get(name)
    if module is not None:
        return module
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if file is None or not (name == missing or name.startswith(missing + ".")):
            raise
    # A module the parent loaded from a file under a name no import finds (a file
    # served with ``mcpactor serve FILE``): load the same file under the same name, so
    # pickles naming that module mean the same thing on both sides.
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {name!r} from {file!r}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _resolve(module_name: str, file: str | None, qualname: str) -> Any:
    target: Any = _load_module(module_name, file)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def _error(exc: BaseException) -> tuple[Any, ...]:
    text = "".join(traceback.format_exception(exc))
    blob: bytes | None
    try:
        blob = pickle.dumps(exc, pickle.HIGHEST_PROTOCOL)
        pickle.loads(blob)
    except Exception:
        # Exceptions whose constructor takes other arguments than ``args`` do not
        # survive pickling; the parent gets their type name and message instead.
        blob = None
    return ("error", blob, type(exc).__qualname__, _message(exc), text)


def _message(exc: BaseException) -> str:
    # str() of an exception holding a deep value recurses without bound; this module
    # imports nothing of the package (it starts fast), so the fallback is its own.
    try:
        return str(exc)
    except Exception:
        return f"<the message of a {type(exc).__name__} could not be formatted>"


def _serve_call(message: tuple[Any, ...]) -> bytes:
    _, path, module_name, file, qualname, args, kwargs = message
    if sys.path != path:
        sys.path[:] = path
    try:
        value = _resolve(module_name, file, qualname)(*args, **kwargs)
        reply: tuple[Any, ...] = ("ok", value)
    except Exception as exc:
        reply = _error(exc)
    try:
        return pickle.dumps(reply, pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        problem = TypeError(f"the result of {qualname} cannot be pickled: {exc}")
        return pickle.dumps(_error(problem), pickle.HIGHEST_PROTOCOL)


def _watch_parent(parent: int) -> None:
    # If the server dies without closing our stdin (SIGKILL), a busy worker would spin
    # on forever; once it has a new parent, it goes too.
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(1)


def main() -> None:
    """Serve calls from the parent until it closes our stdin."""
    # Ctrl-C reaches the whole process group; the parent decides when workers stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    inbox, outbox = os.dup(0), os.dup(1)
    # What user code prints must not corrupt the pipe to the parent.
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    if len(sys.argv) > 1:
        threading.Thread(target=_watch_parent, args=(int(sys.argv[1]),), daemon=True).start()
    while True:
        try:
            (size,) = _HEADER.unpack(_read_exactly(inbox, _HEADER.size))
            message = pickle.loads(_read_exactly(inbox, size))
        except EOFError:
            return
        data = _serve_call(message)
        _write_all(outbox, _HEADER.pack(len(data)) + data)


if __name__ == "__main__":
    main()
