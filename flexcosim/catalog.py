"""The application's names: its commands and the models ``flexcosim build`` and
``flexcosim export-c`` know, each mapped to a ``"module:attribute"`` string that is
imported only when a command runs (:func:`resolve`).

Strings rather than the classes themselves: the models import numpy, scipy and
python-control (seconds), and ``flexcosim --help``, ``--version`` or a mistyped name need
none of them.  This module imports only the standard library.  ``docs/architecture.md``:
looking a module up by name is the application's alone, through :func:`resolve`, and
``tests/test_architecture.py`` counts every string of :data:`LOOKUPS` as an import of
the application, so the layer rules see them.
"""
from __future__ import annotations

import importlib
from typing import Any, NamedTuple

__all__ = ["COMMANDS", "BuiltIn", "BUILD_MODELS", "RING_TRUSS", "MODEL_FILE_SUFFIXES",
           "CExport", "C_MODELS", "FROM_FILE", "LOOKUPS", "resolve"]

#: ``flexcosim COMMAND`` -> the function that runs it: ``run(args) -> exit code``
COMMANDS = {
    "demo": "flexcosim.commands.demo:run",
    "build": "flexcosim.commands.build:run",
    "export-c": "flexcosim.commands.export_c:run",
    "cosim": "flexcosim.commands.cosim:run",
}


class BuiltIn(NamedTuple):
    """A model ``flexcosim build NAME`` knows: its block class and FMU model name."""
    block: str
    model_name: str


#: ``flexcosim build NAME`` (and the demo's FMUs, :data:`flexcosim.demo.MODELS`)
BUILD_MODELS = {
    "manipulator": BuiltIn("mbdcore.models.manipulator:FlexibleManipulatorBlock",
                           "FlexibleManipulator"),
    "joint-pd": BuiltIn("controllers.laws.joint_pd:JointPDController", "JointPDController"),
    "trajectory": BuiltIn("controllers.laws.trajectory:QuinticJointTrajectory",
                          "QuinticJointTrajectory"),
}

#: ``flexcosim build`` name of the deployable ring truss (configured by ``--bays``)
RING_TRUSS = "ring-truss"

#: What ``flexcosim build`` reads as a model file rather than a built-in name
MODEL_FILE_SUFFIXES = (".json", ".yaml", ".yml")


class CExport(NamedTuple):
    """A model ``flexcosim export-c NAME`` knows: its block class (None: made from the
    ``--from`` file), the default model identifier, and what it is."""
    block: str | None
    model_name: str
    description: str


#: Models with C equations, for ``flexcosim export-c``
C_MODELS = {
    "manipulator": CExport("mbdcore.models.manipulator:FlexibleManipulatorBlock",
                           "FlexibleManipulatorC",
                           "the two-link flexible arm (--set n_modes=3, mode_shapes=clamped-free, "
                           "l1=0.6, ...: built in at export)"),
    "joint-pd": CExport("controllers.laws.joint_pd:JointPDController", "JointPDControllerC",
                        "the joint PD controller with rigid feedforward (the rigid arm built in)"),
    "lqg": CExport("controllers.laws.arm_lqg:ArmLQGController", "ArmLQGControllerC",
                   "the LQG/LQI state feedback of the flexible arm (--from DESIGN.json, an "
                   "LQGDesign.to_json() text; default: the stored default design; built in)"),
    "trajectory": CExport("controllers.laws.trajectory:QuinticJointTrajectory",
                          "QuinticJointTrajectoryC", "the quintic joint reference"),
    "shaped-trajectory": CExport("controllers.laws.input_shaping:ShapedQuinticTrajectory",
                                 "ShapedQuinticTrajectoryC",
                                 "the quintic joint reference through an input shaper (--set "
                                 "shaper=zvd, frequency1=...: built in at export)"),
    "pid": CExport("controllers.laws.pid:PIDController", "PIDControllerC",
                   "the sampled PID with anti-windup, derivative filter and limits"),
    "notch": CExport("controllers.laws.notch:NotchFilter", "NotchFilterC",
                     "the discrete notch filter (biquad)"),
    "statespace": CExport(None, "StateSpace",
                          "a linear(ised) plant x' = A x + B u, y = C x + D u from --from FILE"),
    "antenna-axis": CExport("mbdcore.models.antenna:PointingAxisBlock", "PointingAxisC",
                            "the antenna pointing axis: drive motors, gear trains, flexible "
                            "structure (--set n_motors=2, reflector_ei=..., ...: structure "
                            "built in at export)"),
    "antenna-servo": CExport("controllers.laws.antenna_servo:AntennaServoController",
                             "AntennaServoC", "the antenna servo cascade (position and rate "
                             "PI, friction feedforward)"),
    "drive": CExport("mbdcore.models.drive:DCMotorBlock", "DCMotorC",
                     "DC servo motors with gearboxes and current amplifiers "
                     "(--set n_motors=2: built in at export)"),
}

#: What ``export-c --from FILE`` is, per model that takes one
FROM_FILE = {"statespace": "a state-space JSON file (mbdcore.models.linear.save_state_space)",
             "lqg": "an LQG design JSON file (LQGDesign.to_json())"}

#: Every ``"module:attribute"`` the application looks up by name
LOOKUPS = tuple(COMMANDS.values()) + tuple(m.block for m in BUILD_MODELS.values()) + tuple(
    m.block for m in C_MODELS.values() if m.block is not None)


def resolve(ref: str) -> Any:
    """The object a ``"module:attribute"`` string of :data:`LOOKUPS` names, importing
    its module.  Any other string is refused: the architecture test checks the layers of
    :data:`LOOKUPS` only."""
    if ref not in LOOKUPS:
        raise ValueError(f"{ref!r} is not in flexcosim.catalog.LOOKUPS (the application's "
                         "lookups by name)")
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)
