"""Reference trajectories as blocks (no inputs; outputs are functions of time)."""
from __future__ import annotations

import numpy as np

from controllers.laws.kernels import JOINT_LAWS_C_SOURCES, joint_laws
from mbdcore.blocks import Block, Parameter, Signal
from mbdcore.codegen import CModel, stateless_functions

__all__ = ["quintic", "QuinticJointTrajectory"]


def quintic(t: float, start: float, end: float, duration: float):
    """Rest-to-rest quintic from ``start`` to ``end`` in ``duration`` [s].

    Returns position, rate and acceleration (in the units of start/end, per s, per s^2);
    s(tau) = 10 tau^3 - 15 tau^4 + 6 tau^5 has zero rate and acceleration at both ends.
    Evaluated by the C law (``native/joint_laws.c``), the one its C FMU runs.
    """
    out = np.empty(3)
    joint_laws().quintic(float(t), float(start), float(end), float(duration), out)
    return float(out[0]), float(out[1]), float(out[2])


class QuinticJointTrajectory(Block):
    """Point-to-point joint reference for a two-joint arm (docs/benchmarks.md §1, closed loop).

    Each joint moves from ``theta<i>_start`` to ``theta<i>_end`` [rad] along a
    rest-to-rest quintic that starts at ``start_time`` and lasts ``move_time`` [s].
    Outputs the reference angle [rad], rate [rad/s] and acceleration [rad/s^2] of each
    joint at the block's current time.
    """

    OUTPUTS = tuple(
        Signal(f"{kind}{i}_ref", unit, f"joint {i} reference {what}")
        for i in (1, 2)
        for kind, unit, what in (("theta", "rad", "angle"), ("omega", "rad/s", "rate"),
                                 ("alpha", "rad/s2", "acceleration")))
    PARAMETERS = (
        Parameter("theta1_start", 0.0, "rad", "joint 1 start angle", min=-10.0, max=10.0),
        Parameter("theta1_end", 0.2617993877991494, "rad", "joint 1 target angle (15 deg)",
                  min=-10.0, max=10.0),
        Parameter("theta2_start", 0.0, "rad", "joint 2 start angle", min=-10.0, max=10.0),
        Parameter("theta2_end", 0.17453292519943295, "rad", "joint 2 target angle (10 deg)",
                  min=-10.0, max=10.0),
        Parameter("move_time", 2.0, "s", "duration of the move", min=0.0, exclusive_min=True),
        Parameter("start_time", 0.0, "s", "time the move starts", min=0.0),
    )
    DEFAULT_STOP_TIME = 3.0
    DEFAULT_STEP_SIZE = 1e-3

    def outputs(self) -> dict:
        p = self.params
        t = self.time - p["start_time"]
        out = {}
        for i in (1, 2):
            th, om, al = quintic(t, p[f"theta{i}_start"], p[f"theta{i}_end"], p["move_time"])
            out[f"theta{i}_ref"], out[f"omega{i}_ref"], out[f"alpha{i}_ref"] = th, om, al
        return out

    def c_model(self) -> CModel:
        """The reference in C (``native/joint_laws.c``, the code this block runs)."""
        joints = "".join(f"""
    quintic(t, PAR_theta{i}_start, PAR_theta{i}_end, PAR_move_time, o);
    OUT_theta{i}_ref = o[0];
    OUT_omega{i}_ref = o[1];
    OUT_alpha{i}_ref = o[2];""" for i in (1, 2))
        glue = stateless_functions("    double t = d->time - PAR_start_time, o[3];" + joints)
        return CModel(glue, c_sources=JOINT_LAWS_C_SOURCES, api=("RIGID_API", "LAWS_API"))

