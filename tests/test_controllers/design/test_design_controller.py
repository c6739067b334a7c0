"""A design result's ``controller()`` is the Block, its linear form one named method.

``PIDTuning.controller()`` is the ``PIDController``; ``LQGDesign.controller()`` and
``LQIDesign.controller()`` are the arm's LQG law running the design (issue 26: they
returned the python-control StateSpace of the feedback part, which is now
``statespace()``).
"""
from __future__ import annotations

import numpy as np
import pytest

from controllers.design import closed_loop_move
from controllers.design.arm_lqg import INTEGRATED, design_arm_lqg
from controllers.laws.arm_lqg import ArmLQGController, FlexibleArmReference, LQIDesign

#: Long enough for the feedforward, the estimator and (LQI) the integrators to act
STOP = 0.1


@pytest.fixture(scope="module")
def designs():
    return {"lqg": design_arm_lqg(), "lqi": design_arm_lqg(integrated=INTEGRATED)}


@pytest.mark.parametrize("kind", ["lqg", "lqi"])
def test_the_block_of_a_design_runs_the_law_of_that_design(designs, kind):
    """In closed loop on the nonlinear arm, ``design.controller(reference="model")``
    moves the arm as ``ArmLQGController(design=design.to_json(), reference="model")``:
    the same law on the same data (the JSON text holds every float exactly), so the
    same numbers."""
    design = designs[kind]
    text = design.to_json()
    block = design.controller(reference="model", tau_max2=0.8)
    assert isinstance(block, ArmLQGController)
    assert block.params["reference"] == "model" and block.params["tau_max2"] == 0.8
    assert isinstance(block.design, LQIDesign) == (kind == "lqi")
    runs = [closed_loop_move(ctrl, FlexibleArmReference(design=text), stop_time=STOP)
            for ctrl in (block, ArmLQGController(design=text, reference="model",
                                                 tau_max2=0.8))]
    assert runs[0].names == runs[1].names
    moved = np.abs(runs[1]["arm.theta1"]).max()
    assert moved > 1e-5                                  # the move has started
    for name in runs[0].names:
        np.testing.assert_allclose(runs[0][name], runs[1][name], rtol=1e-14, atol=0,
                                   err_msg=name)


def test_the_linear_form_is_the_feedback_part_of_the_design(designs):
    """``statespace()`` is the feedback part ``y -> u`` as before, matrix for matrix:
    the estimator closed with ``u = -K xh``, and with integrators ``z += dt e``,
    ``u = -K xh - Ki z``."""
    d = designs["lqg"]
    Ad, Bd, C, K, L = (np.asarray(getattr(d, a)) for a in ("Ad", "Bd", "C", "K", "L"))
    ss = d.statespace()
    for got, want in zip((ss.A, ss.B, ss.C, ss.D),
                         (Ad - Bd @ K - L @ C, L, -K, np.zeros((2, len(C))))):
        assert np.array_equal(got, want)
    assert ss.dt == d.dt and ss.input_labels == d.measured and ss.output_labels == d.inputs

    i = designs["lqi"]
    Ad, Bd, C, K, L, Ki = (np.asarray(getattr(i, a), float)
                           for a in ("Ad", "Bd", "C", "K", "L", "Ki"))
    n, p = len(Ad), len(C)
    S = np.eye(p)[[i.measured.index(m) for m in INTEGRATED]]
    A = np.block([[Ad - Bd @ K - L @ C, -Bd @ Ki], [np.zeros((2, n)), np.eye(2)]])
    ss = i.statespace()
    for got, want in zip((ss.A, ss.B, ss.C, ss.D),
                         (A, np.vstack([L, i.dt * S]), np.hstack([-K, -Ki]),
                          np.zeros((2, p)))):
        assert np.array_equal(got, want)
    assert ss.state_labels[-2:] == ["theta1_int", "theta2_int"]


def test_an_lqi_design_reads_in_one_line(designs):
    """The integral design keeps the LQG's one-line repr (the dataclass's own would
    print every matrix) and says what it integrates."""
    text = repr(designs["lqi"])
    assert "\n" not in text and "[" not in text and len(text) < 200
    assert text.startswith("LQIDesign(12 states") and "integrated theta1, theta2" in text


def test_a_robustness_scan_reads_in_one_line(designs):
    """The scan's repr says how many plants, the least damping and where; the modes of
    every plant stay in ``least_damped``."""
    from controllers.design.adapters import linearize_arm
    from controllers.design.arm_lqg import MEASURED
    from controllers.design.robustness import robustness_scan

    scan = robustness_scan(designs["lqg"], {"nominal": linearize_arm(outputs=MEASURED),
                                            "heavy": linearize_arm(outputs=MEASURED, m_p=0.15)},
                           max_frequency=10.0)
    text = repr(scan)
    assert "\n" not in text and "[" not in text and "{" not in text
    assert text == (f"RobustnessScan(2 plants, least damping {scan.min_damping:.3g} on plant "
                    f"{scan.worst!r} at {scan.least_damped[scan.worst]['frequency']:.3g} Hz)")
    assert 0.0 < scan.min_damping < 1.0
