"""Robustness of an LQG design: the least damping of its linear closed loop over a
family of plants (:func:`robustness_scan`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import control as ct
import numpy as np

from controllers.design.adapters import check_names, signal_labels
from controllers.design.errors import DesignError
from controllers.design.realization import modal_table
from controllers.laws.arm_lqg import LQGDesign

__all__ = ["RobustnessScan", "robustness_scan"]


@dataclass(repr=False)
class RobustnessScan:
    """Result of :func:`robustness_scan`.

    ``least_damped`` maps each plant's label to its least damped closed-loop mode (a
    row of :func:`modal_table`: ``frequency`` [Hz], ``damping``, ``eigenvalue``);
    ``min_damping`` is the smallest of them (< 0: some plant's loop is unstable) and
    ``worst`` the label of that plant.
    """

    least_damped: dict
    min_damping: float
    worst: object

    def __repr__(self) -> str:
        # one line: the modes of every plant are in least_damped
        mode = self.least_damped.get(self.worst) or {}
        where = (f" at {mode['frequency']:.3g} Hz" if "frequency" in mode else "")
        return (f"RobustnessScan({len(self.least_damped)} plants, least damping "
                f"{self.min_damping:.3g} on plant {self.worst!r}{where})")

    def __float__(self) -> float:
        return float(self.min_damping)


def robustness_scan(design: LQGDesign, plants: Mapping, max_frequency: float = np.inf,
                    ) -> RobustnessScan:
    """Least damping of the linear closed loop of ``design`` over a family of plants.

    Parameters
    ----------
    design : LQGDesign or LQIDesign
        Its feedback part (:meth:`LQGDesign.statespace`) closes each loop.
    plants : mapping of label to control.StateSpace
        Linear plants with the design's inputs and (at least) its measured outputs,
        by name: continuous (sampled here with a zero-order hold at ``design.dt``) or
        discrete at ``design.dt``.
    max_frequency : float
        Only closed-loop modes below this frequency [Hz] count (default: all).

    Returns
    -------
    RobustnessScan
    """
    if not plants:
        raise DesignError("robustness_scan needs at least one plant")
    ctrl = design.statespace()
    least = {}
    for label, plant in plants.items():
        if not plant.dt:
            plant = ct.c2d(plant, design.dt, "zoh")
        elif abs(plant.dt - design.dt) > 1e-12 * design.dt:
            raise DesignError(f"plant {label!r} is sampled at {plant.dt!r} s, the design at "
                              f"{design.dt!r} s")
        check_names(design.measured, signal_labels(plant, "output"), f"output of plant {label!r}")
        check_names(design.inputs, signal_labels(plant, "input"), f"input of plant {label!r}")
        idx = [signal_labels(plant, "output").index(m) for m in design.measured]
        order = [signal_labels(plant, "input").index(u) for u in design.inputs]
        loop = ct.feedback(plant[idx, order], ctrl, sign=1)   # ctrl carries u = -K xh
        modes = [m for m in modal_table(loop) if m["frequency"] < max_frequency]
        for m in modes:
            if m["rigid"]:            # a closed-loop pole at the origin: not damped
                m["damping"] = 0.0
        least[label] = min(modes, key=lambda m: m["damping"])
    worst = min(least, key=lambda k: least[k]["damping"])
    return RobustnessScan(least_damped=least, min_damping=float(least[worst]["damping"]),
                          worst=worst)
