"""Spatial (3D) flexible multibody dynamics: ANCF cables and fully parameterised beams
(``ancf``; the element loops of their forces and tangents in C, ``native/ancf3d.c``)
and the single-body analyses with held coordinates used to check them.  See
docs/spatial.md."""

from mbdcore.spatial.ancf import (
    ANCF3D_C_SOURCE,
    ANCFBeam3D,
    ANCFCable,
    CableEquilibriumError,
    CableState,
    ConservativeMoment,
    DeadPointLoad,
    HeldCoordinates,
    StaticDeflection,
    StrainTable,
    static_deflection,
    vibration_modes,
)

__all__ = ["ANCF3D_C_SOURCE", "ANCFBeam3D", "ANCFCable", "CableEquilibriumError", "CableState",
           "ConservativeMoment", "DeadPointLoad", "HeldCoordinates", "StaticDeflection",
           "StrainTable",
           "static_deflection", "vibration_modes"]
