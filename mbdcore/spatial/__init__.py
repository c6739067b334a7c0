"""Spatial (3D) multibody dynamics on the planar engine's assembly: natural-coordinate
rigid bodies and slender bars, spatial joints, gears and drivers, body torques, the
System with 3D gravity and redundant-constraint handling; ANCF cables and fully
parameterised beams (``ancf``; the element loops of their forces and tangents in C,
``native/ancf3d.c``) and the single-body analyses with held coordinates used to check
them; model files of either dimension (``model_file``: ``load_model`` reads planar and
spatial files) and any such model as a Block (``system_block``) (docs/spatial.md)."""

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
from mbdcore.spatial.model_file import (
    BODY_TYPES,
    DIMENSION,
    MODEL_SCHEMA,
    format_reference,
    load_model,
    model_dimension,
    model_from_dict,
    model_to_dict,
    save_model,
    validate_model,
)
from mbdcore.spatial.system import SpatialSystem
from mbdcore.spatial.system_block import SpatialSystemBlock, spatial_system_block

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
    "BODY_TYPES",
    "DIMENSION",
    "MODEL_SCHEMA",
    "format_reference",
    "load_model",
    "model_dimension",
    "model_from_dict",
    "model_to_dict",
    "save_model",
    "validate_model",
    "SpatialSystemBlock",
    "spatial_system_block",
]
