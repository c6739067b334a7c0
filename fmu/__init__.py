"""fmu: FMI 2.0 co-simulation for flexcosim blocks.

* :mod:`fmu.fmi` -- any Block as an FMU (slave, builder, native wrapper)
* :mod:`fmu.cosim` -- the co-simulation master, systems of components, SSP files

Imports :mod:`mbdcore` only; see ``docs/architecture.md``.

Messages (an FMU's log, real-time overruns) go through :mod:`logging` under ``fmu``; the
package configures nothing but a ``NullHandler``, so that it prints nothing unless the
application sets up logging.
"""
import logging

__all__ = ["fmi", "cosim"]

logging.getLogger(__name__).addHandler(logging.NullHandler())
