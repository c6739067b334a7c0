"""Spatial (3D) multibody dynamics on the planar engine's assembly: natural-coordinate
rigid bodies and slender bars, spatial joints, gears and drivers, body torques, the
System with 3D gravity and redundant-constraint handling; ANCF cables and fully
parameterised beams (``ancf``; the element loops of their forces and tangents in C,
``native/ancf3d.c``) and the single-body analyses with held coordinates used to check
them (docs/spatial.md)."""

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
from mbdcore.spatial.bodies import (
    ORTHONORMAL_TOLERANCE,
    BarLengthConstraint,
    BarState,
    RigidBody3D,
    RigidFrameConstraint,
    RigidState3D,
    SlenderBar,
    natural_mass_moments,
)
from mbdcore.spatial.forces import BodyTorque
from mbdcore.spatial.joints import (
    AngleDriver,
    CableClamp,
    Fixed,
    Prismatic,
    Revolute,
    Spherical,
    SynchronousGear,
    perpendicular_pair,
)
from mbdcore.spatial.kinematics import (
    Scalar,
    Vec,
    dot,
    point,
    relative_angle,
    slope,
    vector,
)
from mbdcore.spatial.system import SpatialSystem

__all__ = [
    "ORTHONORMAL_TOLERANCE",
    "natural_mass_moments",
    "RigidBody3D",
    "RigidState3D",
    "RigidFrameConstraint",
    "SlenderBar",
    "BarState",
    "BarLengthConstraint",
    "BodyTorque",
    "Spherical",
    "Revolute",
    "Prismatic",
    "Fixed",
    "CableClamp",
    "SynchronousGear",
    "AngleDriver",
    "perpendicular_pair",
    "Vec",
    "Scalar",
    "point",
    "slope",
    "vector",
    "dot",
    "relative_angle",
    "SpatialSystem",
    "ANCF3D_C_SOURCE",
    "ANCFBeam3D",
    "ANCFCable",
    "CableEquilibriumError",
    "CableState",
    "ConservativeMoment",
    "DeadPointLoad",
    "HeldCoordinates",
    "StaticDeflection",
    "StrainTable",
    "static_deflection",
    "vibration_modes",
]
