"""The co-simulation side: components (Python blocks and FMUs), systems of
connected components, the master that steps them, SSP import/export, and
``cosimulate`` (one call from a system or file to its result)."""

from fmu.cosim.master import (
    FMI_LOG_LEVELS,
    AlgebraicLoopError,
    BlockComponent,
    Component,
    ComponentError,
    ComponentTerminated,
    CosimError,
    CosimInterrupted,
    FMUComponent,
    Master,
    RealTimeStats,
    Result,
    StepControl,
    System,
    Termination,
    check_archive,
    safe_extract,
)
from fmu.cosim.simulate import MissingExperimentError, cosimulate
from fmu.cosim.ssp import (
    SSPError,
    export_ssp,
    import_ssp,
    load_system,
    save_system,
    system_from_dict,
    system_to_dict,
)

__all__ = [
    "AlgebraicLoopError",
    "BlockComponent",
    "Component",
    "ComponentError",
    "ComponentTerminated",
    "CosimError",
    "CosimInterrupted",
    "FMUComponent",
    "Master",
    "RealTimeStats",
    "FMI_LOG_LEVELS",
    "Result",
    "StepControl",
    "System",
    "Termination",
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
