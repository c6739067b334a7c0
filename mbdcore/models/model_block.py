"""Any model file as a Block (and so, through fmu.fmi.build, as an FMU), the models
layer's elements included: the planar :class:`~mbdcore.multibody.system_block.SystemBlock`
with the reader of :mod:`mbdcore.models.model_file`, which reads planar files, spatial
ones, and spatial ones with DC motors, screw drives and latches (a ring truss written by
``save_model(truss.system, path)``).

As :class:`~mbdcore.spatial.system_block.SpatialSystemBlock` does one layer down, this
subclass changes nothing but the reader: stepping, restarts at input jumps and at a
latch's engagement, state with the latches' discrete state, rollback and the refusal of
non-finite states are the planar block's.  Inputs: the system's (a motor's supply
voltage ``voltage{k}`` [V], from the file's ``motor_voltage`` forces); outputs: those of
any spatial system (coordinates ``motor0.phi`` [rad], ``motor0.charge`` [C] and their
rates, the current ``der(motor0.charge)`` [A], marker positions, hinge angles,
reactions, energy, violation).
"""
from __future__ import annotations

from mbdcore.models.model_file import MODEL_FORMAT
from mbdcore.spatial.system_block import SpatialSystemBlock

__all__ = ["ModelSystemBlock", "model_system_block"]


class ModelSystemBlock(SpatialSystemBlock):
    """A multibody System of either dimension, with the models layer's elements, as a
    block (configure it with
    :meth:`~mbdcore.multibody.system_block.SystemBlock.configured`)."""

    MODEL_FORMAT = MODEL_FORMAT


def model_system_block(model, inputs=None, outputs=None, name: str | None = None):
    """Block class of a model given as a path, a model dict or a System (see
    :meth:`~mbdcore.multibody.system_block.SystemBlock.for_model`)."""
    return ModelSystemBlock.for_model(model, inputs, outputs, name)
