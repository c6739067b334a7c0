"""The co-simulation side: components (Python blocks and FMUs), systems of
connected components, the master that steps them, SSP import/export, and
``cosimulate`` (one call from a system or file to its result)."""

from fmu.cosim.archive import check_archive, safe_extract
from fmu.cosim.components import BlockComponent, Component
from fmu.cosim.errors import (
    AlgebraicLoopError,
    ComponentError,
    ComponentTerminated,
    CosimError,
    CosimInterrupted,
    Termination,
)
from fmu.cosim.fmu_component import FMI_LOG_LEVELS, FMUComponent
from fmu.cosim.master import Master, StepControl
from fmu.cosim.pacing import RealTimeStats
from fmu.cosim.recording import Result
from fmu.cosim.simulate import ExperimentValues, auto_interval, cosimulate, experiment_values
from fmu.cosim.file_rules import SSPError
from fmu.cosim.ssp import export_ssp, import_ssp
from fmu.cosim.system_file import load_system, save_system, system_from_dict, system_to_dict
from fmu.cosim.system import System

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
    "experiment_values",
    "ExperimentValues",
    "auto_interval",
]
