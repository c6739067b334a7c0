"""Tuning at scale: the arm's closed-loop move as one case of a sweep.

:func:`evaluate_move` runs one point-to-point move of the arm from a case of plain
numbers; :func:`mbdcore.sweep.sweep` runs many of them in parallel, over local processes,
any ``concurrent.futures`` executor or a Dask client (docs/sweeps.md).
``bench/sweep.py`` prints the cases per second on 1 and 2 workers.
"""
from __future__ import annotations

from typing import Any, Mapping

from controllers.design.validation import validate_move
from controllers.laws.input_shaping import ShapedQuinticTrajectory
from controllers.laws.joint_pd import JointPDController
from controllers.laws.trajectory import QuinticJointTrajectory

__all__ = ["evaluate_move"]


def evaluate_move(case: Mapping[str, Any]) -> dict:
    """One point-to-point move of the arm (docs/benchmarks.md §1) with joint PD, from a
    case of plain numbers (picklable, for :func:`mbdcore.sweep.sweep`).

    ``case`` keys: ``ctrl`` (JointPDController parameters), ``arm`` (arm parameters,
    e.g. a payload ``m_p``), ``ref`` (ShapedQuinticTrajectory parameters; absent:
    the plain 2 s quintic), ``step`` [s] (default 1e-3).  Returns the case and the
    figures of :func:`~controllers.design.validation.validate_move` of that controller
    and reference (``residual_vibration`` [m]: the project's one definition, over the
    second after the joints settle; the record runs
    :data:`~controllers.design.validation.SETTLE_ALLOWANCE` plus the residual window past
    the reference's end, and joints settling later than that give
    :data:`~controllers.design.validation.NOT_SETTLED`, ``inf``).
    """

    ref = ShapedQuinticTrajectory(**case["ref"]) if "ref" in case else QuinticJointTrajectory()
    return {**dict(case), **validate_move(JointPDController(**case.get("ctrl", {})), ref,
                                          case.get("arm"), float(case.get("step", 1e-3)))}
