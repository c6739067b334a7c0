"""Reference trajectories as blocks (no inputs; outputs are functions of time)."""
from __future__ import annotations

import numpy as np

from controllers.laws.kernels import JOINT_LAWS_C_SOURCES, joint_laws
from mbdcore.blocks import Block, Parameter, Signal
from mbdcore.codegen import CModel, stateless_functions
from mbdcore.integrators.piecewise import PiecewiseInput

__all__ = ["quintic", "quintic_schedule", "QuinticJointTrajectory"]


def quintic(t: float, start: float, end: float, duration: float):
    """Rest-to-rest quintic from ``start`` to ``end`` in ``duration`` [s].

    Returns position, rate and acceleration (in the units of start/end, per s, per s^2);
    s(tau) = 10 tau^3 - 15 tau^4 + 6 tau^5 has zero rate and acceleration at both ends.
    Evaluated by the C law (``native/joint_laws.c``), the one its C FMU runs.
    """
    out = np.empty(3)
    joint_laws().quintic(float(t), float(start), float(end), float(duration), out)
    return float(out[0]), float(out[1]), float(out[2])


def quintic_schedule(starts, ends, duration: float, start_time: float = 0.0,
                     derivatives: bool = False, names=None, units=None) -> PiecewiseInput:
    """Rest-to-rest quintics of several joints as a table a C loop samples
    (:class:`~mbdcore.integrators.PiecewiseInput`): joint i from ``starts[i]`` to
    ``ends[i]`` between ``start_time`` and ``start_time + duration`` [s], at rest before
    and after.  One signal per joint (its position, in the unit of start/end), or with
    ``derivatives`` three — position, rate [/s], acceleration [/s^2] — per joint in that
    order, the order of :class:`QuinticJointTrajectory`'s outputs.

    The pieces are :func:`quintic`'s polynomial s(tau) = 10 tau^3 - 15 tau^4 + 6 tau^5
    of tau = (t - start_time)/duration written in powers of t - start_time, so the two
    agree to the rounding of the power form (about 1e-15 of the move and its rates)."""
    starts, ends = np.atleast_1d(np.asarray(starts, float)), np.atleast_1d(np.asarray(ends, float))
    if starts.shape != ends.shape or starts.ndim != 1:
        raise ValueError(f"starts {starts.tolist()} and ends {ends.tolist()}: accepted one "
                         "value per joint each")
    if not (np.isfinite(duration) and duration > 0):
        raise ValueError(f"duration = {duration!r} s: accepted a finite time > 0")
    T = float(duration)
    moving, resting = [], []
    for start, end in zip(starts, ends):
        d = end - start
        position = [start, 0.0, 0.0, 10 * d / T**3, -15 * d / T**4, 6 * d / T**5]
        rate = [0.0, 0.0, 30 * d / T**3, -60 * d / T**4, 30 * d / T**5, 0.0]
        acceleration = [0.0, 60 * d / T**3, -180 * d / T**4, 120 * d / T**5, 0.0, 0.0]
        rows = (position, rate, acceleration) if derivatives else (position,)
        moving += rows
        resting += [[end] + [0.0] * 5] + ([[0.0] * 6] * 2 if derivatives else [])
    return PiecewiseInput([start_time, start_time + T], [moving, resting], names, units)


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

    def schedule(self) -> PiecewiseInput:
        """The block's outputs over time as a table a C loop samples
        (:func:`quintic_schedule`), named and with units as :attr:`OUTPUTS`."""
        p = self.params
        return quintic_schedule([p["theta1_start"], p["theta2_start"]],
                                [p["theta1_end"], p["theta2_end"]], p["move_time"],
                                p["start_time"], derivatives=True,
                                names=[s.name for s in self.OUTPUTS],
                                units=[s.unit for s in self.OUTPUTS])

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

