"""Systems in the small JSON form, and the one reader and writer of every system file
(:func:`load_system`, :func:`save_system`: SSP archive, SSP description, JSON, or a
single FMU by its suffix).  The form's keys are :data:`SYSTEM_KEYS`,
:data:`COMPONENT_KEYS` and :data:`EXPERIMENT_KEYS`; a component names an ``fmu`` (a path
relative to the file) or a Python ``block`` (``"package.module:ClassName"``, allowed as
:mod:`fmu.cosim.ssp` says)."""
from __future__ import annotations

import difflib
import json
import math
import os
from pathlib import Path
from typing import Any, Mapping

from fmu.cosim.components import BlockComponent, Component
from fmu.cosim.file_rules import (PROJECT_BLOCKS, SSPError, block_component, check_allow,
                                  check_component_name, check_name, refuse_block, short_repr)
from fmu.cosim.fmu_component import FMUComponent
from fmu.cosim.ssp import bound_values, export_ssp, import_ssp
from fmu.cosim.system import System

__all__ = ["SYSTEM_KEYS", "COMPONENT_KEYS", "EXPERIMENT_KEYS", "load_system", "save_system",
           "system_from_dict", "system_from_fmu", "system_to_dict"]

# ---------------------------------------------------------------------------------
# JSON and dispatch
# ---------------------------------------------------------------------------------
def system_to_dict(system: System, base: str | Path | None = None) -> dict[str, Any]:
    """A JSON-ready description: components (``fmu`` path or ``block`` import path,
    ``parameters``, ``feedthrough``), ``connections`` as [source, destination] pairs
    and ``experiment``.  FMU paths are made relative to ``base`` when given."""
    comps = []
    for c in system.components:
        values, _ = bound_values(c) if isinstance(c, (FMUComponent, BlockComponent)) else ({}, {})
        if isinstance(c, FMUComponent):
            fmu = c.fmu_path.resolve()
            entry = {"name": c.name, "fmu": (Path(os.path.relpath(fmu, Path(base).resolve()))
                                             .as_posix() if base is not None else str(fmu))}
            if c.feedthrough_override is not None:
                entry["feedthrough"] = {o: list(i) for o, i in c.feedthrough_override.items()}
        elif isinstance(c, BlockComponent):
            cls = type(c.block)
            entry = {"name": c.name, "block": f"{cls.__module__}:{cls.__qualname__}"}
        else:
            raise TypeError(f"component {c.name!r}: a {type(c).__name__} cannot be described")
        if values:
            entry["parameters"] = values
        comps.append(entry)
    return {"components": comps,
            "connections": [[src, dst] for dst, src in system.connections.items()],
            "experiment": dict(system.experiment)}


#: Keys of a JSON system, of its components and of its experiment.
SYSTEM_KEYS = ("components", "connections", "experiment")
COMPONENT_KEYS = ("name", "fmu", "block", "parameters", "feedthrough")
EXPERIMENT_KEYS = ("start_time", "stop_time", "step", "method", "extrapolation")
_METHODS = ("gauss-seidel", "jacobi")
_EXTRAPOLATIONS = (0, 1, "zero", "first")


def _check_keys(obj: Mapping, accepted: tuple[str, ...], where: str, label: str) -> None:
    """Refuse a key that is not one of ``accepted``, naming it and suggesting the closest."""
    for key in obj:
        if key not in accepted:
            close = difflib.get_close_matches(str(key), accepted, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise SSPError(f"{label}: {where}: unknown key {key!r}{hint}; accepted keys: "
                           f"{', '.join(accepted)}")


def _check_experiment(exp: Any, label: str) -> dict[str, Any]:
    if not isinstance(exp, Mapping):
        raise SSPError(f"{label}: experiment: expected an object with keys "
                       f"{', '.join(EXPERIMENT_KEYS)}, got {type(exp).__name__}")
    _check_keys(exp, EXPERIMENT_KEYS, "experiment", label)
    for key in ("start_time", "stop_time", "step"):
        if key in exp:
            v = exp[key]
            if not _finite_number(v):
                raise SSPError(f"{label}: experiment.{key} = {short_repr(v)}: accepted: a finite "
                               "number [s]")
    if "method" in exp and exp["method"] not in _METHODS:
        raise SSPError(f"{label}: experiment.method = {short_repr(exp['method'])}: accepted: "
                       f"{', '.join(_METHODS)}")
    if "extrapolation" in exp and (isinstance(exp["extrapolation"], bool)
                                   or exp["extrapolation"] not in _EXTRAPOLATIONS):
        raise SSPError(f"{label}: experiment.extrapolation = {short_repr(exp['extrapolation'])}: "
                       "accepted: 0, 1, 'zero', 'first'")
    return dict(exp)


#: repr for a message, bounded in depth and length (plain repr of a list nested 5000
#: deep exceeds the recursion limit)
def _finite_number(v: Any) -> bool:
    """A number (not a bool) whose value is finite as a float (10**400 is not)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        return math.isfinite(float(v))
    except OverflowError:
        return False


def _check_connections(conns: Any, label: str):
    """Connections as a mapping or a list of [source, destination] pairs of strings."""
    if isinstance(conns, Mapping):
        for src, dst in conns.items():
            if not (isinstance(dst, str) or (isinstance(dst, list)
                                             and all(isinstance(d, str) for d in dst))):
                raise SSPError(f"{label}: connections[{src!r}]: accepted: 'component.input' "
                               "or a list of them")
        return conns
    if not isinstance(conns, list):
        raise SSPError(f"{label}: connections = {short_repr(conns)}: accepted: a list of "
                       "['component.output', 'component.input'] pairs, or an object "
                       "{'component.output': 'component.input'}")
    for n, p in enumerate(conns):
        if not (isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)):
            raise SSPError(f"{label}: connections[{n}] = {short_repr(p)}: accepted: a pair "
                           "['component.output', 'component.input']")
    return [tuple(p) for p in conns]


def system_from_dict(data: Mapping[str, Any], base: str | Path = ".", *,
                     allow_python_blocks: bool | str = PROJECT_BLOCKS,
                     label: str = "system") -> System:
    """Inverse of :func:`system_to_dict`; relative FMU paths are taken from ``base``.

    Unknown keys (of the system, a component or the experiment) are refused naming the
    key and the accepted ones.  A component with a ``block`` that
    ``allow_python_blocks`` does not allow (module docstring: by default the project's own
    blocks only) is refused before anything is imported or loaded.
    """
    check_allow(allow_python_blocks)
    if not isinstance(data, Mapping) or not isinstance(data.get("components"), list):
        raise SSPError(f"{label}: expected an object with a list 'components'")
    _check_keys(data, SYSTEM_KEYS, "(top level)", label)
    for n, entry in enumerate(data["components"]):
        where = f"components[{n}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise SSPError(f"{label}: {where}: needs a string 'name'")
        check_component_name(entry["name"], f"{label}: {where}.name")
        where = f"components[{n}] ({entry['name']!r})"
        _check_keys(entry, COMPONENT_KEYS, where, label)
        if not isinstance(entry.get("parameters") or {}, Mapping):
            raise SSPError(f"{label}: {where}.parameters: accepted: an object "
                           "{name: value}")
        for key in entry.get("parameters") or {}:
            check_name(str(key), f"{label}: {where}.parameters")
        for key, accepted in (("block", "'package.module:ClassName'"),
                              ("fmu", "a path of an .fmu file")):
            if key in entry and not (isinstance(entry[key], str) and entry[key]):
                raise SSPError(f"{label}: {where}.{key} = {short_repr(entry[key])}: accepted: "
                               f"{accepted}")
        if "block" in entry:
            refuse_block(entry["block"], allow_python_blocks, where, label)
    experiment = _check_experiment(data.get("experiment") or {}, label)
    conns = _check_connections(data.get("connections", []), label)
    comps: list[Component] = []
    for n, entry in enumerate(data["components"]):
        where = f"components[{n}] ({entry['name']!r})"
        params = dict(entry.get("parameters") or {})
        if ("fmu" in entry) == ("block" in entry):
            raise SSPError(f"{label}: {where}: needs exactly one of 'fmu' (a path) or 'block' "
                           "('package.module:ClassName')")
        if "fmu" in entry:
            fmu = Path(base) / entry["fmu"]
            if not fmu.is_file():
                raise SSPError(f"{label}: {where}: FMU {str(fmu)!r} not found")
            try:
                comps.append(FMUComponent(entry["name"], fmu, parameters=params,
                                          feedthrough=entry.get("feedthrough")))
            except ValueError as e:
                raise SSPError(f"{label}: {where}: {e}") from None
        else:
            comps.append(block_component(entry["name"], str(entry["block"]), params, where, label))
    try:
        system = System(comps, conns)
    except (ValueError, TypeError) as e:
        raise SSPError(f"{label}: connections: {e}") from None
    system.experiment = experiment
    return system


def system_from_fmu(path: str | Path) -> System:
    """A system of one FMU and no connections (its inputs keep their start values), the
    component named by the file's stem; the experiment is the FMU's ``DefaultExperiment``
    (start, stop, step size: whichever it gives)."""
    path = Path(path)
    if not path.is_file():
        raise SSPError(f"{path}: FMU not found")
    fmu = FMUComponent(path.stem, path)
    experiment: dict[str, Any] = {}
    de = fmu.model_description.defaultExperiment
    if de is not None:
        for key, attr in (("start_time", "startTime"), ("stop_time", "stopTime"),
                          ("step", "stepSize")):
            value = getattr(de, attr)
            if value is not None:
                experiment[key] = float(value)
    return System([fmu], experiment=_check_experiment(experiment, str(path)))


def load_system(path: str | Path, *, allow_python_blocks: bool | str = PROJECT_BLOCKS) -> System:
    """A system from an ``.ssp``, ``.ssd`` or ``.json`` file, or a single ``.fmu``
    (:func:`system_from_fmu`).

    A Python block runs code: its module is imported (and its top level executed) when
    the system is loaded.  By default only the project's own blocks are
    (``allow_python_blocks="project"``); ``True`` allows any module (``flexcosim cosim
    --allow-python-blocks``), ``False`` none (``--no-python-blocks``).  A block not
    allowed is refused before anything is imported (module docstring).
    """
    check_allow(allow_python_blocks)
    path = Path(path)
    if path.suffix in (".ssp", ".ssd"):
        return import_ssp(path, allow_python_blocks=allow_python_blocks)
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"),
                              object_pairs_hook=_object_without_duplicates)
        except SSPError as e:
            raise SSPError(f"{path}: {e}") from None
        except json.JSONDecodeError as e:
            raise SSPError(f"{path}: not valid JSON: {e}") from None
        except UnicodeDecodeError as e:
            raise SSPError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
        except ValueError as e:  # an integer of more than 4300 digits
            raise SSPError(f"{path}: not a valid system file: {e}") from None
        except RecursionError:
            raise SSPError(f"{path}: nested too deeply to be a system file") from None
        return system_from_dict(data, path.resolve().parent,
                                allow_python_blocks=allow_python_blocks, label=str(path))
    if path.suffix == ".fmu":
        return system_from_fmu(path)
    raise ValueError(f"{path}: unknown system file type; accepted: .ssp, .ssd, .json, .fmu")


def _object_without_duplicates(pairs: list) -> dict:
    """A JSON object whose keys are distinct (json keeps the last of a repeated key
    silently: a parameter given twice would take the value further down)."""
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise SSPError(f"key {short_repr(key)} is given twice in one object: accepted: each "
                           "key once")
        out[key] = value
    return out


def save_system(system: System, path: str | Path, **experiment: Any) -> Path:
    """Write ``system`` as ``.ssp``/``.ssd`` (:func:`export_ssp`) or ``.json``."""
    path = Path(path)
    if path.suffix == ".json":
        data = system_to_dict(system, path.resolve().parent)
        data["experiment"].update({k: v for k, v in experiment.items() if v is not None})
        path.write_text(json.dumps(data, indent=2))
        return path
    return export_ssp(system, path, **experiment)

