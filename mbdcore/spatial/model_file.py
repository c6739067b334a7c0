"""Spatial (3D) multibody models as declarative files: the planar format of
:mod:`mbdcore.multibody.model_file` with ``"dimension": 3`` (docs/spatial.md, "Model
files").

The keys are the constructors' arguments, as in the planar files; SI units (m, rad, kg,
s, N); every vector has three components in the ground frame::

    {"format": "flexcosim-model", "version": 1, "dimension": 3,
     "gravity": [0, 0, -9.81], "redundant": "remove",
     "ground": {"markers": {"O": [0, 0, 0]}},
     "bodies": [{"type": "rigid_body", "name": "link", "mass": 1.0,
                 "inertia": [0.1, 0.1, 0.02], "center_of_mass": [0, 0, -0.5],
                 "position": [0, 0, 0], "orientation": [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
                 "markers": {"pin": [0, 0, 0]}}],
     "joints": [{"type": "revolute", "name": "hinge", "a": "ground.O", "b": "link.pin",
                 "axis": [0, 1, 0]},
                {"type": "driver", "joint": "hinge",
                 "motion": {"type": "constant_rate", "angle0": 0, "rate": 1.0}}],
     "forces": [{"type": "body_torque", "body": "link", "torque": [0, 0, 0.1]}]}

Bodies carry a ``type``: ``rigid_body`` (:class:`~mbdcore.spatial.bodies.RigidBody3D`),
``bar`` (:class:`~mbdcore.spatial.bodies.SlenderBar`), ``cable``
(:class:`~mbdcore.spatial.ancf.ANCFCable`, straight) and ``beam``
(:class:`~mbdcore.spatial.ancf.ANCFBeam3D`).  A marker is ``"body.marker"`` or, for a
point without a name, ``{"body": b, "point": [x, y, z]}`` on a rigid body or the ground
(body frame [m]) and ``{"body": b, "arc_length": s}`` on a bar, cable or beam [m].
Gears and drivers name a revolute joint listed before them.  A beam takes the revolute,
prismatic and fixed joints on its section frame; a cable has none about its axis.
``inputs``, ``outputs`` and ``method`` are the top-level keys of every file
(:data:`~mbdcore.multibody.model_format.RUN_KEYS`, docs/model_files.md).

**One reader for both dimensions, here.**  :func:`load_model`, :func:`model_from_dict`,
:func:`validate_model`, :func:`model_to_dict` and :func:`save_model` of this module read
and write planar files too (no ``dimension`` or 2: handed to the planar functions
unchanged) and spatial ones (3).  The planar module cannot build a spatial system: the
layers let :mod:`mbdcore.multibody` know nothing of :mod:`mbdcore.spatial`, so its
``load_model`` refuses ``"dimension": 3`` with a message naming this module.  A
registry the spatial package would fill at import was the alternative; it was not
taken because what ``mbdcore.multibody.load_model`` accepted would then depend on
whether some other code had imported :mod:`mbdcore.spatial` first (an import-order
dependence, which the project's no-lazy-import rule exists to avoid).  Callers above the
spatial layer (the command line, ``SystemBlock``) use this module and read every file.

The checking machinery (value kinds, keys, typed element tables, key paths, every
problem at once, unknown keys refused with the accepted ones, JSON/YAML reading and
writing) is the planar module's, through its public names; this module holds only the
3D value kinds and element tables.  :data:`MODEL_SCHEMA` is the JSON Schema of the
spatial files, :func:`format_reference` the element types with their keys.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mbdcore.blocks import ParameterError
from mbdcore.multibody.forces import PointForce
from mbdcore.multibody.model_file import (
    FORMAT,
    KINDS,
    MOTION_TYPES,
    NAME_KEY,
    PLANAR_FORMAT,
    RUN_KEYS,
    VERSION,
    Dimension,
    ElementType,
    Key,
    ModelFileError,
    ReferenceContext,
    Undescribable,
    ValueKind,
    apply_run_keys,
    check_element,
    check_ground,
    check_header,
    check_inputs,
    check_list,
    check_marker_name,
    check_marker_table,
    check_run_keys,
    check_section,
    check_value,
    convert_values,
    describe_elements,
    describe_motion,
    describe_run_keys,
    element_names,
    is_finite_number,
    key_name,
    key_schema,
    object_schema,
    run_schema,
    show_value,
)
from mbdcore.multibody.redundancy import REDUNDANT_POLICIES
from mbdcore.multibody.system import System
from mbdcore.spatial.ancf import END_MARKERS, MIN_STRETCH, ANCFBeam3D, ANCFCable
from mbdcore.spatial.bodies import (
    ORTHONORMAL_TOLERANCE,
    BarLengthConstraint,
    RigidBody3D,
    RigidFrameConstraint,
    SlenderBar,
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
)
from mbdcore.spatial.system import SpatialSystem

__all__ = ["DIMENSION", "KINDS_3D", "BODY_TYPES", "JOINT_TYPES", "FORCE_TYPES", "TOP_KEYS",
           "PLANAR_KEY_HINTS", "validate_model", "model_from_dict", "load_model",
           "model_to_dict", "save_model", "format_reference", "MODEL_SCHEMA", "model_dimension",
           # the machinery, for a format with more element types (mbdcore.models.model_file)
           "SpatialTables", "SPATIAL_TABLES", "spatial_marker_out", "check_spatial",
           "build_spatial", "describe_spatial", "spatial_reference", "spatial_schema",
           "spatial_dimension", "SPATIAL_FORMAT"]

#: the value of the top-level key ``dimension`` of a spatial file
DIMENSION = 3

#: body types with a frame (a marker is a point [x, y, z]); the others are lines (a marker
#: is an arc length)
_FRAMED = ("rigid_body", "ground")


# --- value kinds of the spatial files -----------------------------------------------------
def _triple(v) -> bool:
    return isinstance(v, (list, tuple)) and len(v) == 3 and all(map(is_finite_number, v))


def _check_vector(v, ctx) -> str | None:
    return None if _triple(v) else "invalid"


def _check_direction(v, ctx) -> str | None:
    return None if _triple(v) and any(x != 0 for x in v) else "invalid"


def _matrix(v) -> np.ndarray | None:
    """A 3 x 3 list of finite numbers as an array, else None."""
    if isinstance(v, (list, tuple)) and len(v) == 3 and all(map(_triple, v)):
        return np.array(v, dtype=float)
    return None


def _check_orientation(v, ctx) -> str | None:
    A = _matrix(v)
    if A is None:
        return "invalid"
    deviation = float(np.abs(A.T @ A - np.eye(3)).max())
    det = float(np.linalg.det(A))
    if deviation > ORTHONORMAL_TOLERANCE or det <= 0.0:
        return (f"{show_value(v)} is not a rotation matrix (|A^T A - I| = {deviation:.3g}, "
                f"det = {det:.6g}): accepted values are orthonormal right-handed 3 x 3 "
                f"matrices, rows of the matrix whose columns are the body axes "
                f"(|A^T A - I| <= {ORTHONORMAL_TOLERANCE:g}, det = +1)")
    return None


def _check_inertia(v, ctx) -> str | None:
    if _triple(v):
        arr = np.diag(np.array(v, dtype=float))
    else:
        arr = _matrix(v)
        if arr is None:
            return "invalid"
        if np.abs(arr - arr.T).max() > 1e-12 * max(1.0, np.abs(arr).max()):
            return (f"{show_value(v)} is not symmetric: accepted values are 3 principal "
                    "moments or a symmetric 3 x 3 tensor [kg m^2]")
    moments = np.linalg.eigvalsh(arr)
    second = 0.5 * moments.sum() - moments
    if moments.min() <= 0.0 or second.min() <= 0.0:
        return (f"principal moments {[float(x) for x in moments]} kg m^2: accepted are "
                "positive moments each smaller than the sum of the other two (a body of "
                "non-zero thickness; a rod is a 'bar')")
    return None


def _check_redundant(v, ctx) -> str | None:
    return None if v in REDUNDANT_POLICIES else "invalid"


def _check_marker(v, ctx: ReferenceContext) -> str | None:
    if isinstance(v, str):
        return check_marker_name(v, ctx)
    if not (isinstance(v, Mapping) and "body" in v):
        return "invalid"
    body = v["body"]
    if not isinstance(body, str) or body not in ctx.body_types:
        return (f"body {show_value(body)} does not exist; bodies: "
                f"{', '.join(ctx.body_types)}")
    if ctx.body_types[body] in _FRAMED:
        if set(v) != {"body", "point"} or not _triple(v["point"]):
            return (f"{show_value(v)} is invalid: a point on {body!r} is written "
                    "{\"body\": name, \"point\": [x, y, z]} (body frame [m])")
    elif set(v) != {"body", "arc_length"} or not is_finite_number(v["arc_length"]):
        return (f"{show_value(v)} is invalid: a point on the {ctx.body_types[body]} {body!r} is "
                "written {\"body\": name, \"arc_length\": s} [m]")
    return None


def _convert_marker(v):
    if isinstance(v, str):
        return v
    if "point" in v:
        return (v["body"], tuple(float(x) for x in v["point"]))
    return (v["body"], float(v["arc_length"]))


def _check_revolute(v, ctx: ReferenceContext) -> str | None:
    if not isinstance(v, str):
        return "invalid"
    revolute = [n for n, t in ctx.joint_types.items() if t == "revolute"]
    if ctx.joint_types.get(v) != "revolute":
        what = (f"is a {ctx.joint_types[v]} joint" if v in ctx.joint_types
                else "is not a joint listed before this one")
        return (f"{v!r} {what}; accepted: the name of a revolute joint listed before "
                f"(revolute joints so far: {', '.join(revolute) or '(none)'})")
    return None


def _check_rigid_body(v, ctx: ReferenceContext) -> str | None:
    if not isinstance(v, str):
        return "invalid"
    if ctx.body_types.get(v) != "rigid_body":
        rigid = [n for n, t in ctx.body_types.items() if t == "rigid_body"]
        what = f"is a {ctx.body_types[v]}" if v in ctx.body_types else "does not exist"
        return (f"body {v!r} {what}; accepted: a rigid body (one with a frame): "
                f"{', '.join(rigid) or '(none)'}")
    return None


def _check_table(v, ctx) -> str | None:
    return None if isinstance(v, Mapping) else "invalid"


def _floats(v):
    return tuple(float(x) for x in v)


def _array(v):
    return np.array(v, dtype=float)


_VECTOR3_SCHEMA = {"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3}
_MATRIX3_SCHEMA = {"type": "array", "items": _VECTOR3_SCHEMA, "minItems": 3, "maxItems": 3}

#: the value kinds of the spatial files: the planar ones (numbers, counts, flags, arc
#: lengths, names, motions) with
#: 3-vectors, orientations, inertia tensors, spatial marker references and joint names
KINDS_3D: dict[str, ValueKind] = {
    **KINDS,
    "vector": ValueKind("lists of 3 finite numbers", _check_vector, _floats, _VECTOR3_SCHEMA),
    "direction": ValueKind("lists of 3 finite numbers, not all 0", _check_direction, _floats,
                           _VECTOR3_SCHEMA),
    "orientation": ValueKind("3 x 3 rotation matrices (list of 3 rows; orthonormal, det +1)",
                             _check_orientation, _array, _MATRIX3_SCHEMA),
    "inertia": ValueKind("3 principal moments or a symmetric 3 x 3 tensor, positive, each "
                         "principal moment smaller than the sum of the other two",
                         _check_inertia, _array,
                         {"oneOf": [_VECTOR3_SCHEMA, _MATRIX3_SCHEMA]}),
    "redundant": ValueKind(" or ".join(repr(p) for p in REDUNDANT_POLICIES), _check_redundant,
                           str, {"enum": list(REDUNDANT_POLICIES)}),
    "marker": ValueKind("marker references 'body.marker', {\"body\": name, \"point\": "
                        "[x, y, z]} on a rigid body or the ground, or {\"body\": name, "
                        "\"arc_length\": s} on a bar, cable or beam", _check_marker,
                        _convert_marker, {"oneOf": [
                            {"type": "string", "pattern": r"^[A-Za-z_]\w*\..+$"},
                            {"type": "object", "additionalProperties": False,
                             "required": ["body", "point"],
                             "properties": {"body": {"type": "string"},
                                            "point": _VECTOR3_SCHEMA}},
                            {"type": "object", "additionalProperties": False,
                             "required": ["body", "arc_length"],
                             "properties": {"body": {"type": "string"},
                                            "arc_length": {"type": "number"}}}]}),
    "revolute": ValueKind("names of revolute joints listed before", _check_revolute, str,
                          {"type": "string"}),
    "rigid_body": ValueKind("names of rigid bodies", _check_rigid_body, str,
                            {"type": "string"}),
    # marker tables: checked entry by entry with their paths (check_marker_table)
    "points": ValueKind("objects of marker name: [x, y, z]", _check_table, dict,
                        {"type": "object", "additionalProperties": _VECTOR3_SCHEMA}),
}


def _key(kind: str, unit: str = "", doc: str = "", required: bool = False) -> Key:
    return Key(KINDS_3D[kind], unit, doc, required)


_POINT = _key("vector", "m")
_ARC = _key("nonnegative", "m")
_GRAVITY = _key("vector", "m/s^2")


# --- element tables -------------------------------------------------------------------------
def _vec(v) -> list[float]:
    return [float(x) + 0.0 for x in v]     # + 0.0: -0.0 written as 0.0


def _user_markers(body) -> dict:
    """A body's markers as written in a file: points or arc lengths, the ends of an ANCF
    line (added by the body itself) left out."""
    out = {}
    for name, loc in body.markers.items():
        if isinstance(body, (ANCFCable, ANCFBeam3D)) and name in END_MARKERS:
            continue
        out[name] = float(loc) if np.ndim(loc) == 0 else _vec(loc)
    return out


def _describe_rigid(b: RigidBody3D) -> dict:
    tensor = b.inertia
    diagonal = bool(np.all(tensor == np.diag(np.diag(tensor))))
    return {"mass": b.mass,
            "inertia": _vec(np.diag(tensor)) if diagonal else [_vec(r) for r in tensor],
            "center_of_mass": _vec(b.center_of_mass), "position": _vec(b.position),
            "orientation": [_vec(r) for r in b.orientation], "velocity": _vec(b.velocity),
            "angular_velocity": _vec(b.omega), "markers": _user_markers(b)}


def _describe_bar(b: SlenderBar) -> dict:
    return {"end_i": _vec(b.end_i), "end_j": _vec(b.end_j), "mass": b.mass,
            "center": b.center, "inertia": b.inertia, "velocity_i": _vec(b.velocity_i),
            "velocity_j": _vec(b.velocity_j), "markers": _user_markers(b)}


def _line_common(b) -> dict:
    return {"damping": b.damping, "velocity": _vec(b.velocity),
            "n_gauss": b.n_gauss,
            "markers": _user_markers(b)}


def _describe_cable(b: ANCFCable) -> dict:
    if b.start is None:
        raise Undescribable("the cable was made through given nodes (ANCFCable.from_nodes); "
                            "accepted: straight cables, ANCFCable(name, start, end, ...)")
    out = {"start": _vec(b.start), "end": _vec(b.end), "n_elements": b.n_elements,
           "rho_a": b.rho_a, "ea": b.ea, "ei": b.ei,
           "stress_free_length": b.stress_free_length, **_line_common(b)}
    if b.tension_only:          # written only when set: two-way cables' files unchanged
        out["tension_only"] = True
        if b.min_stretch != MIN_STRETCH:
            out["min_stretch"] = b.min_stretch
    return out


def _describe_beam(b: ANCFBeam3D) -> dict:
    out = {"start": _vec(b.start), "end": _vec(b.end), "n_elements": b.n_elements,
           "rho_a": b.rho_a, "ea": b.ea, "ei_xy": b.ei_xy, "ei_xz": b.ei_xz, "gj": b.gj,
           "rho_yy": b.rho_yy, "rho_zz": b.rho_zz, "penalty": b.penalty}
    if b.section_y is not None:
        out["section_y"] = _vec(b.section_y)
    return {**out, **_line_common(b)}


_BODY_NAME = Key("body_name", doc="unique body name", required=True)
_MARKERS_AT = _key("points", "m", "named points in the body frame")
_MARKERS_ALONG = _key("arc_lengths", "m", "named points by arc length from the first end (a "
                      "cable or beam has 'root' and 'tip' itself)")
_LINE_KEYS = {
    "damping": _key("nonnegative", "s", "Kelvin-Voigt time beta (default 0)"),
    "velocity": _key("vector", "m/s", "initial velocity of every point (default 0)"),
    "n_gauss": _key("gauss", doc="Gauss points per element (default 5)"),
    "markers": _MARKERS_ALONG,
}

#: body types: the file's ``type`` -> the class, its keys and how to read them back
BODY_TYPES: dict[str, ElementType] = {e.type: e for e in (
    ElementType(RigidBody3D, {
        "name": _BODY_NAME,
        "mass": _key("positive", "kg", required=True),
        "inertia": _key("inertia", "kg m^2", "about the centre of mass, body frame",
                        required=True),
        "center_of_mass": _key("vector", "m", "in the body frame (default [0, 0, 0])"),
        "position": _key("vector", "m", "initial origin of the body frame (default 0)"),
        "orientation": _key("orientation", doc="initial rotation matrix, columns the body "
                            "axes in the ground frame (default identity)"),
        "velocity": _key("vector", "m/s", "initial velocity of the frame origin (default 0)"),
        "angular_velocity": _key("vector", "rad/s", "initial, in the ground frame (default 0)"),
        "markers": _MARKERS_AT}, _describe_rigid, type_name="rigid_body"),
    ElementType(SlenderBar, {
        "name": _BODY_NAME,
        "end_i": _key("vector", "m", "initial first end", required=True),
        "end_j": _key("vector", "m", "initial second end", required=True),
        "mass": _key("positive", "kg", required=True),
        "center": _key("nonnegative", "m", "centre of mass, arc length from end_i "
                       "(default L/2)"),
        "inertia": _key("positive", "kg m^2", "about the centre of mass across the bar "
                        "(default m L^2/12)"),
        "velocity_i": _key("vector", "m/s", "initial (default 0)"),
        "velocity_j": _key("vector", "m/s", "initial (default 0)"),
        "markers": _MARKERS_ALONG}, _describe_bar, type_name="bar"),
    ElementType(ANCFCable, {
        "name": _BODY_NAME,
        "start": _key("vector", "m", "first end ('root') of the straight initial shape",
                      required=True),
        "end": _key("vector", "m", "second end ('tip')", required=True),
        "n_elements": _key("elements", required=True),
        "rho_a": _key("positive", "kg/m", "mass per stress-free length", required=True),
        "ea": _key("positive", "N", "axial stiffness", required=True),
        "ei": _key("positive", "N m^2", "bending stiffness", required=True),
        "stress_free_length": _key("positive", "m", "default |end - start|; shorter: "
                                   "pretensioned"),
        "tension_only": _key("flag", doc="a slack cable: no axial force in compression "
                             "(default false)"),
        "min_stretch": _key("nonnegative", doc="of a slack cable: the stretch |r'| in [0, 1) "
                            "below which it resists shortening (default 0.2)"),
        **_LINE_KEYS}, _describe_cable, type_name="cable"),
    ElementType(ANCFBeam3D, {
        "name": _BODY_NAME,
        "start": _key("vector", "m", "first end ('root'), straight unstressed shape",
                      required=True),
        "end": _key("vector", "m", "second end ('tip')", required=True),
        "n_elements": _key("elements", required=True),
        "rho_a": _key("positive", "kg/m", required=True),
        "ea": _key("positive", "N", required=True),
        "ei_xy": _key("positive", "N m^2", "bending about the section's z axis",
                      required=True),
        "ei_xz": _key("positive", "N m^2", "bending about the section's y axis",
                      required=True),
        "gj": _key("positive", "N m^2", "torsion", required=True),
        "rho_yy": _key("positive", "kg m", "rho int y^2 dA", required=True),
        "rho_zz": _key("positive", "kg m", "rho int z^2 dA", required=True),
        "section_y": _key("direction", doc="the section's y axis (default: the coordinate "
                          "axis most normal to the beam)"),
        "penalty": _key("positive", "N", "nodal shear and section stiffness (default ea)"),
        **_LINE_KEYS}, _describe_beam, type_name="beam"),
)}


def spatial_marker_out(ref):
    """A spatial marker reference as written in a file: ``"body.marker"``,
    ``{"body": b, "point": [x, y, z]}`` or ``{"body": b, "arc_length": s}``."""
    if isinstance(ref, str):
        return ref
    body, loc = ref
    if np.ndim(loc) == 0:
        return {"body": body, "arc_length": float(loc)}
    return {"body": body, "point": _vec(loc)}


def _pair(e) -> dict:
    return {"a": spatial_marker_out(e.a_ref), "b": spatial_marker_out(e.b_ref)}


_A = _key("marker", doc="marker on the first body", required=True)
_B = _key("marker", doc="marker on the second body, coincident with a", required=True)

#: joint types of the spatial files (docs/spatial.md, "Joints")
JOINT_TYPES: dict[str, ElementType] = {e.type: e for e in (
    ElementType(Spherical, {"a": _A, "b": _B}, _pair, distinct=("a", "b")),
    ElementType(Revolute, {
        "a": _A, "b": _B,
        "axis": _key("direction", doc="hinge axis, ground frame at the initial "
                     "configuration (default [0, 0, 1])")},
        lambda e: {**_pair(e), "axis": _vec(e.axis)}, distinct=("a", "b")),
    ElementType(Prismatic, {
        "a": _key("marker", doc="point of the line, on a body with a frame", required=True),
        "b": _key("marker", doc="marker that stays on the line", required=True),
        "axis": _key("direction", doc="line direction, ground frame at the initial "
                     "configuration (default [1, 0, 0])")},
        lambda e: {**_pair(e), "axis": _vec(e.axis)}, distinct=("a", "b")),
    ElementType(Fixed, {"a": _A, "b": _B}, _pair, distinct=("a", "b")),
    ElementType(CableClamp, {
        "a": _key("marker", doc="marker on a body with a frame", required=True),
        "b": _key("marker", doc="end of a cable or beam ('cable.root')", required=True),
        "axis": _key("direction", doc="the cable's direction at the clamp, ground frame at "
                     "the initial configuration (default [1, 0, 0])")},
        lambda e: {**_pair(e), "axis": _vec(e.axis)}, distinct=("a", "b")),
    ElementType(SynchronousGear, {
        "joint1": _key("revolute", doc="driving revolute joint", required=True),
        "joint2": _key("revolute", doc="driven revolute joint", required=True),
        "ratio": _key("number", doc="theta_2 = ratio theta_1 + offset (default 1)"),
        "offset": _key("number", "rad", "(default 0: the joint angles are 0 at the start)")},
        lambda e: {"joint1": e.joint1.name, "joint2": e.joint2.name, "ratio": e.ratio,
                   "offset": e.offset}),
    ElementType(AngleDriver, {
        "joint": _key("revolute", doc="the driven revolute joint", required=True),
        "motion": _key("motion", doc="prescribed joint angle [rad] of time (0 at the start "
                       "means the initial configuration)", required=True)},
        lambda e: {"joint": e.joint.name, "motion": describe_motion(e.motion)}),
)}


def _describe_point_force(e) -> dict:
    if e.value is None:
        raise Undescribable(f"the force of {e.name!r} is a function of time; accepted values "
                            "are constant forces [Fx, Fy, Fz] [N]")
    return {"at": spatial_marker_out(e.at_ref), "force": _vec(e.value)}


def _describe_torque(e) -> dict:
    if e.axis is not None:
        return {"body": e.body_name, "input": e.input_names[0], "axis": _vec(e.axis)}
    if e.value is None:
        raise Undescribable(f"the torque of {e.name!r} is a function of time; accepted values "
                            "are constant torques [Tx, Ty, Tz] [N m]")
    return {"body": e.body_name, "torque": _vec(e.value)}


#: force types of the spatial files
FORCE_TYPES: dict[str, ElementType] = {e.type: e for e in (
    ElementType(PointForce, {
        "at": _key("marker", required=True),
        "force": _key("vector", "N", "constant, in the ground frame", required=True)},
        _describe_point_force),
    ElementType(BodyTorque, {
        "body": _key("rigid_body", doc="the body the torque acts on", required=True),
        "torque": _key("vector", "N m", "constant, in the ground frame (give this or "
                       "input)"),
        "input": _key("name", doc="name of the system input giving tau [N m] about axis"),
        "axis": _key("direction", doc="of an input's torque, ground frame (default "
                     "[0, 0, 1])")},
        _describe_torque, exactly_one=("torque", "input")),
)}

#: top-level keys of a spatial file and what they hold
TOP_KEYS = {
    "format": f"always {FORMAT!r}",
    "version": f"format version, {VERSION}",
    "dimension": f"{DIMENSION}: a spatial model (absent or 2: planar)",
    "description": "free text",
    "gravity": "gravitational acceleration [m/s^2] in the ground frame (default [0, 0, 0])",
    "redundant": "what to do with dependent constraint equations: 'remove' (default), "
                 "'error' or 'keep' (SpatialSystem)",
    "ground": "{\"markers\": {name: [x, y, z]}}: points fixed to the ground [m]",
    "bodies": "list of bodies, each with a \"type\": " + ", ".join(BODY_TYPES),
    "joints": "list of joints, gears and drivers",
    "forces": "list of force elements",
    "inputs": "start values of the inputs declared by forces [N m or N] (default 0)",
    **RUN_KEYS,
}

_DRIVEN = ("a planar key of this element; spatial gears and drivers name revolute joints "
           "('joint1', 'joint2'; 'joint')")

#: what to write instead of a planar file's key in a spatial file, by section (for the
#: messages: the key is refused as unknown, with this hint)
PLANAR_KEY_HINTS = {
    "bodies": {
        "angle": "a planar key; a spatial rigid body's attitude is 'orientation', a 3 x 3 "
                 "rotation matrix",
        "omega": "a planar key; a spatial rigid body has 'angular_velocity' [wx, wy, wz]"},
    "joints": {"direction": "a planar key; spatial joints have an 'axis' [x, y, z]",
               "angle": "a planar key; the initial configuration sets the relative "
                        "orientation",
               "a": _DRIVEN, "b": _DRIVEN},
}


@dataclass(frozen=True)
class SpatialTables:
    """What a spatial format reads and writes: its element tables by section (the file's
    ``type`` -> :class:`~mbdcore.multibody.model_file.ElementType`), its top-level keys
    with their meaning, and the hints for keys it refuses (by section, as
    :data:`PLANAR_KEY_HINTS`).  :data:`SPATIAL_TABLES` is this module's format; a format
    with more element types (:mod:`mbdcore.models.model_file`) is these tables extended,
    read and written by the same functions (:func:`check_spatial`, :func:`build_spatial`,
    :func:`describe_spatial`, :func:`spatial_reference`, :func:`spatial_schema`)."""

    body_types: Mapping[str, ElementType]
    joint_types: Mapping[str, ElementType]
    force_types: Mapping[str, ElementType]
    top_keys: Mapping[str, str]
    hints: Mapping[str, Mapping[str, str]]
    #: the units of the inputs the forces declare (for messages)
    input_units: str = "N m or N"


#: the tables of the spatial files of this module
SPATIAL_TABLES = SpatialTables(BODY_TYPES, JOINT_TYPES, FORCE_TYPES, TOP_KEYS, PLANAR_KEY_HINTS)


# --- validation ----------------------------------------------------------------------------
def model_dimension(d) -> int | None:
    """The ``dimension`` of a parsed model (2 when absent); None if it is not 2 or 3."""
    if not isinstance(d, Mapping) or "dimension" not in d:
        return 2
    dim = d["dimension"]
    if is_finite_number(dim) and dim in (2, 3):
        return int(dim)
    return None


def _line_length(good: Mapping) -> float | None:
    """The length [m] markers of a bar, cable or beam are checked against."""
    if "stress_free_length" in good:
        return float(good["stress_free_length"])
    ends = [good.get(k) for k in (("end_i", "end_j") if "end_i" in good else ("start", "end"))]
    if any(e is None for e in ends):
        return None
    with np.errstate(over="ignore", invalid="ignore"):   # too far apart: inf, the
        return float(np.linalg.norm(np.subtract(ends[1], ends[0], dtype=float)))  # body says


def _check_bodies(d: Mapping, ctx: ReferenceContext, problems: list,
                  tables: SpatialTables) -> None:
    check_ground(d, ctx, problems, _POINT, "[x, y, z]")
    ctx.body_types["ground"] = "ground"
    for i, body in enumerate(check_list(d, "bodies", problems)):
        path = f"bodies[{i}]"
        good = check_element(path, body, tables.body_types, ctx, problems,
                             tables.hints.get("bodies"))
        if good is None:
            continue
        framed = good["type"] in _FRAMED
        markers = []
        if "markers" in good:
            markers = check_marker_table(f"{path}.markers", good["markers"], problems,
                                         _POINT if framed else _ARC)
            length = None if framed else _line_length(good)
            for name, s in good["markers"].items():
                if length is not None and is_finite_number(s) and s > length * (1 + 1e-12):
                    problems.append(f"{path}.markers.{key_name(name)}: {show_value(s)} is invalid: "
                                    f"accepted values are arc lengths in [0, {length:g}] m")
        if good["type"] in ("cable", "beam"):
            markers = list(dict.fromkeys([*END_MARKERS, *markers]))
        name = good.get("name")
        if name is None:
            continue
        if name in ctx.markers:
            problems.append(f"{path}.name: {name!r} is a duplicate: body names must be unique "
                            f"(taken: {', '.join(ctx.markers)})")
            continue
        ctx.markers[name] = markers
        ctx.body_types[name] = good["type"]


def check_spatial(d: Mapping, tables: SpatialTables, problems: list) -> list:
    """Check a spatial model dictionary against ``tables``, appending every problem
    (key path first, accepted values named) to ``problems``; returns the checked forces
    [(index, valid values)] (for a format whose forces declare inputs)."""
    check_header(d, problems, tables.top_keys, _GRAVITY, tables.hints.get("(top level)"))
    if "redundant" in d:
        check_value("redundant", d["redundant"], _key("redundant"), ReferenceContext(),
                    problems)
    ctx = ReferenceContext()
    _check_bodies(d, ctx, problems, tables)
    check_section(d, "joints", tables.joint_types, ctx, problems,
                  types_by_name=ctx.joint_types, hints=tables.hints.get("joints"))
    forces = check_section(d, "forces", tables.force_types, ctx, problems)
    check_inputs(d, forces, problems, Key("number", tables.input_units))
    check_run_keys(d, problems)
    return forces


def validate_model(d) -> list[str]:
    """All problems of a model dictionary, planar or spatial (empty list: valid).

    Returns
    -------
    list of str
        One message per problem, each starting with the key path
        (``bodies[2].orientation``) and naming the accepted values.
    """
    return SPATIAL_FORMAT.validate(d)


# --- building ------------------------------------------------------------------------------
def build_spatial(d: Mapping, tables: SpatialTables, source: str | None = None) -> SpatialSystem:
    """The :class:`~mbdcore.spatial.system.SpatialSystem` of a spatial model dictionary
    that :func:`check_spatial` found valid against ``tables`` (a check the engine makes
    and the validator does not is a :class:`ModelFileError` naming the element)."""
    path = "(model)"
    try:
        s = SpatialSystem(gravity=tuple(float(x) for x in d.get("gravity", (0.0, 0.0, 0.0))),
                          redundant=d.get("redundant", "remove"))
        for name, loc in d.get("ground", {}).get("markers", {}).items():
            path = f"ground.markers.{name}"
            s.ground.add_marker(name, _floats(loc))
        for i, body in enumerate(d.get("bodies", [])):
            path = f"bodies[{i}]"
            entry = tables.body_types[body["type"]]
            kwargs = convert_values(entry.keys, body)
            name = kwargs.pop("name")
            s.add(entry.cls(name, **kwargs))
        for section, registry, add in (("joints", tables.joint_types, s.add_joint),
                                       ("forces", tables.force_types, s.add_force)):
            items = list(enumerate(d.get(section, [])))
            for (i, obj), name in zip(items, element_names(section, items)):
                path = f"{section}[{i}]"
                entry = registry[obj["type"]]
                add(entry.cls(**convert_values(entry.keys, obj), name=name))
        for name, value in d.get("inputs", {}).items():
            path = f"inputs.{name}"
            s.set_input(name, float(value))
    except ParameterError as exc:   # a check the engine makes and validate_model does not
        raise ModelFileError([f"{path}: {exc}"], source) from exc
    apply_run_keys(s, d)
    return s


def model_from_dict(d: Mapping, source: str | None = None) -> System:
    """Build the system a model dictionary describes: a
    :class:`~mbdcore.spatial.system.SpatialSystem` for ``"dimension": 3``, the planar
    :class:`~mbdcore.multibody.system.System` otherwise.

    Raises
    ------
    ModelFileError
        With all problems of ``d`` in ``.problems``.
    """
    return SPATIAL_FORMAT.from_dict(d, source)


def load_model(path_or_dict) -> System:
    """Load a model file (``.json``, or ``.yaml``/``.yml`` with PyYAML) or dictionary of
    either dimension: a :class:`~mbdcore.spatial.system.SpatialSystem` for
    ``"dimension": 3``, the planar System otherwise.  Not assembled.

    Raises
    ------
    ModelFileError
        With every problem of the file in ``.problems``.
    """
    return SPATIAL_FORMAT.load(path_or_dict)


# --- saving --------------------------------------------------------------------------------
def describe_spatial(system: SpatialSystem, tables: SpatialTables,
                     description: str | None = None) -> dict:
    """A spatial system as a model dictionary in the format of ``tables``, every key
    explicit (not validated: the caller checks that it would load again).

    Raises
    ------
    ModelFileError
        If an element cannot be expressed (a cable through given nodes, a Python
        function of time, a class not in ``tables``, a moved ground frame).
    """
    ground = system.ground
    if np.any(ground.position != 0.0) or np.any(ground.orientation != np.eye(3)):
        raise ModelFileError(["ground: the ground frame is moved; accepted: position "
                              "[0, 0, 0] and orientation identity (markers carry the offsets)"])
    d: dict[str, Any] = {"format": FORMAT, "version": VERSION, "dimension": DIMENSION}
    if description:
        d["description"] = description
    d["gravity"] = _vec(system.gravity)
    d["redundant"] = system.redundant
    d["ground"] = {"markers": {k: _vec(v) for k, v in ground.markers.items()}}
    d["bodies"] = describe_elements("bodies", system.bodies, tables.body_types)
    own = [j for j in system.joints
           if not isinstance(j, (RigidFrameConstraint, BarLengthConstraint))]
    d["joints"] = describe_elements("joints", own, tables.joint_types)
    d["forces"] = describe_elements("forces", system.forces_list, tables.force_types)
    if system.inputs:
        d["inputs"] = {k: float(v) for k, v in system.inputs.items()}
    d.update(describe_run_keys(system))
    return d


def model_to_dict(system: System, description: str | None = None) -> dict:
    """Describe a system as a model dictionary, every key explicit (a planar System
    through :func:`mbdcore.multibody.model_file.model_to_dict`).  Loading the result gives
    the same coordinates, initial state, constraints and forces.

    Raises
    ------
    ModelFileError
        If an element cannot be expressed (a cable through given nodes, a Python
        function of time, an unknown class, a moved ground frame).
    """
    return SPATIAL_FORMAT.to_dict(system, description)


def save_model(system: System, path, description: str | None = None):
    """Write ``system`` (planar or spatial) to ``path`` (``.json``, or ``.yaml``/``.yml``
    with PyYAML), floats in their shortest exact representation; returns the path."""
    return SPATIAL_FORMAT.save(system, path, description)


def spatial_dimension(tables: SpatialTables) -> Dimension:
    """The spatial files of ``tables`` as a dimension of a
    :class:`~mbdcore.multibody.model_file.ModelFormat`: checked by :func:`check_spatial`,
    built by :func:`build_spatial`, written by :func:`describe_spatial`."""
    return Dimension(lambda d, problems: check_spatial(d, tables, problems),
                     lambda d, source=None: build_spatial(d, tables, source),
                     lambda system, description=None: describe_spatial(system, tables,
                                                                       description))


#: planar and spatial files: the planar format extended by this module's tables
SPATIAL_FORMAT = PLANAR_FORMAT.extended({DIMENSION: spatial_dimension(SPATIAL_TABLES)})


# --- reference and JSON Schema ---------------------------------------------------------------
def spatial_reference(tables: SpatialTables) -> str:
    """The element types of ``tables`` and their keys as text."""
    def keys(table):
        return "\n".join(f"    {k:19s}{'(required) ' if v.required else ''}{v.doc}"
                         f"{'; ' if v.doc else ''}{v.accepted()}" for k, v in table.items())

    parts = [f"(top level, \"dimension\": {DIMENSION})\n"
             + "\n".join(f"    {k:19s}{v}" for k, v in tables.top_keys.items())]
    for section, registry in (("bodies", tables.body_types), ("joints", tables.joint_types),
                              ("forces", tables.force_types)):
        for t, e in registry.items():
            table = {"name": NAME_KEY, **e.keys}
            parts.append(f"{section}[] type {t!r} ({e.cls.__name__})\n{keys(table)}")
    for t, (_, table) in MOTION_TYPES.items():
        parts.append(f"driver motion type {t!r}\n{keys(table)}")
    return "\n".join(parts)


def format_reference() -> str:
    """The spatial element types and their keys as text (from the validator's tables)."""
    return spatial_reference(SPATIAL_TABLES)


def spatial_schema(tables: SpatialTables, identifier: str, title: str,
                   extra_properties: Mapping[str, dict] | None = None) -> dict:
    """JSON Schema (draft 2020-12) of the spatial files of ``tables`` (``$id``
    ``identifier``); ``extra_properties``: the schemas of top-level keys of
    ``tables.top_keys`` beyond this module's."""
    def typed(registry):
        return {"oneOf": [object_schema({"name": NAME_KEY, **e.keys}, t, e.cls.__doc__)
                          for t, e in registry.items()]}

    top = {
        "format": {"const": FORMAT},
        "version": {"const": VERSION},
        "dimension": {"const": DIMENSION},
        "description": {"type": "string"},
        "gravity": key_schema(_GRAVITY),
        "redundant": KINDS_3D["redundant"].schema,
        "ground": {"type": "object", "additionalProperties": False,
                   "properties": {"markers": {"type": "object",
                                              "additionalProperties": _VECTOR3_SCHEMA}}},
        "bodies": {"type": "array", "items": {"$ref": "#/$defs/body"}},
        "joints": {"type": "array", "items": {"$ref": "#/$defs/joint"}},
        "forces": {"type": "array", "items": {"$ref": "#/$defs/force"}},
        "inputs": {"type": "object", "additionalProperties": {"type": "number"}},
        **run_schema(),
        **(extra_properties or {}),
    }
    for k, doc in tables.top_keys.items():
        top[k] = {**top[k], "description": doc}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": identifier,
        "title": title,
        "description": "Bodies, joints and forces of mbdcore.spatial.SpatialSystem; SI units.",
        "type": "object", "additionalProperties": False,
        "required": ["format", "version", "dimension"],
        "properties": top,
        "$defs": {
            "body": typed(tables.body_types),
            "joint": typed(tables.joint_types),
            "force": typed(tables.force_types),
            "motion": {"oneOf": [object_schema(keys, t) for t, (_, keys)
                                 in MOTION_TYPES.items()]},
        },
    }


#: JSON Schema (draft 2020-12) of the spatial files, from the tables :func:`validate_model`
#: uses (which also checks references, orientations and inertias, with clearer messages).
MODEL_SCHEMA: dict = spatial_schema(
    SPATIAL_TABLES, "https://flexcosim.invalid/schemas/flexcosim-model-1-3d.json",
    "flexcosim spatial multibody model")
