"""mbdcore: planar flexible multibody dynamics, knowing nothing of FMI or controllers.

Layers, each importing only those before it:

* :mod:`mbdcore.blocks` -- the Block contract (named inputs, outputs, parameters, state, step);
  :mod:`mbdcore.timeseries` -- the one result type
* :mod:`mbdcore.integrators` -- ODE integrators and their table
* :mod:`mbdcore.dae` -- constrained equations of motion: formulations, implicit integrators,
  the simulation driver
* :mod:`mbdcore.multibody` -- the general engine: bodies, joints, forces, analysis, model files
* :mod:`mbdcore.spatial` -- spatial (3D) bodies: ANCF cables
* :mod:`mbdcore.models` -- ready-made models: mechanisms, the flexible arm, drives, antennas

See ``docs/architecture.md``.

Messages go through :mod:`logging` under ``mbdcore`` (a kernel compiled on first use);
the package configures nothing but a ``NullHandler``.  A model leaving its range of
validity is a :class:`mbdcore.blocks.ModelRangeWarning` (:mod:`warnings`).
"""
import logging

__all__ = ["blocks", "timeseries", "integrators", "dae", "multibody", "spatial", "models"]

logging.getLogger(__name__).addHandler(logging.NullHandler())
