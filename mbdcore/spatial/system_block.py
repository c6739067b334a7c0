"""Any model file of either dimension as a Block (and so, through fmu.fmi.build, as an
FMU): the planar :class:`~mbdcore.multibody.system_block.SystemBlock` with the reader of
:mod:`mbdcore.spatial.model_file`, which builds a spatial system for ``"dimension": 3``
and hands planar dicts to the planar reader.

The planar block lives below the spatial engine and cannot read 3D files (the layers
keep :mod:`mbdcore.multibody` free of spatial imports); this subclass changes nothing
but the reader, so stepping, restarts at input jumps, state, rollback and the refusal of
non-finite states are the planar block's.  Signals of a spatial system: coordinates
(``box.x`` [m], ``box.ux`` [1] ...), their rates, reactions, marker positions
``position.<body>.<marker>.x|y|z`` [m], hinge angles ``angle.<joint>`` [rad] of the
revolute joints with a frame on both sides, ``energy`` [J], ``violation``.
"""
from __future__ import annotations

from mbdcore.multibody.system_block import SystemBlock
from mbdcore.spatial.model_file import SPATIAL_FORMAT

__all__ = ["SpatialSystemBlock", "spatial_system_block"]


class SpatialSystemBlock(SystemBlock):
    """A multibody System of either dimension as a block (configure it with
    :meth:`~mbdcore.multibody.system_block.SystemBlock.configured`)."""

    MODEL_FORMAT = SPATIAL_FORMAT


def spatial_system_block(model, inputs=None, outputs=None, name: str | None = None):
    """Block class of a model of either dimension given as a path, a model dict or a
    System (see :meth:`~mbdcore.multibody.system_block.SystemBlock.for_model`)."""
    return SpatialSystemBlock.for_model(model, inputs, outputs, name)
