"""Evaluation of arm controllers without python-control: move figures (``metrics``) and
closed loops built, run and measured in the co-simulation master (``validation``: the
one wiring of an arm's closed loop, the one definition of the residual vibration).
What the demo runs; :mod:`controllers.design`, which designs on
python-control, offers the same names."""

from controllers.evaluation.metrics import move_metrics, peak_to_peak_2d, residual_vibration
from controllers.evaluation.validation import (
    NOT_SETTLED,
    RESIDUAL_WINDOW,
    SETTLE_ALLOWANCE,
    SETTLING_BAND,
    arm_closed_loop,
    closed_loop_move,
    end_effector_deflection,
    move_report,
    reference_move,
    settled_move,
    validate_move,
)

__all__ = ["move_metrics", "peak_to_peak_2d", "residual_vibration", "NOT_SETTLED",
           "RESIDUAL_WINDOW", "SETTLE_ALLOWANCE", "SETTLING_BAND", "arm_closed_loop",
           "closed_loop_move", "end_effector_deflection", "move_report", "reference_move",
           "settled_move", "validate_move"]
