"""Components wired by name: :class:`System` (``"plant.theta" -> "ctrl.theta"``)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from fmu.cosim.components import Component

__all__ = ["System"]


def _split(ref: str) -> tuple[str, str]:
    comp, dot, var = str(ref).partition(".")
    if not dot or not comp or not var:
        raise ValueError(f"connection end {ref!r} must be written 'component.variable'")
    return comp, var


class System:
    """Components wired by name.

    Parameters
    ----------
    components : sequence of Component
        The components; names must be unique.  Their order is the default tie-break
        of every ordering the master makes.
    connections : dict or sequence of (str, str)
        ``"src.output" -> "dst.input"``.  As a dict the value may also be a list of
        inputs (one output feeding several inputs).  An FMI 3.0 array connected by its
        name (``"arm.theta" -> "pd.theta"``) is its elements connected in order
        (``theta[1]`` to ``theta[1]``, ...); the two must have as many.  Every input has at most one
        source; unconnected inputs keep their current (start) value.
    experiment : dict, optional
        Default experiment of the system (from a file): ``start_time``,
        ``stop_time``, ``step`` [s], ``method``, ``extrapolation``; any may be missing.

    Raises
    ------
    ValueError
        Duplicate component names, unknown components or variables, an input used as
        a source or an output as a destination, an input connected twice.
    """

    def __init__(self, components: Sequence[Component],
                 connections: Mapping[str, str | Sequence[str]] | Iterable[tuple[str, str]] = (),
                 experiment: Mapping[str, Any] | None = None):
        self.components: list[Component] = list(components)
        self.experiment: dict[str, Any] = dict(experiment or {})
        #: what the system's files live in and lives as long as it does (the folder an SSP
        #: archive was unpacked into, a ``tempfile.TemporaryDirectory``), or None
        self.unpacked: Any = None
        self.by_name: dict[str, Component] = {}
        for c in self.components:
            if not isinstance(c, Component):
                raise TypeError(f"expected a Component, got {type(c).__name__} "
                                "(wrap blocks in BlockComponent, FMUs in FMUComponent)")
            if c.name in self.by_name:
                raise ValueError(f"two components are named {c.name!r}")
            self.by_name[c.name] = c

        pairs: list[tuple[str, str]] = []
        if isinstance(connections, Mapping):
            for src, dst in connections.items():
                for d in ([dst] if isinstance(dst, str) else dst):
                    pairs.append((src, d))
        else:
            pairs = [tuple(p) for p in connections]

        #: destination "comp.input" -> source "comp.output"
        self.connections: dict[str, str] = {}
        for src, dst in [p for pair in pairs for p in self._elementwise(*pair)]:
            sc, sv = self._end(src, "output")
            dc, dv = self._end(dst, "input")
            key = f"{dc}.{dv}"
            if key in self.connections:
                raise ValueError(f"input {key!r} is connected twice: from "
                                 f"{self.connections[key]!r} and from {sc}.{sv!s}")
            self.connections[key] = f"{sc}.{sv}"

    def _elementwise(self, src: str, dst: str) -> list[tuple[str, str]]:
        """A connection of two arrays by name as the connections of their elements."""
        ends = []
        for ref, kind in ((src, "output"), (dst, "input")):
            comp, var = _split(ref)
            c = self.by_name.get(comp)
            names = () if c is None else (c.outputs if kind == "output" else c.inputs)
            if var in names:
                return [(src, dst)]
            ends.append([f"{comp}.{n}" for n in names if n.startswith(var + "[")])
        if not ends[0] or not ends[1]:
            return [(src, dst)]          # _end names what is wrong
        if len(ends[0]) != len(ends[1]):
            raise ValueError(f"connection {src!r} -> {dst!r}: arrays of {len(ends[0])} and "
                             f"{len(ends[1])} elements")
        return list(zip(*ends))

    def _end(self, ref: str, kind: str) -> tuple[str, str]:
        comp, var = _split(ref)
        c = self.by_name.get(comp)
        if c is None:
            raise ValueError(f"connection {ref!r}: unknown component {comp!r}; "
                             f"components: {', '.join(self.by_name)}")
        names = c.outputs if kind == "output" else c.inputs
        strings = getattr(c, "string_variables", {})
        if var not in names and var in strings:
            raise ValueError(f"connection {ref!r}: '{comp}.{var}' is a String {strings[var]} of "
                             f"{comp!r}: String variables are not connectable (only Real, "
                             "Integer, Enumeration and Boolean values are exchanged); a String "
                             "input can be given a value as a parameter")
        if var not in names:
            raise ValueError(f"connection {ref!r}: {var!r} is not an {kind} of {comp!r}; "
                             f"{kind}s: {', '.join(names) or '(none)'}")
        return comp, var

    def __repr__(self) -> str:
        return (f"System({[c.name for c in self.components]}, "
                f"{ {v: k for k, v in self.connections.items()} })")
