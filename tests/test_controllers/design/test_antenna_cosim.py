"""The servo loop as three FMUs under the master: controller -> drive -> structure
(issue 7), against the same system in one process."""
from __future__ import annotations

import numpy as np
import pytest

from controllers.design.antenna_servo import servo_cosim_system
from controllers.evaluation.metrics import move_metrics
from fmu.cosim.master import Master

STOP = 5.0


def run(system, h=1e-3):
    return Master(system, h).run(STOP)


@pytest.fixture(scope="module")
def fmu_result(tmp_path_factory):
    return run(servo_cosim_system(tmp_path_factory.mktemp("antenna_fmus")))


def test_three_fmus_equal_the_same_blocks_in_process(fmu_result):
    blocks = run(servo_cosim_system())
    for name in ("structure.axis_angle", "structure.pointing_error", "drive.current1",
                 "drive.speed2", "ctrl.current_ref"):
        np.testing.assert_allclose(fmu_result[name], blocks[name], rtol=0, atol=1e-12)
    m = move_metrics(fmu_result.time, fmu_result["structure.axis_angle"], 0.0, 1e-3)
    assert m["overshoot"] <= 0.10 and m["settling_time"] <= 3.0


def test_cosimulation_converges_to_the_one_process_system_with_the_step():
    """Drive and structure exchange the gear torque and the axis angle once per
    communication step: the gap to the monolithic model is first order in the step."""
    gaps = []
    for h in (1e-3, 5e-4):
        split = run(servo_cosim_system(), h)
        whole = run(servo_cosim_system(monolithic=True), h)
        gaps.append(np.abs(split["structure.axis_angle"] - whole["structure.axis_angle"]).max())
    assert gaps[0] < 0.01 * 1e-3                          # under 1 % of the 1 mrad step
    assert gaps[0] / gaps[1] == pytest.approx(2.0, rel=0.1)
