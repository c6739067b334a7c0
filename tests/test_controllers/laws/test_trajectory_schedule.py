"""The quintic joint trajectories as piecewise inputs a C loop samples
(``quintic_schedule``, ``QuinticJointTrajectory.schedule``) against the C law."""
import numpy as np
import pytest

from controllers.laws.trajectory import QuinticJointTrajectory, quintic, quintic_schedule


def test_schedule_equals_the_quintic_law_before_during_and_after_the_move():
    """The power form in t - start_time rounds differently from quintic's form in
    tau = t/T: its terms cancel, their magnitudes summing to 31 |d| (position, plus the
    start), 120 |d|/T (rate), 360 |d|/T^2 (acceleration), so a few eps of those sums
    (1e-15, 4.5 eps) bounds the difference of the two roundings."""
    start, end, T, t0 = (0.1, -0.3), (0.35, 0.2), 1.7, 0.4
    u = quintic_schedule(start, end, T, t0, derivatives=True)
    d = np.abs(np.subtract(end, start))
    for t in np.concatenate([np.linspace(-1.0, 3.0, 401), [t0, t0 + T]]):
        got = np.reshape(u(t), (2, 3))
        for i in range(2):
            want = quintic(t - t0, start[i], end[i], T)
            terms = np.array([31 * d[i] + abs(start[i]), 120 * d[i] / T, 360 * d[i] / T**2])
            assert np.all(np.abs(got[i] - want) <= 1e-15 * terms), (t, i, got[i], want)


def test_block_schedule_is_its_outputs():
    block = QuinticJointTrajectory(move_time=0.8, start_time=0.25)
    u = block.schedule()
    assert u.names == tuple(s.name for s in block.OUTPUTS)
    assert u.units == tuple(s.unit for s in block.OUTPUTS)
    for t in np.linspace(0.0, 1.5, 31):
        block.time = t
        want = block.outputs()
        assert u(t) == pytest.approx([want[n] for n in u.names], rel=1e-13, abs=1e-13)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="duration"):
        quintic_schedule([0.0], [1.0], 0.0)
    with pytest.raises(ValueError, match="starts"):
        quintic_schedule([0.0, 1.0], [1.0], 1.0)
