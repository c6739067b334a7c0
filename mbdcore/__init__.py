"""mbdcore: planar flexible multibody dynamics, knowing nothing of FMI or controllers.

Layers, each importing only those before it:

* :mod:`mbdcore.blocks` -- the Block contract (named inputs, outputs, parameters, state, step);
  :mod:`mbdcore.timeseries` -- the one result type; :mod:`mbdcore.jit` -- compiled kernels
* :mod:`mbdcore.integrators` -- ODE integrators and their table
* :mod:`mbdcore.dae` -- constrained equations of motion: formulations, implicit integrators,
  the simulation driver
* :mod:`mbdcore.multibody` -- the general engine: bodies, joints, forces, analysis, model files
* :mod:`mbdcore.spatial` -- spatial (3D) bodies: ANCF cables
* :mod:`mbdcore.models` -- ready-made models: mechanisms, the flexible arm, drives, antennas

See ``docs/architecture.md``.
"""

__all__ = ["blocks", "jit", "timeseries", "integrators", "dae", "multibody", "spatial", "models"]
