"""The FMI side: any Block as an FMI 2.0 co-simulation slave, the FMU builder and
the native FMI wrapper it compiles."""

from fmu.fmi.build import (
    EMBEDDED_PACKAGES,
    FMU_OPTIONS,
    build_fmu,
    native_binary,
    python_environment,
)
from fmu.fmi.slave import STATE_OPTIONS, BlockSlave, si_base_exponents

__all__ = [
    "BlockSlave",
    "si_base_exponents",
    "STATE_OPTIONS",
    "build_fmu",
    "native_binary",
    "python_environment",
    "EMBEDDED_PACKAGES",
    "FMU_OPTIONS",
]
