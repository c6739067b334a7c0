"""What the master steps: the :class:`Component` interface and :class:`BlockComponent`,
a Python :class:`~mbdcore.blocks.Block` as a component (the FMU is
:class:`fmu.cosim.fmu_component.FMUComponent`)."""

from __future__ import annotations

import logging
from collections import deque
from typing import Any, Callable, Mapping, Sequence

from fmu.cosim.errors import ComponentError
from mbdcore.blocks import Block

__all__ = ["COMPONENT_LOGGER", "BlockComponent", "Component"]

#: The parent of every component's logger, ``fmu.cosim.master.<name>``: the master's
#: logger, by its name (documented and tested, applications filter on it).
COMPONENT_LOGGER = logging.getLogger("fmu.cosim.master")


class Component:
    """Interface of everything the master can step.

    Subclasses set ``name``, ``inputs``, ``outputs``, ``feedthrough`` and ``units``
    and implement the methods below.  The master uses the positional fast paths
    (:meth:`input_setter`, :meth:`get_output_values`); the name-based
    :meth:`set_inputs` / :meth:`get_outputs` are for users.

    Attributes
    ----------
    name : str
        Instance name, unique in a :class:`System`; no ``"."``.
    inputs, outputs : tuple of str
        Variable names.
    feedthrough : dict of str to tuple of str
        Output name -> input names it depends on directly (at the same instant).
    units : dict of str to str
        Variable name -> unit (FMI notation, ``""`` if dimensionless).
    log : collections.deque of str
        Log messages (FMU logger callback), newest last.
    logger : logging.Logger
        ``fmu.cosim.master.<name>``: where those messages are also emitted as they
        arrive (:mod:`fmu.cosim.master`, *Messages and progress*).
    """

    name: str
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    feedthrough: dict[str, tuple[str, ...]] = {}
    units: dict[str, str] = {}

    def __init__(self, name: str):
        if not isinstance(name, str) or not name or "." in name:
            raise ValueError(f"component name {name!r} must be a non-empty string without '.'")
        self.name = name
        self.log: deque[str] = deque(maxlen=1000)
        self.logger = COMPONENT_LOGGER.getChild(name)

    # -- lifecycle -------------------------------------------------------------------
    def initialize(self, t0: float, stop_time: float | None = None) -> None:
        """Bring the component to its initial state at ``t0`` [s]."""
        raise NotImplementedError

    def do_step(self, t: float, h: float) -> None:
        """Advance from ``t`` to ``t + h`` [s] with the inputs held; ComponentError on failure,
        :class:`ComponentTerminated` when the component asks to end the simulation."""
        raise NotImplementedError

    def terminate(self) -> None:
        """Release what :meth:`initialize` acquired; safe to call more than once."""

    # -- values ----------------------------------------------------------------------
    def input_setter(self, names: Sequence[str]) -> Callable[[Sequence[float]], None]:
        """A function setting the inputs ``names`` (in this order) from a sequence of values.

        Built once by the master so that per-step calls do no name look-ups.
        """
        raise NotImplementedError

    def get_output_values(self) -> list[float]:
        """All outputs at the current time, in the order of :attr:`outputs`."""
        raise NotImplementedError

    def get_input_values(self) -> list[float]:
        """Current input values, in the order of :attr:`inputs`."""
        raise NotImplementedError

    def set_inputs(self, values: Mapping[str, float]) -> None:
        """Set inputs by name."""
        unknown = [n for n in values if n not in self.inputs]
        if unknown:
            raise ComponentError(f"{self.name!r} has no input(s) {', '.join(map(repr, unknown))}; "
                                 f"inputs: {', '.join(self.inputs)}", variable=unknown[0])
        names = list(values)
        self.input_setter(names)([values[n] for n in names])

    def get_outputs(self) -> dict[str, float]:
        """All outputs at the current time, by name."""
        return dict(zip(self.outputs, self.get_output_values()))

    # -- state -----------------------------------------------------------------------
    def get_state(self) -> Any:
        """An opaque copy of the component state (for rollback)."""
        raise NotImplementedError(f"{type(self).__name__} cannot save its state")

    def set_state(self, state: Any) -> None:
        """Restore a state returned by :meth:`get_state`."""
        raise NotImplementedError(f"{type(self).__name__} cannot restore its state")

    def snapshot(self) -> Any:
        """The state for a rollback of the master (valid until the next snapshot).

        Unlike :meth:`get_state` it may reuse storage, so only the newest snapshot can
        be restored; the default is :meth:`get_state`.
        """
        return self.get_state()

    def restore(self, snap: Any) -> None:
        """Return to the state of :meth:`snapshot`."""
        self.set_state(snap)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.name!r}, inputs={list(self.inputs)}, "
                f"outputs={list(self.outputs)})")


class BlockComponent(Component):
    """A Python :class:`~mbdcore.blocks.Block` as a co-simulation component.

    Parameters
    ----------
    name : str
        Instance name.
    block : Block
        The block; it is stepped in place.
    """

    def __init__(self, name: str, block: Block):
        super().__init__(name)
        if not isinstance(block, Block):
            raise TypeError(f"component {name!r}: expected a Block, got {type(block).__name__}")
        self.block = block
        self.inputs = tuple(block.input_names())
        self.outputs = tuple(block.output_names())
        self.units = {s.name: s.unit for s in (*block.INPUTS, *block.OUTPUTS)}
        bad = {o: tuple(ins) for o, ins in block.FEEDTHROUGH.items()
               if o not in self.outputs or any(i not in self.inputs for i in ins)}
        if bad:
            raise ValueError(f"{type(block).__name__}.FEEDTHROUGH names unknown variables: {bad}")
        self.feedthrough = {o: tuple(block.FEEDTHROUGH.get(o, ())) for o in self.outputs}

    def initialize(self, t0: float, stop_time: float | None = None) -> None:
        try:
            self.block.reset(t0)
        except Exception as e:
            raise ComponentError(f"reset failed: {type(e).__name__}: {e}") from e

    def do_step(self, t: float, h: float) -> None:
        try:
            self.block.do_step(t, h)
        except Exception as e:
            raise ComponentError(f"do_step failed: {type(e).__name__}: {e}",
                                 variable=getattr(e, "variable", None)) from e

    def input_setter(self, names: Sequence[str]) -> Callable[[Sequence[float]], None]:
        names = tuple(names)
        for n in names:
            if n not in self.inputs:
                raise ComponentError(f"{self.name!r} has no input {n!r}", variable=n)
        block = self.block

        def set_values(values: Sequence[float]) -> None:
            # All or nothing, as Block.set_inputs, but knowing which input failed.
            saved = block.inputs
            block.inputs = dict(saved)
            for n, v in zip(names, values):
                try:
                    block.set_input(n, v)
                except Exception as e:
                    block.inputs = saved
                    raise ComponentError(f"input {n!r} rejected: {e}", variable=n) from e

        return set_values

    def get_output_values(self) -> list[float]:
        try:
            out = self.block.outputs()
            return [float(out[n]) for n in self.outputs]
        except Exception as e:
            raise ComponentError(f"outputs() failed: {type(e).__name__}: {e}") from e

    def get_input_values(self) -> list[float]:
        return [float(self.block.inputs[n]) for n in self.inputs]

    def get_state(self) -> Any:
        return self.block.get_state()

    def set_state(self, state: Any) -> None:
        self.block.set_state(state)
