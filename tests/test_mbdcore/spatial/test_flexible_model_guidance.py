"""Flexible bodies where a user meets them first (issue 23): a flexible model as a block
with the explicit method, once the default, fails its first steps ("... with no hint
that an implicit method fits"): a flexible model's block now defaults to the implicit
method, and a failed explicit step says what to change, and the change works; a hinge or
slider put on an ANCF cable crashed with an AttributeError: it is refused, naming what
holds a cable end instead (an ANCF beam carries them: test_beam_joints.py)."""
import pytest

from mbdcore.blocks import ParameterError, StepError
from mbdcore.spatial import SpatialSystem, Spherical
from mbdcore.spatial.ancf import ANCFCable
from mbdcore.multibody.model_file import ModelFileError
from mbdcore.spatial.joints import Prismatic, Revolute
from mbdcore.spatial.model_file import model_from_dict
from mbdcore.spatial.system_block import SpatialSystemBlock

G = 9.81          # [m/s^2]
H = 1e-3          # communication step [s]


def hanging_cable() -> SpatialSystem:
    """A 1 m cable (EA = 1e5 N: axial period about 1e-3 s per element) pinned at one end
    and released horizontal under gravity."""
    system = SpatialSystem(gravity=(0.0, 0.0, -G))
    system.ground.add_marker("anchor", (0.0, 0.0, 0.0))
    system.add(ANCFCable("c", (0, 0, 0), (1.0, 0, 0), 4, 0.1, 1e5, 1e-2))
    system.add_joint(Spherical("ground.anchor", "c.root"))
    return system


def test_a_flexible_model_defaults_to_the_implicit_method():
    """Before: rk4 with 10 substeps, which failed at the first steps."""
    block = SpatialSystemBlock.for_model(hanging_cable())()
    assert (block.params["method"], block.params["substeps"]) == ("generalized-alpha", 1)
    for k in range(20):
        block.do_step(k * H, H)


def test_the_explicit_method_fails_saying_to_use_an_implicit_method():
    block = SpatialSystemBlock.for_model(hanging_cable())(method="rk4", substeps=10)
    with pytest.raises(StepError) as failed:
        for k in range(100):
            block.do_step(k * H, H)
    message = str(failed.value)
    assert "exceeds its length" in message           # the cause, as before
    assert "stiff elements ('c')" in message and "'rk4'" in message
    assert "set method = 'generalized-alpha'" in message


def test_the_advice_works_and_the_cable_falls_as_a_pinned_body_does():
    """generalized-alpha at one step per communication step: 0.2 s without a failure,
    the pinned end at the anchor, and the cable's centre of mass (trapezoidal over its
    nodes) below its start but not below a free body's fall (0.196 m): the pin can only
    hold it back."""
    block = SpatialSystemBlock.for_model(hanging_cable())(method="generalized-alpha",
                                                          substeps=1)
    assert block.what_to_change(H) == ""              # an implicit method: nothing to add
    steps = 200
    for k in range(steps):
        block.do_step(k * H, H)
    q = dict(zip(block.system.coordinate_names(), block.q))
    assert max(abs(q[f"c.n0.r{x}"]) for x in "xyz") < 1e-8
    z = [q[f"c.n{i}.rz"] for i in range(5)]
    z_centre = (z[0] / 2 + sum(z[1:4]) + z[4] / 2) / 4
    free_fall = 0.5 * G * (steps * H) ** 2
    assert 0.3 * free_fall < -z_centre < 1.01 * free_fall


@pytest.mark.parametrize("joint", ["revolute", "prismatic"])
def test_a_hinge_or_slider_on_a_cable_is_refused_naming_the_cable_clamp(joint):
    """A revolute (or prismatic) joint between a rigid hub and an ANCF cable crashed with
    ``AttributeError: ... has no attribute 'local_direction'`` (issue 23): the joint's
    direction needs a frame about the cable's axis, which a gradient-deficient cable
    has not.  Refused by name, saying what holds a cable end on a rigid body.  (An ANCF
    beam has that frame, r_x, r_y, r_z, and takes the joint: test_beam_joints.py.)"""
    system = SpatialSystem()
    system.ground.add_marker("axis", (0.0, 0.0, 0.0))
    system.add_body("hub", mass=1.0, inertia=(1.0, 1.0, 1.0), markers={"m": (0.0, 0.0, 0.0)})
    system.add(ANCFCable("b", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0), 2, 0.1, 1e5, 1e-2))
    kind = {"revolute": Revolute, "prismatic": Prismatic}[joint]
    with pytest.raises(ParameterError, match=r"body 'b' \(ANCF.*\) cannot carry the .*"
                                             r"cable clamp"):
        system.add_joint(kind("hub.m", "b.root", (0.0, 0.0, 1.0), name="j"))
        SpatialSystemBlock.for_model(system)()


def test_the_same_in_a_model_file_is_named_by_key_path():
    model = {"format": "flexcosim-model", "version": 1, "dimension": 3,
             "bodies": [{"name": "hub", "type": "rigid_body", "mass": 1.0,
                         "inertia": [1, 1, 1], "markers": {"m": [0, 0, 0]}},
                        {"name": "b", "type": "cable", "start": [0, 0, 0], "end": [1, 0, 0],
                         "n_elements": 2, "rho_a": 0.1, "ea": 1e5, "ei": 1e-2}],
             "joints": [{"name": "j", "type": "revolute", "a": "hub.m", "b": "b.root",
                         "axis": [0, 0, 1]}]}
    with pytest.raises(ModelFileError, match=r"joints\[0\]: j: body 'b' \(ANCFCable\) cannot "
                                             r"carry the hinge's axis.*cable_clamp"):
        model_from_dict(model)
