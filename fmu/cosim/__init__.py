"""The co-simulation side: components (Python blocks and FMUs), systems of
connected components, the master that steps them, and SSP import/export."""

from fmu.cosim.master import (AlgebraicLoopError, BlockComponent, Component, ComponentError,
    CosimError, FMUComponent, Master, RealTimeStats, Result, StepControl, System,
    check_archive, safe_extract)
from fmu.cosim.ssp import (SSPError, export_ssp, import_ssp, load_system, save_system,
    system_from_dict, system_to_dict)
from fmu.cosim.simulate import (cosimulate, MissingExperimentError)

__all__ = [
    "AlgebraicLoopError",
    "BlockComponent",
    "Component",
    "ComponentError",
    "CosimError",
    "FMUComponent",
    "Master",
    "RealTimeStats",
    "Result",
    "StepControl",
    "System",
    "check_archive",
    "safe_extract",
    "SSPError",
    "export_ssp",
    "import_ssp",
    "load_system",
    "save_system",
    "system_from_dict",
    "system_to_dict",
    "cosimulate",
    "MissingExperimentError",
]
