"""What every system file is held to, SSP or JSON: the error that names what is wrong
(:class:`SSPError`), the names a file may give its components and variables, which Python
blocks it may name -- safe by default, see :mod:`fmu.cosim.ssp` -- and how such a block
is built from the values the file binds."""
from __future__ import annotations

import importlib
import importlib.util
import reprlib
import unicodedata
from pathlib import Path
from typing import Any

from fmu.cosim.components import BlockComponent, Component
from mbdcore.blocks import Block

__all__ = ["SSPError", "BLOCK_SCHEME", "PROJECT_BLOCKS", "PROJECT_PACKAGES", "check_name",
           "check_component_name", "check_allow", "refuse_block", "block_component",
           "short_repr"]

BLOCK_SCHEME = "python:"


class SSPError(ValueError):
    """A system file is malformed or uses something not supported; names the element."""


#: ``allow_python_blocks`` default: the project's own blocks only (module docstring)
PROJECT_BLOCKS = "project"


#: The packages whose modules are the project's own blocks
PROJECT_PACKAGES = ("mbdcore", "controllers", "fmu")


#: Where the project's packages are installed: a package of that name elsewhere is not ours
_PROJECT_ROOT = Path(__file__).resolve().parents[2]


#: Characters no name may hold: they end a CSV line or a log line, or reorder what a
#: terminal shows (bidirectional overrides)
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def check_name(name: str, where: str) -> None:
    """Refuse a component, variable or parameter name with a control character (C0, C1,
    DEL), a line or paragraph separator or a bidirectional override, naming it."""
    for ch in name:
        if unicodedata.category(ch) in ("Cc", "Zl", "Zp") or ch in _BIDI_CONTROLS:
            raise SSPError(f"{where}: the name {short_repr(name)} holds the control character "
                           f"U+{ord(ch):04X} ({unicodedata.name(ch, 'control')}): accepted "
                           "are names without control characters")


def check_component_name(name: str, where: str) -> None:
    """A component's name: non-empty, no '.' (it separates the component from the
    variable in a connection), no control character."""
    check_name(name, where)
    if not name or "." in name:
        raise SSPError(f"{where}: the component name {short_repr(name)} is invalid: accepted are "
                       "non-empty names without '.'")


def check_allow(allow: Any) -> None:
    if allow is not True and allow is not False and allow != PROJECT_BLOCKS:
        raise ValueError(f"allow_python_blocks = {allow!r}: accepted: {PROJECT_BLOCKS!r} (the "
                         "project's own blocks, the default), True (any module), False (none)")


def _is_project_module(module: str) -> bool:
    """Is ``module`` inside one of :data:`PROJECT_PACKAGES` as installed with this file?
    Found without importing anything (``find_spec`` of the top-level package only)."""
    top = module.split(".")[0]
    if top not in PROJECT_PACKAGES or not all(p.isidentifier() for p in module.split(".")):
        return False
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    locations = list(getattr(spec, "submodule_search_locations", None) or ())
    return bool(locations) and all(Path(loc).resolve() == _PROJECT_ROOT / top
                                   for loc in locations)


def refuse_block(source: str, allow: Any, where: str, label: str) -> None:
    """Raise SSPError if the Python block ``source`` is not allowed (module docstring);
    nothing is imported."""
    ref = source[len(BLOCK_SCHEME):] if source.startswith(BLOCK_SCHEME) else source
    module = ref.partition(":")[0]
    if allow is True or (allow == PROJECT_BLOCKS and _is_project_module(module)):
        return
    if allow is False:
        raise SSPError(f"{label}: {where} references the Python block {source!r}; Python blocks "
                       "are not allowed here (allow_python_blocks=False, --no-python-blocks)")
    raise SSPError(f"{label}: {where} references the Python block {source!r}, which is not one "
                   f"of the project's own ({', '.join(PROJECT_PACKAGES)}): importing it would "
                   "run its code; if you trust this file, allow it with --allow-python-blocks "
                   "(allow_python_blocks=True)")


def block_component(name: str, source: str, values: dict, where: str, label: str) -> Component:
    ref = source[len(BLOCK_SCHEME):] if source.startswith(BLOCK_SCHEME) else source
    module, _, qualname = ref.partition(":")
    if not module or not qualname:
        raise SSPError(f"{label}: {where}: source {source!r} must read "
                       f"'{BLOCK_SCHEME}package.module:ClassName'")
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise SSPError(f"{label}: {where}: cannot import the block {ref!r}: {e}") from None
    if not (isinstance(obj, type) and issubclass(obj, Block)):
        raise SSPError(f"{label}: {where}: {ref!r} is not a mbdcore.blocks.Block class")
    inputs = {k: v for k, v in values.items() if k in obj.input_names()}
    params = {k: v for k, v in values.items() if k not in inputs}
    try:
        block = obj(**params)
        for k, v in inputs.items():
            block.set_input(k, v)
    except ValueError as e:        # ParameterError, InputError: they name the value
        raise SSPError(f"{label}: {where}: {e}") from None
    except Exception as e:  # noqa: BLE001 - values in range the block cannot be built from
        raise SSPError(f"{label}: {where}: {ref!r} cannot be built from the values given "
                       f"({type(e).__name__}: {e})") from None
    return BlockComponent(name, block)


#: repr for a message, bounded in depth and length (plain repr of a list nested 5000
#: deep exceeds the recursion limit)
_SHORT_REPR = reprlib.Repr()


for _name, _limit in (("maxlevel", 4), ("maxstring", 60), ("maxother", 60), ("maxlist", 8),
                      ("maxdict", 8)):   # keywords of Repr() from Python 3.12 only
    setattr(_SHORT_REPR, _name, _limit)


def short_repr(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**60:
        return "a huge integer"
    text = _SHORT_REPR.repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
