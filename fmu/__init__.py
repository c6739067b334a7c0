"""fmu: FMI 2.0 co-simulation for flexcosim blocks.

* :mod:`fmu.fmi` -- any Block as an FMU (slave, builder, native wrapper)
* :mod:`fmu.cosim` -- the co-simulation master, systems of components, SSP files

Imports :mod:`mbdcore` only; see ``docs/architecture.md``.
"""

__all__ = ["fmi", "cosim"]
