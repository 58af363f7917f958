"""The deployment file and the servers it names: reading, checking and assembling them.

``mcpactor.toml`` (or ``[tool.mcpactor]`` of ``pyproject.toml``) is read by
``load_config`` into a ``Config``, one table per module (``[http]``, ``[auth]``,
``[admin]``, ``[store]``, ``[stateless]``'s keys), each key checked by one ``Reader``
that names the key, the file and the line of what is wrong. ``assemble`` turns a list
of ``ServerConfig`` (the file's, or the command line's targets) into the one Server
that is served; ``load_server`` and ``load_hook`` load what a ``module:attr`` or
``path/file.py:attr`` target names.

The command line sits on this package and nothing below it imports it. Each name is
imported on first use, from the module that holds it: ``mcpactor serve`` over stdio
without a file reads none of the tables (the ``[http]`` one loads the HTTP options).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._exceptions import ConfigError as ConfigError

if TYPE_CHECKING:
    from ._admin import ADMIN_KEYS as ADMIN_KEYS
    from ._admin import AdminConfig as AdminConfig
    from ._assemble import MountConflict as MountConflict
    from ._assemble import ServerConfig as ServerConfig
    from ._assemble import assemble as assemble
    from ._assemble import target_configs as target_configs
    from ._auth import AUTH_KEYS as AUTH_KEYS
    from ._auth import MAX_INTROSPECTION_CACHE as MAX_INTROSPECTION_CACHE
    from ._auth import AuthConfig as AuthConfig
    from ._file import CONFIG_NAME as CONFIG_NAME
    from ._file import Config as Config
    from ._file import ToolSearchConfig as ToolSearchConfig
    from ._file import find_config as find_config
    from ._file import load_config as load_config
    from ._file import parse_config as parse_config
    from ._http import HttpConfig as HttpConfig
    from ._keys import STATE_KEYS_ENV as STATE_KEYS_ENV
    from ._keys import parse_state_keys as parse_state_keys
    from ._keys import read_state_keys as read_state_keys
    from ._keys import state_sealer as state_sealer
    from ._openapi import OpenAPIConfig as OpenAPIConfig
    from ._openapi import is_openapi_target as is_openapi_target
    from ._reader import NOT_A_NAME as NOT_A_NAME
    from ._reader import Reader as Reader
    from ._reader import line_of as line_of
    from ._store import DEFAULT_PREFIX as DEFAULT_PREFIX
    from ._store import StoreConfig as StoreConfig
    from ._store import prefix_problem as prefix_problem
    from ._targets import TargetError as TargetError
    from ._targets import load_hook as load_hook
    from ._targets import load_server as load_server
    from ._transforms import ARGUMENT_KEYS as ARGUMENT_KEYS
    from ._transforms import TOOL_KEYS as TOOL_KEYS
    from ._transforms import ToolTransformConfig as ToolTransformConfig

#: every name by the module that holds it
_NAMES = {
    "ADMIN_KEYS": "._admin",
    "AdminConfig": "._admin",
    "MountConflict": "._assemble",
    "ServerConfig": "._assemble",
    "assemble": "._assemble",
    "target_configs": "._assemble",
    "AUTH_KEYS": "._auth",
    "MAX_INTROSPECTION_CACHE": "._auth",
    "AuthConfig": "._auth",
    "CONFIG_NAME": "._file",
    "Config": "._file",
    "ToolSearchConfig": "._file",
    "find_config": "._file",
    "load_config": "._file",
    "parse_config": "._file",
    "HttpConfig": "._http",
    "OpenAPIConfig": "._openapi",
    "is_openapi_target": "._openapi",
    "STATE_KEYS_ENV": "._keys",
    "parse_state_keys": "._keys",
    "read_state_keys": "._keys",
    "state_sealer": "._keys",
    "NOT_A_NAME": "._reader",
    "Reader": "._reader",
    "line_of": "._reader",
    "DEFAULT_PREFIX": "._store",
    "StoreConfig": "._store",
    "prefix_problem": "._store",
    "TargetError": "._targets",
    "load_hook": "._targets",
    "load_server": "._targets",
    "ARGUMENT_KEYS": "._transforms",
    "TOOL_KEYS": "._transforms",
    "ToolTransformConfig": "._transforms",
}

__all__ = [
    "ADMIN_KEYS",
    "ARGUMENT_KEYS",
    "AUTH_KEYS",
    "CONFIG_NAME",
    "DEFAULT_PREFIX",
    "MAX_INTROSPECTION_CACHE",
    "NOT_A_NAME",
    "STATE_KEYS_ENV",
    "TOOL_KEYS",
    "AdminConfig",
    "AuthConfig",
    "Config",
    "ConfigError",
    "HttpConfig",
    "MountConflict",
    "OpenAPIConfig",
    "Reader",
    "ServerConfig",
    "StoreConfig",
    "TargetError",
    "ToolSearchConfig",
    "ToolTransformConfig",
    "assemble",
    "find_config",
    "is_openapi_target",
    "line_of",
    "load_config",
    "load_hook",
    "load_server",
    "parse_config",
    "parse_state_keys",
    "prefix_problem",
    "read_state_keys",
    "state_sealer",
    "target_configs",
]


def __getattr__(name: str) -> Any:
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
