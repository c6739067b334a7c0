"""Spatial model files (``"dimension": 3``) describe the same systems as the Python API
and say clearly what is wrong.

Round trips: Bricard's linkage, the heavy top and the 3D hub-beam saved and loaded again
have the same initial state, constraints and simulation.  A hand-written file (a spatial
double pendulum: a box on a ball joint, a bar hanging from it, a torque about the
vertical) gives the motion of the same system built in Python, and that motion obeys the
angular momentum balance about the vertical, dL_z/dt = T_z.  Broken files are refused
with every problem's key path and the accepted values; planar files load as before.
"""
import copy
import json
import math

import numpy as np
import pytest

from mbdcore.dae.simulate import simulate
from mbdcore.models import mechanisms
from mbdcore.models.spatial_mechanisms import bricard, heavy_top, hub_beam_3d
from mbdcore.multibody import model_file as planar
from mbdcore.multibody.forces import PointForce
from mbdcore.multibody.model_file import ModelFileError
from mbdcore.spatial import ANCFBeam3D, ANCFCable, BodyTorque, SpatialSystem, Spherical
from mbdcore.spatial.model_file import (
    MODEL_SCHEMA,
    format_reference,
    load_model,
    model_from_dict,
    model_to_dict,
    save_model,
    validate_model,
)
from support import EXAMPLES as EXAMPLE_FOLDER

EXAMPLES = EXAMPLE_FOLDER / "models"
PENDULUM = EXAMPLES / "spatial" / "double_pendulum.json"


def reload(system):
    """Save to a JSON string and load again: what a file on disk does."""
    return model_from_dict(json.loads(json.dumps(model_to_dict(system))))


def assert_same_equations(a, b, seed=0):
    """Same unknowns, initial state, mass, forces, constraint rows and terms."""
    assert type(b) is SpatialSystem
    assert a.coordinate_names() == b.coordinate_names()
    assert a.multiplier_names() == b.multiplier_names()
    for x, y in zip(a.initial_state(), b.initial_state()):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.mass_diagonal(), b.mass_diagonal())
    rng = np.random.default_rng(seed)
    q0, _ = a.initial_state()
    for _ in range(3):
        t = rng.uniform(0.0, 1.0)
        q = q0 + rng.normal(scale=0.02, size=q0.size)
        v = rng.normal(size=q0.size)
        np.testing.assert_allclose(b.forces(t, q, v), a.forces(t, q, v), rtol=0, atol=1e-12)
        np.testing.assert_allclose(b.all_constraints(t, q), a.all_constraints(t, q),
                                   rtol=0, atol=1e-12)
        for x, y in zip(a.constraint_terms(t, q, v), b.constraint_terms(t, q, v)):
            np.testing.assert_allclose(y, x, rtol=0, atol=1e-12)


# --- round trips -----------------------------------------------------------------------------
ROUND_TRIPS = {
    # builder, simulation (the benchmark's own methods, a few steps)
    "bricard": (bricard, dict(t_end=0.05, h=1e-3, method="generalized-alpha", rho_inf=1.0)),
    "heavy_top": (heavy_top, dict(t_end=0.05, h=2.5e-3, method="rk4")),
    "hub_beam_3d": (lambda: hub_beam_3d(axis=(1.0, 1.0, 1.0)),
                    dict(t_end=0.5, h=5e-3, method="generalized-alpha", rho_inf=0.8)),
}


@pytest.mark.parametrize("name", ROUND_TRIPS)
def test_saved_and_loaded_spatial_benchmark_has_the_same_equations_and_motion(name):
    build, run = ROUND_TRIPS[name]
    api, loaded = build(), reload(build())
    assert_same_equations(api, loaded)
    assert loaded.redundant == api.redundant
    a, b = simulate(api, **run), simulate(loaded, **run)
    assert api.redundant_equations == loaded.redundant_equations
    np.testing.assert_allclose(b.q, a.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(b.lam, a.lam, rtol=0, atol=1e-12)
    assert b.q.shape[0] > 10 and np.ptp(a.q, axis=0).max() > 1e-4   # it did move


def test_bricard_file_keeps_the_redundant_row_found():
    """The loaded linkage finds the same dependent equation and keeps the benchmark's
    one degree of freedom (Grübler's count gives 0): the last row of the joint that
    closes the loop, as the rows are kept in order, the first independent ones."""
    loaded = reload(bricard())
    loaded.check_redundancy()
    assert loaded.redundant_equations == bricard().check_redundancy() == ["P6.moment_2"]
    assert loaded.n - loaded.m == 1


def test_saving_is_a_fixed_point_and_files_keep_floats_exact(tmp_path):
    d = model_to_dict(heavy_top(nutation=0.123456789012345))
    path = save_model(model_from_dict(d), tmp_path / "top.json")
    assert json.loads(path.read_text()) == d
    assert model_to_dict(load_model(path)) == d
    assert d["dimension"] == 3 and d["bodies"][0]["type"] == "rigid_body"


def test_beam_bar_point_force_and_tensor_inertia_round_trip():
    s = SpatialSystem(gravity=(0.0, -9.81, 0.0), redundant="keep")
    s.ground.add_marker("O", (0.0, 0.0, 0.0))
    s.add_body("plate", mass=2.0, inertia=[[0.3, 0.01, 0.0], [0.01, 0.2, 0.02],
                                           [0.0, 0.02, 0.4]],
               markers={"corner": (0.1, 0.2, 0.0)})
    s.add_bar("strut", (0.1, 0.2, 0.0), (0.5, 0.2, 0.3), mass=0.3, center=0.2,
              velocity_j=(0.0, 0.1, 0.0), markers={"mid": 0.25})
    s.add(ANCFBeam3D("spar", (0.0, 0.0, 0.0), (0.0, 0.0, -1.0), 2, rho_a=0.5, ea=1e5,
                     ei_xy=10.0, ei_xz=20.0, gj=5.0, rho_yy=1e-4, rho_zz=2e-4,
                     section_y=(1.0, 1.0, 0.0), damping=1e-3))
    s.add(ANCFCable("stay", (0.5, 0.2, 0.3), (1.0, 0.0, 0.0), 3, rho_a=0.1, ea=1e4, ei=0.1,
                    stress_free_length=0.5, markers={"third": 0.2}))
    s.add(ANCFCable("slack", (1.0, 0.0, 0.0), (1.0, 0.5, 0.0), 2, rho_a=0.1, ea=1e4, ei=0.1,
                    stress_free_length=0.6, tension_only=True, min_stretch=0.5))
    s.add_joint(Spherical("plate.corner", ("strut", 0.0)))
    s.add_joint(Spherical("stay.tip", "slack.root"))
    s.add_joint(Spherical(("strut", 0.5), "stay.root"))
    s.add_force(BodyTorque("plate", (0.0, 0.0, 0.3)))
    s.add_force(PointForce("stay.third", (0.0, 0.0, -1.0)))
    d = model_to_dict(s)
    assert d["bodies"][0]["inertia"][0] == [0.3, 0.01, 0.0]
    assert d["joints"][0]["b"] == {"body": "strut", "arc_length": 0.0}
    cables = {b["name"]: b for b in d["bodies"] if b["type"] == "cable"}
    assert cables["slack"]["tension_only"] is True and "tension_only" not in cables["stay"]
    assert cables["slack"]["min_stretch"] == 0.5
    assert reload(s).body("slack").tension_only and reload(s).body("slack").min_stretch == 0.5
    assert_same_equations(s, reload(s))


# --- a hand-written file ---------------------------------------------------------------------
def pendulum_in_python() -> SpatialSystem:
    """The system of examples/models/spatial/double_pendulum.json, built with the API."""
    c, s = math.cos(0.3), math.sin(0.3)
    A = np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
    system = SpatialSystem(gravity=(0.0, 0.0, -9.81))
    system.ground.add_marker("O", (0.0, 0.0, 0.0))
    system.add_body("box", mass=2.0, inertia=(0.02, 0.03, 0.04), center_of_mass=(0, 0, -0.3),
                    orientation=A, angular_velocity=(0.5, 0.0, 2.0),
                    markers={"pivot": (0, 0, 0), "hook": (0, 0, -0.6)})
    hook = A @ np.array([0.0, 0.0, -0.6])
    system.add_bar("rod", hook, hook + np.array([0.4, 0.0, -0.3]), mass=0.5,
                   markers={"middle": 0.25})
    system.add_joint(Spherical("ground.O", "box.pivot", name="pivot"))
    system.add_joint(Spherical("box.hook", ("rod", 0.0), name="hook"))
    system.add_force(BodyTorque("box", (0.0, 0.0, 0.05), name="motor"))
    return system


def vertical_angular_momentum(system, q, v) -> float:
    """L_z [kg m^2/s] about the origin: the box's, plus the bar's sum_ab Z_ab q_a x q'_b."""
    box, rod = system.body("box"), system.body("rod")
    L = system.angular_momentum(q, v)
    qb = q[rod.index:rod.index + 6].reshape(2, 3)
    vb = v[rod.index:rod.index + 6].reshape(2, 3)
    L = L + sum(rod.Z[a, b] * np.cross(qb[a], vb[b]) for a in range(2) for b in range(2))
    assert box.n_coords == 12
    return float(L[2])


def test_hand_written_file_moves_as_the_python_system_and_balances_angular_momentum():
    loaded, built = load_model(PENDULUM), pendulum_in_python()
    run = dict(t_end=1.0, h=1e-3, method="rk4", record_every=50)
    a, b = simulate(built, **run), simulate(loaded, **run)
    diff = np.abs(b.q - a.q).max()
    assert diff < 1e-12, diff
    # the pendulum swings in 3D: the bar's far end leaves every coordinate plane
    far = loaded.body("rod").index + 3
    assert np.ptp(b.q[:, far:far + 3], axis=0).min() > 0.05
    # gravity and the pivot's reaction have no moment about the vertical through the
    # pivot: L_z grows at the applied torque, 0.05 N m (RK4 at 1 ms: round-off level)
    Lz = np.array([vertical_angular_momentum(loaded, q, v) for q, v in zip(b.q, b.v)])
    np.testing.assert_allclose(Lz - Lz[0], 0.05 * b.t, rtol=0, atol=1e-9)
    assert np.abs(b.violation).max() < 1e-10


# --- broken files -----------------------------------------------------------------------------
def pendulum_dict():
    return json.loads(PENDULUM.read_text())


def with_gear(d):
    """The pendulum with two hinges and a gear between them (for the gear cases)."""
    d["joints"] = [
        {"type": "revolute", "name": "h1", "a": "ground.O", "b": "box.pivot", "axis": [1, 0, 0]},
        {"type": "revolute", "name": "h2", "a": "box.hook",
         "b": {"body": "rod", "arc_length": 0}, "axis": [0, 0, 1]},
        {"type": "gear", "name": "sync", "joint1": "h1", "joint2": "h3"}]
    return d


BROKEN = {
    "wrong vector length": (
        lambda d: d.update(gravity=[0, -9.81]),
        ["gravity: [0, -9.81] is invalid", "lists of 3 finite numbers [m/s^2]"]),
    "wrong vector length in a body": (
        lambda d: d["bodies"][1].update(end_j=[0.4, 0.1]),
        ["bodies[1].end_j: [0.4, 0.1] is invalid", "lists of 3 finite numbers [m]"]),
    "non-orthonormal orientation": (
        lambda d: d["bodies"][0]["orientation"][0].__setitem__(0, 1.1),
        ["bodies[0].orientation:", "is not a rotation matrix", "|A^T A - I| = 0.21",
         "orthonormal right-handed"]),
    "left-handed orientation": (
        lambda d: d["bodies"][0].update(orientation=[[1, 0, 0], [0, 1, 0], [0, 0, -1]]),
        ["bodies[0].orientation:", "det = -1"]),
    "unknown joint type": (
        lambda d: d["joints"][0].update(type="weld"),
        ["joints[0].type: 'weld' is unknown: accepted spherical, revolute, prismatic, fixed, "
         "cable_clamp, gear, driver"]),
    "unknown body type": (
        lambda d: d["bodies"][0].update(type="box"),
        ["bodies[0].type: 'box' is unknown: accepted rigid_body, bar, cable, beam"]),
    "unknown key": (
        lambda d: d["bodies"][0].update(colour="red"),
        ["bodies[0].colour: unknown key; accepted keys: type, name, mass, inertia, "
         "center_of_mass, position, orientation"]),
    "gear naming a missing joint": (
        with_gear,
        ["joints[2].joint2: 'h3' is not a joint listed before this one",
         "accepted: the name of a revolute joint", "revolute joints so far: h1, h2"]),
    "gear naming a spherical joint": (
        lambda d: d["joints"].append({"type": "gear", "joint1": "pivot", "joint2": "hook"}),
        ["joints[2].joint1: 'pivot' is a spherical joint", "(revolute joints so far: (none))"]),
    "planar key in a 3D body": (
        lambda d: d["bodies"][0].update(angle=0.3),
        ["bodies[0].angle: unknown key (a planar key; a spatial rigid body's attitude is "
         "'orientation', a 3 x 3 rotation matrix); accepted keys:"]),
    "planar driver": (
        lambda d: d["joints"].append({"type": "driver", "a": "ground", "b": "box",
                                      "motion": {"type": "constant_rate", "angle0": 0,
                                                 "rate": 1}}),
        ["joints[2].a: unknown key (a planar key of this element; spatial gears and drivers "
         "name revolute joints ('joint1', 'joint2'; 'joint'))",
         "joints[2].joint: missing required key"]),
    # spatial files have inputs since issue 23: each must be declared by a force
    "undeclared input": (
        lambda d: d.update(inputs={"tau": 0.0}),
        ["inputs.tau: unknown input; accepted: inputs declared by forces: (none)"]),
    "arc length on a rigid body": (
        lambda d: d["joints"][1].update(a={"body": "box", "arc_length": 0.2}),
        ["joints[1].a:", "a point on 'box' is written {\"body\": name, \"point\": [x, y, z]}"]),
    "marker beyond the bar": (
        lambda d: d["bodies"][1]["markers"].update(end=0.7),
        ["bodies[1].markers.end: 0.7 is invalid: accepted values are arc lengths in [0, 0.5] m"]),
    "torque on a bar": (
        lambda d: d["forces"][0].update(body="rod"),
        ["forces[0].body: body 'rod' is a bar; accepted: a rigid body"]),
    "thin inertia": (
        lambda d: d["bodies"][0].update(inertia=[0.01, 0.01, 0.03]),
        ["bodies[0].inertia:", "each smaller than the sum of the other two"]),
    "body without a type": (
        lambda d: d["bodies"][1].pop("type"),
        ["bodies[1].type: missing required key (accepted rigid_body, bar, cable, beam)"]),
    "bad redundancy policy": (
        lambda d: d.update(redundant="ignore"),
        ["redundant: 'ignore' is invalid: accepted values are 'keep' or 'remove' or 'error'"]),
}


@pytest.mark.parametrize("name", BROKEN)
def test_broken_spatial_file_is_refused_with_key_path_and_accepted_values(name):
    change, words = BROKEN[name]
    d = pendulum_dict()
    change(d)
    with pytest.raises(ModelFileError) as err:
        model_from_dict(d)
    for w in words:
        assert w in str(err.value), (w, err.value.problems)
    assert validate_model(d) == err.value.problems


def test_every_problem_of_a_spatial_file_is_reported_at_once(tmp_path):
    d = pendulum_dict()
    for name in ("wrong vector length", "non-orthonormal orientation", "unknown key",
                 "planar key in a 3D body", "unknown joint type"):
        BROKEN[name][0](d)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))
    with pytest.raises(ModelFileError) as err:
        load_model(path)
    paths = [p.split(":")[0] for p in err.value.problems]
    assert paths == ["gravity", "bodies[0].colour", "bodies[0].angle",
                     "bodies[0].orientation", "joints[0].type"], err.value.problems


def test_what_the_format_cannot_express_is_refused_when_saving():
    s = pendulum_in_python()
    s.forces_list[0] = BodyTorque("box", lambda t: (0.0, 0.0, math.sin(t)), name="wobble")
    s.forces_list[0].bind(s)
    with pytest.raises(ModelFileError, match=r"forces\[0\] \(wobble\): the torque .* function "
                                             "of time"):
        model_to_dict(s)
    curved = SpatialSystem()
    curved.add(ANCFCable.from_nodes("net", [(0, 0, 0), (1, 0.1, 0), (2, 0, 0)], rho_a=0.1,
                                    ea=1e4, ei=0.1))
    with pytest.raises(ModelFileError, match=r"bodies\[0\] \(net\): .*from_nodes"):
        model_to_dict(curved)


# --- the two dimensions -----------------------------------------------------------------------
def test_planar_files_load_unchanged_through_either_reader():
    for path in sorted(EXAMPLES.glob("*.json")):
        a, b = planar.load_model(path), load_model(path)
        assert type(a) is type(b) and not isinstance(b, SpatialSystem)
        assert planar.model_to_dict(a) == model_to_dict(b)
    d = planar.model_to_dict(mechanisms.four_bar())
    assert "dimension" not in d     # planar files are written as before
    assert planar.validate_model({**d, "dimension": 2}) == []


def test_planar_reader_refuses_a_spatial_file_naming_the_spatial_reader():
    with pytest.raises(ModelFileError) as err:
        planar.load_model(PENDULUM)
    assert err.value.problems == [
        "dimension: 3 is a spatial model, which this planar reader does not build; accepted "
        "here: 2; read it with mbdcore.spatial.load_model (which reads both)"]
    bad = {**pendulum_dict(), "dimension": 4}
    for validate in (planar.validate_model, validate_model):
        assert validate(bad) == ["dimension: 4 is invalid: accepted values are 2 (planar) "
                                 "and 3 (spatial, read by mbdcore.spatial.load_model)"]


def test_schema_and_reference_come_from_the_validator_tables():
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(MODEL_SCHEMA)
    validator = jsonschema.Draft202012Validator(MODEL_SCHEMA)
    for system in (bricard(), heavy_top(), hub_beam_3d(n_elements=2)):
        validator.validate(model_to_dict(system))
    validator.validate(pendulum_dict())
    bad = copy.deepcopy(pendulum_dict())
    bad["bodies"][0]["position"] = [0, 0]
    assert not validator.is_valid(bad)


def test_format_reference_names_every_spatial_type_and_key():
    text = format_reference()
    for word in ("type 'rigid_body'", "type 'bar'", "type 'cable'", "type 'beam'",
                 "type 'cable_clamp'", "type 'gear'", "type 'body_torque'",
                 "motion type 'spin_up'", "orientation", "stress_free_length", "redundant"):
        assert word in text, word
