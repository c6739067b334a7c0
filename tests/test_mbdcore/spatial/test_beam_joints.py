"""Joints on a fully parameterised ANCF beam (issue 23, item 3): the beam has a frame at
every section (r_x, r_y, r_z), so a revolute, prismatic or fixed joint between it and a
rigid body takes its rows from that frame.  Before: a ParameterError pointing to the
cable clamp (still the answer for the gradient-deficient cable, which has no frame about
its axis: test_flexible_model_guidance.py).

The mechanism: a rigid hub on a bearing about z driven by the torque input ``tau``, and
a 1 m ANCF beam along x hinged to it at a 0.2 m offset; no gravity."""
import numpy as np
import pytest

from mbdcore.dae.simulate import simulate
from mbdcore.spatial import SpatialSystem
from mbdcore.spatial.ancf import ANCFBeam3D
from mbdcore.spatial.forces import BodyTorque
from mbdcore.spatial.joints import CableClamp, Fixed, Revolute
from mbdcore.spatial.model_file import model_from_dict, model_to_dict
from mbdcore.spatial.system_block import SpatialSystemBlock

TAU = 0.5                 # hub torque [N m]
J_HUB = 0.08              # hub inertia about the bearing [kg m^2]
AXES = {"lag": (0.0, 0.0, 1.0), "flap": (0.0, 1.0, 0.0), "feather": (1.0, 0.0, 0.0)}


def rotor(hinge: str, offset: float = 0.2) -> SpatialSystem:
    """Hub and beam; ``hinge`` a revolute about AXES[hinge], "clamp" (CableClamp along
    x) or "fixed"."""
    s = SpatialSystem()
    s.ground.add_marker("axis", (0.0, 0.0, 0.0))
    s.add_body("hub", mass=2.0, inertia=(0.05, 0.05, J_HUB),
               markers={"c": (0.0, 0.0, 0.0), "hinge": (offset, 0.0, 0.0)})
    # rho_a [kg/m], EA [N], EI_xy, EI_xz, GJ [N m^2], rho I_yy, rho I_zz [kg m]
    s.add(ANCFBeam3D("blade", (offset, 0.0, 0.0), (offset + 1.0, 0.0, 0.0), 3, 0.5, 1e5,
                     20.0, 20.0, 10.0, 1e-5, 1e-5))
    s.add_joint(Revolute("ground.axis", "hub.c", (0.0, 0.0, 1.0), name="bearing"))
    if hinge == "clamp":
        s.add_joint(CableClamp("hub.hinge", "blade.root", (1.0, 0.0, 0.0), name="hinge"))
    elif hinge == "fixed":
        s.add_joint(Fixed("hub.hinge", "blade.root", name="hinge"))
    else:
        s.add_joint(Revolute("hub.hinge", "blade.root", AXES[hinge], name="hinge"))
    s.add_force(BodyTorque("hub", input="tau", axis=(0.0, 0.0, 1.0), name="motor"))
    return s


def run(system, t_end: float, h: float):
    return simulate(system, t_end, h, "generalized-alpha", inputs=lambda t: {"tau": TAU})


def angular_momentum_z(system, q, v) -> float:
    """About the bearing axis [kg m^2/s]: the generalised momentum M v on the coordinate
    change of a rigid rotation about z (Noether), e_z x every 3-vector of the
    coordinates (the hub's point and axes, the beam's r, r_x, r_y, r_z)."""
    turn = np.cross([0.0, 0.0, 1.0], q.reshape(-1, 3)).ravel()
    return float((system.mass_matrix(q) @ v) @ turn)


def hub_angle(system, q) -> np.ndarray:
    names = system.coordinate_names()
    return np.unwrap(np.arctan2(q[:, names.index("hub.uy")], q[:, names.index("hub.ux")]))


def test_a_pin_at_the_axis_passes_no_moment():
    """A lag hinge at the bearing axis (no offset): the beam takes no moment about z and
    no force (its root stays on the fixed axis), so it stays at rest while the hub
    turns as a free rigid body, theta = tau t^2 / (2 J)."""
    system = rotor("lag", offset=0.0)
    r = run(system, 0.2, 0.01)
    start = system.coordinate_names().index("blade.n0.rx")
    assert np.abs(r.q[:, start:] - r.q[0, start:]).max() < 1e-12
    # to the method's second-order error, (omega h)^2 = (1.25 rad/s 0.01 s)^2 = 1.6e-4
    np.testing.assert_allclose(hub_angle(system, r.q), TAU * r.t**2 / (2 * J_HUB),
                               rtol=1e-4, atol=1e-12)
    assert r.violation.max() < 1e-10


@pytest.mark.parametrize("hinge", ["lag", "flap"])
def test_a_hinged_beam_keeps_the_momentum_and_energy_balance_to_second_order(hinge):
    """With the hinge 0.2 m off the axis the beam swings about it (lag) or stays in the
    plane its hinge allows (flap); either way the torque is the only moment about the
    bearing and the only power: L_z(t) = tau t and E(t) - E(0) = tau theta(t).  The
    integrator's error in both falls as h^2 (generalized-alpha is second order; measured
    ratios 3.96-4.0 between h = 10 ms and 5 ms), and the joint rows hold to round-off."""
    errors = []
    for h in (0.01, 0.005):
        system = rotor(hinge)
        r = run(system, 0.3, h)
        momentum = [angular_momentum_z(system, q, v) for q, v in zip(r.q, r.v)]
        work = TAU * (hub_angle(system, r.q) - hub_angle(system, r.q)[0])
        errors.append((np.abs(np.array(momentum) - TAU * r.t).max(),
                       np.abs(r.energy - r.energy[0] - work).max()))
        assert r.violation.max() < 1e-10
    (l1, e1), (l2, e2) = errors
    assert l1 < 1e-5 and e1 < 2e-5                    # against L = 0.15, W = 0.13 J
    assert 3.0 < l1 / l2 < 5.0 and 3.0 < e1 / e2 < 5.0


def test_a_hinge_along_the_beam_is_the_cable_clamp():
    """A revolute about the beam's own axis has the rows of the cable clamp (the points,
    r_x normal to the hub's two directions across x): the same trajectory to
    round-off; the beam moved."""
    a = run(rotor("feather"), 0.2, 0.01)
    b = run(rotor("clamp"), 0.2, 0.01)
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-12)
    assert np.abs(a.q[-1] - a.q[0]).max() > 1e-3


def test_a_fixed_joint_holds_the_beam_section_to_the_hub():
    """Fixed: the root section's r_y and r_z stay the hub's y and z axes."""
    system = rotor("fixed")
    r = run(system, 0.2, 0.01)
    names = system.coordinate_names()
    q = r.q[-1]
    for hub_axis, director in (("v", "y"), ("w", "z")):
        axis = q[[names.index(f"hub.{hub_axis}{c}") for c in "xyz"]]
        d = q[[names.index(f"blade.n0.{director}{c}") for c in "xyz"]]
        np.testing.assert_allclose(d / np.linalg.norm(d), axis, rtol=0, atol=1e-8)
    assert hub_angle(system, r.q)[-1] > 0.01


# --- the same in a model file ------------------------------------------------------------------
def rotor_file() -> dict:
    d = model_to_dict(rotor("lag"))
    d["inputs"] = {"tau": TAU}
    d["outputs"] = ["angle.bearing", "angle.hinge", "position.blade.tip.y", "energy"]
    return d


def test_a_revolute_to_a_beam_in_a_file_builds_the_block_with_inputs_outputs_method():
    """Before: ParameterError (joints[1]: ... cannot carry the hinge's axis).  The hinge's
    angle is an output (the beam's section is the reference across the axis); the block
    defaults to generalized-alpha and follows simulate."""
    d = rotor_file()
    assert model_to_dict(model_from_dict(d)) == d
    block = SpatialSystemBlock.for_model(d)
    assert [s.name for s in block.OUTPUTS] == d["outputs"]
    assert [(s.name, s.start) for s in block.INPUTS] == [("tau", TAU)]
    b = block()
    assert (b.params["method"], b.params["substeps"]) == ("generalized-alpha", 1)
    h, steps = 0.01, 20
    for k in range(steps):
        b.set_inputs({"tau": TAU})
        b.do_step(k * h, h)
    ref = run(model_from_dict(d), steps * h, h)
    np.testing.assert_allclose(b.q, ref.q[-1], rtol=0, atol=1e-10)
    out = b.outputs()
    assert out["angle.bearing"] == pytest.approx(hub_angle(b.system, ref.q)[-1], abs=1e-10)
    assert abs(out["angle.hinge"]) > 1e-3       # the beam lags behind the hub
