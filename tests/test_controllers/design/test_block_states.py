"""Every block has a named, flat state vector (``Block.vector_state()``): the
python-control adapters, linearisation and state round trips work on any block the same
way, with no special case (the adapters used to special-case the arm and refused
state-vector blocks such as the DC motor)."""
from __future__ import annotations

import control as ct
import numpy as np
import pytest

from controllers.design.adapters import block_iosys
from controllers.laws.joint_pd import JointTorqueLaw
from controllers.laws import (AntennaServoController, ArmLQGController, ComputedTorqueController,
                              FlexibleArmReference, JointPDController, NotchFilter,
                              PIDController, PointingReference, QuinticJointTrajectory,
                              ShapedQuinticTrajectory)
from mbdcore.blocks import Block, StateVectorBlock
from mbdcore.dae import OdeBlock
from mbdcore.models.linear import LinearSystemBlock
from mbdcore.models import (AntennaStructureBlock, DCMotorBlock, FlexibleManipulatorBlock,
                            PointingAxisBlock)
from mbdcore.models.mechanisms import slider_crank
from mbdcore.models.model_block import ModelSystemBlock, model_system_block
from mbdcore.multibody.model_file import model_to_dict
from mbdcore.models.ring_truss_block import RingTrussBlock
from mbdcore.multibody.system_block import SystemBlock
from mbdcore.spatial import SpatialSystemBlock, spatial_system_block

H = 1e-3

#: a carriage on a rail pushed by a motor's screw up to a latch (the models' file elements)
SCREW_SLIDER = {"format": "flexcosim-model", "version": 1, "dimension": 3,
                "ground": {"markers": {"O": [0, 0, 0], "rail": [0.5, 0, 0]}},
                "bodies": [{"type": "rigid_body", "name": "carriage", "mass": 2.0,
                            "inertia": [0.01, 0.01, 0.01], "position": [0.5, 0, 0],
                            "markers": {"p": [0, 0, 0]}},
                           {"type": "dc_motor", "name": "motor", "friction_speed": 0.3}],
                "joints": [{"type": "prismatic", "a": "ground.rail", "b": "carriage.p",
                            "axis": [1, 0, 0]}],
                "forces": [{"type": "motor_voltage", "motor": "motor", "input": "voltage"},
                           {"type": "screw_drive", "motor": "motor", "a": "ground.O",
                            "b": "carriage.p", "lead": 0.002, "ratio": 4.0, "stiffness": 2e5,
                            "damping": 2e3},
                           {"type": "latch", "a": "ground.O", "b": "carriage.p",
                            "deployed_length": 0.5005, "stiffness": 1e7, "damping": 1e4}]}


def _slider_crank_block(**params):
    cls = SystemBlock.configured({"model": model_to_dict(slider_crank()), "inputs": ["tau"]})
    return cls(**params)


BLOCKS = {
    "arm": FlexibleManipulatorBlock,
    "motor": DCMotorBlock,
    "structure": AntennaStructureBlock,
    "axis": PointingAxisBlock,
    "slider-crank": _slider_crank_block,
    "joint PD": JointPDController,
    "computed torque": ComputedTorqueController,
    "PID": PIDController,
    "notch": NotchFilter,
    "LQG": ArmLQGController,
    "antenna servo": AntennaServoController,
    "pointing reference": PointingReference,
    "quintic": QuinticJointTrajectory,
    "shaped quintic": ShapedQuinticTrajectory,
    "flexible reference": FlexibleArmReference,
    "spatial double pendulum": lambda: spatial_system_block(
        "examples/models/spatial/double_pendulum.json")(substeps=2),
    "ring truss": lambda: RingTrussBlock.configured({"n_bays": 4})(folded_angle=1.2),
    "screw slider file": lambda: model_system_block(SCREW_SLIDER)(substeps=2),
    "linear plant": lambda: LinearSystemBlock.configured(
        {"A": [[0.0, 1.0], [-4.0, -0.4]], "B": [[0.0], [1.0]], "C": [[1.0, 0.0]],
         "D": [[0.5]]})(),
}


def _excite(block: Block, steps: int = 20) -> None:
    for k in range(steps):
        for i, name in enumerate(block.input_names()):
            block.set_input(name, 0.05 * (i + 1) * np.sin(0.3 * k + i))
        block.do_step(k * H, H)


def test_every_block_class_of_the_project_is_covered():
    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)
    bases = {StateVectorBlock, OdeBlock, JointTorqueLaw}   # shared bases, not blocks
    project = {c for c in subclasses(Block)
               if c.__module__.split(".")[0] in ("mbdcore", "controllers")
               and c not in bases and not c.__name__.startswith("Configured")
               and not c.__dict__.get("CONFIGURED", False)}
    covered = {type(make()) for make in BLOCKS.values()} | {SystemBlock, LinearSystemBlock,
                                                            SpatialSystemBlock, RingTrussBlock,
                                                            ModelSystemBlock}
    assert project <= covered, sorted(c.__name__ for c in project - covered)


@pytest.mark.parametrize("name", BLOCKS)
def test_state_vector_is_named_and_round_trips(name):
    block = BLOCKS[name]()
    _excite(block)
    vs = block.vector_state()
    x = vs.get(block)
    assert x.ndim == 1 and len(vs.names) == len(x) == len(set(vs.names))
    assert np.all(np.isfinite(x))
    outputs = block.outputs()
    vs.set(block, x)                                  # writing the same state back ...
    np.testing.assert_array_equal(vs.get(block), x)
    assert block.outputs() == pytest.approx(outputs, rel=1e-12, abs=1e-15)   # ... changes nothing
    # the vector is the whole state: from it, a step goes where it went before
    block.do_step(0.02, H)
    after = vs.get(block)
    vs.set(block, x)
    block.do_step(0.02, H)
    np.testing.assert_allclose(vs.get(block), after, rtol=1e-12, atol=1e-15)


def test_state_vector_blocks_are_python_control_systems_too():
    """The DC motor, a StateVectorBlock, through the generic adapter: python-control's
    simulation of it equals stepping the block itself."""
    motor = DCMotorBlock()
    sys = block_iosys(motor, H, inputs=["voltage"])
    assert sys.state_labels == ["phi1", "speed1", "current1", "z1"]
    t = np.arange(0.0, 0.2 + H / 2, H)
    u = 12.0 * (t > 0.01)
    x0 = sys.x0.copy()
    resp = ct.input_output_response(sys, t, u, x0)
    direct = DCMotorBlock()
    speeds = [direct.outputs()["speed1"]]
    for k in range(len(t) - 1):
        direct.set_input("voltage", u[k])
        direct.do_step(t[k], H)
        speeds.append(direct.outputs()["speed1"])
    np.testing.assert_allclose(resp.outputs[sys.find_output("speed1")], speeds,
                               rtol=1e-12, atol=1e-12)
    assert speeds[-1] > 0.1                            # it did spin up
