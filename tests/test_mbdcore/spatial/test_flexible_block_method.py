"""A flexible model as a block with the default explicit method (issue 23: "a flexible
model's FMU defaults to rk4 with 10 substeps and fails its first step ... with no hint
that an implicit method fits"): the failed step says what to change, and the change
works."""
import pytest

from mbdcore.blocks import StepError
from mbdcore.spatial import SpatialSystem, Spherical
from mbdcore.spatial.ancf import ANCFCable
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


def test_the_explicit_default_fails_saying_to_use_an_implicit_method():
    block = SpatialSystemBlock.for_model(hanging_cable())()
    assert block.params["method"] == "rk4"
    with pytest.raises(StepError) as failed:
        for k in range(100):
            block.do_step(k * H, H)
    message = str(failed.value)
    assert "exceeds its length" in message           # the cause, as before
    assert "flexible bodies ('c')" in message and "'rk4'" in message
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
