"""Controllers of the two-link flexible arm on the closed-loop benchmark
(docs/benchmarks.md §1, load case 1b).

Move time and residual vibration (controllers.evaluation.validation.settled_move): the move time
is the time after which both joints stay within 2 % of their move until the end of the
record; the residual vibration is the peak-to-peak end-effector deflection over the
second that starts then.  Every controller is judged from the time its own joints
have arrived.
"""
from __future__ import annotations

import json

import control as ct
import numpy as np
import pytest

from controllers.design.adapters import SignalNameError, block_iosys, linearize_arm
from controllers.design.arm_lqg import (
    DEFAULT_MEASUREMENT_NOISE,
    DEFAULT_PROCESS_NOISE,
    DEFAULT_Q,
    DEFAULT_R,
    MEASURED,
    design_arm_lqg,
)
from controllers.design.errors import DesignError
from controllers.design.lq import lqg, lqr
from controllers.design.margins import loop_margins
from controllers.design.realization import modal_table
from controllers.evaluation.validation import closed_loop_move, move_report, settled_move
from controllers.laws.arm_lqg import (
    DEFAULT_DESIGN_FILE,
    ArmLQGController,
    FlexibleArmReference,
)
from controllers.laws.input_shaping import (
    ShapedQuinticTrajectory,
    convolve,
    residual_vibration_ratio,
    shaper,
)
from controllers.laws.joint_pd import JointPDController
from controllers.laws.trajectory import QuinticJointTrajectory, quintic
from mbdcore.blocks import ParameterError
from mbdcore.models.manipulator import FlexibleManipulator, FlexibleManipulatorBlock

H = 1e-3
MOVE_TIME = 2.0


STOP = 3.5          # records long enough for a second of residual after a 2.3 s move


def pd_loop_modes():
    """The arm (linear, theta = 0) and the feedback of the default joint PD."""
    plant = linearize_arm(outputs=("theta1", "theta2", "omega1", "omega2"))
    return plant, JointPDController().feedback_system()


@pytest.fixture(scope="module")
def pd_baseline():
    """Joint PD + rigid feedforward on the 2 s quintic: the joints are within 2 % from
    1.75 s on, the end effector swings by about 20 cm after that (31 cm p-p over the
    second after the reference ends)."""
    result = closed_loop_move(JointPDController(), QuinticJointTrajectory(), stop_time=STOP)
    after_reference = move_report(result, MOVE_TIME)["vibration_after_reference"]
    return {**settled_move(result), "residual_after_reference": after_reference}


def test_shapers_cancel_their_mode():
    for kind in ("zv", "zvd", "ei"):
        a, t = shaper(kind, 0.5, 0.02)
        assert a.sum() == pytest.approx(1.0)
        assert residual_vibration_ratio(a, t, 0.5, 0.02) < (0.06 if kind == "ei" else 1e-12)
    a, t = convolve(shaper("zv", 0.5), shaper("zv", 2.0))
    assert residual_vibration_ratio(a, t, 2.0) < 1e-12 and len(a) == 4
    with pytest.raises(ValueError, match="unknown shaper 'zvdd'"):
        shaper("zvdd", 1.0)


def test_input_shaping_removes_the_residual_vibration_of_joint_pd(pd_baseline):
    """ZV shaper on the PD loop's 0.43 Hz link mode, 1.2 s quintic: measured 2.19 s
    move time (1.25x PD's 1.75 s) and 4.6 mm residual (PD: 196 mm, 43x smaller)."""
    plant, pd = pd_loop_modes()
    closed = ct.ss(plant.A + plant.B @ pd.D @ plant.C, plant.B, plant.C, 0)
    first = [m for m in modal_table(closed) if m["damping"] < 0.1][0]   # the link mode
    assert first["frequency"] == pytest.approx(0.428, abs=2e-3)
    ref = ShapedQuinticTrajectory(shaper="zv", move_time=1.2, frequency1=first["frequency"],
                                  zeta1=first["damping"])
    shaped = settled_move(closed_loop_move(JointPDController(), ref, stop_time=STOP))
    assert pd_baseline["residual_vibration"] == pytest.approx(0.20, abs=0.02)
    assert pd_baseline["move_time"] == pytest.approx(1.75, abs=0.01)
    assert shaped["move_time"] <= 1.3 * pd_baseline["move_time"]
    assert shaped["residual_vibration"] < pd_baseline["residual_vibration"] / 10


def test_designed_loops_have_margins():
    """Loop at a time at the plant inputs, on the linear arm sampled at 1 ms: the joint
    PD (no phase crossover; 60 deg / 54 deg at the dip crossovers near the link
    antiresonances and at ~150 Hz) and the LQG regulator + observer."""
    plant, pd = pd_loop_modes()
    for r in loop_margins(ct.c2d(plant, H), pd):
        assert r["gain_margin_db"] >= 6 and r["gain_reduction_db"] <= -6, r
        assert r["phase_margin_deg"] >= 45, r
    design = design_arm_lqg()
    sampled = ct.c2d(linearize_arm(outputs=MEASURED), H)
    for r in loop_margins(sampled, design.statespace()):
        assert r["gain_margin_db"] >= 6 and r["gain_reduction_db"] <= -6, r
        assert r["phase_margin_deg"] >= 45, r


def test_lqg_with_the_rigid_reference_overshoots(pd_baseline):
    """Measured: with the rigid reference (straight links) and rigid feedforward the
    regulator fights the bending the feedforward causes; the links are quiet after
    2 s, but the joints overshoot by 15-20 % and are still outside the 2 % band at
    3.5 s, so by the move-time definition the move has not ended."""
    lqg = ArmLQGController()
    result = closed_loop_move(lqg, QuinticJointTrajectory(), stop_time=STOP)
    report = move_report(result, MOVE_TIME)
    assert pd_baseline["residual_after_reference"] == pytest.approx(0.31, abs=0.02)
    assert report["vibration_after_reference"] < pd_baseline["residual_after_reference"] / 10
    assert report["residual_vibration"] == np.inf          # the joints never settle
    assert min(report["overshoot1"], report["overshoot2"]) > 0.1
    assert settled_move(result)["move_time"] == np.inf
    Ad, Bd, K = (np.array(getattr(lqg.design, a)) for a in ("Ad", "Bd", "K"))
    reg = modal_table(ct.ss(Ad - Bd @ K, np.zeros((12, 1)), np.zeros((1, 12)), 0, H))
    assert reg[0]["damping"] > 0.5                   # PD leaves it at 0.005


def test_lqg_with_the_flexible_model_reference_arrives_without_vibration(pd_baseline):
    """Two degrees of freedom: feedforward torques that move the linear flexible model
    rest to rest in 2 s (joints kept near the quintic, links bent little), and that
    model as the LQG's state reference.  Measured: move time 1.945 s (1.11x PD's),
    residual 3.8 mm (PD: 196 mm, 51x smaller), the joints never leave [start, target].
    The reference does most of the work: joint PD following the same joint reference
    does about as well (see the report of issue 6); the LQG feedback corrects what the
    linear model misses (the 15 deg move is nonlinear) with damped link modes."""
    design = design_arm_lqg().to_json()
    ref = FlexibleArmReference(design=design)
    assert np.abs(ref.x_ref[-1, 2:]).max() < 1e-12          # the model ends at rest
    result = closed_loop_move(ArmLQGController(design=design, reference="model"), ref,
                              stop_time=STOP)
    lq = settled_move(result)
    for i, target in ((1, 0.2617993877991494), (2, 0.17453292519943295)):
        assert 0 <= result[f"arm.theta{i}"].min() and result[f"arm.theta{i}"].max() <= 1.02 * target
    assert lq["move_time"] <= 1.3 * pd_baseline["move_time"]
    assert lq["residual_vibration"] < pd_baseline["residual_vibration"] / 10
    with pytest.raises(ParameterError, match="not at the design's linearisation point"):
        FlexibleArmReference(design=design, theta1_start=0.1)


def test_same_controller_in_python_control_master_and_fmu(tmp_path):
    from fmu.cosim.fmu_component import FMUComponent
    from fmu.fmi.build import build_fmu

    design = design_arm_lqg().to_json()
    stop = 0.3
    n = int(round(stop / H))
    master = closed_loop_move(ArmLQGController(design=design), QuinticJointTrajectory(),
                              stop_time=stop)
    fmu = build_fmu(ArmLQGController, tmp_path, model_name="ArmLQGControllerTest")
    as_fmu = closed_loop_move(FMUComponent("ctrl", fmu, parameters={"design": design}),
                              QuinticJointTrajectory(), stop_time=stop)
    # python-control: both blocks as discrete-time systems, the reference as input
    ctrl = block_iosys(ArmLQGController(design=design), H, name="ctrl",
                       inputs=[n for n in ArmLQGController.input_names() if not n.endswith("_ff")])
    arm = block_iosys(FlexibleManipulatorBlock(), H, name="arm")
    refs = [f"{k}{i}_ref" for i in (1, 2) for k in ("theta", "omega", "alpha")]
    loop = ct.interconnect([ctrl, arm], inplist=[f"ctrl.{r}" for r in refs],
                           outlist=["arm.theta1", "arm.w1", "ctrl.tau1"],
                           connections=[[f"ctrl.{m}", f"arm.{m}"] for m in MEASURED]
                           + [["arm.tau1", "ctrl.tau1"], ["arm.tau2", "ctrl.tau2"]])
    t = H * np.arange(n + 1)
    r = np.array([[quintic(tk, 0.0, end, MOVE_TIME)[j] for tk in t]
                  for end in (0.2617993877991494, 0.17453292519943295) for j in range(3)])
    resp = ct.input_output_response(loop, t, r, np.r_[ctrl.x0, arm.x0])
    for res in (master, as_fmu):
        np.testing.assert_allclose(res["arm.theta1"], resp.outputs[0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(res["arm.w1"], resp.outputs[1], rtol=0, atol=1e-12)
        np.testing.assert_allclose(res["ctrl.tau1"], resp.outputs[2], rtol=0, atol=1e-10)
    assert np.abs(master["arm.w1"]).max() > 1e-3     # something happened
    # the two-degree-of-freedom form: block and FMU
    params = {"design": design, "reference": "model"}
    ref = FlexibleArmReference(design=design)
    master = closed_loop_move(ArmLQGController(**params), ref, stop_time=stop)
    as_fmu = closed_loop_move(FMUComponent("ctrl", fmu, parameters=params),
                              FlexibleArmReference(design=design), stop_time=stop)
    for name in ("arm.theta1", "arm.w1", "ctrl.tau1", "ctrl.tau2"):
        np.testing.assert_allclose(as_fmu[name], master[name], rtol=0, atol=1e-12)


def test_bad_design_requests_are_named():
    plant = ct.c2d(linearize_arm(), H)
    with pytest.raises(DesignError, match=r"not stabilisable from inputs tau2: uncontrollable mode.*\(0 Hz"):
        lqr(plant[:, 1], {"theta1": 1.0}, {"tau2": 1.0})
    with pytest.raises(DesignError, match=r"Q \(state weight\) has shape \(3, 3\); expected \(12, 12\)"):
        lqr(plant, np.eye(3), np.eye(2))
    with pytest.raises(DesignError, match=r"R \(input weight\) has shape \(1,\)"):
        lqr(plant, np.eye(12), [1.0])
    with pytest.raises(SignalNameError, match="'tip'.*theta1"):
        lqr(plant, {"tip": 1.0}, {"tau1": 1.0, "tau2": 1.0})
    with pytest.raises(DesignError, match="every input.*needs a weight"):
        lqr(plant, {"theta1": 1.0}, {"tau1": 1.0})
    with pytest.raises(DesignError, match="weight of 'w1' = -1.0"):
        lqr(plant, {"w1": -1.0}, {"tau1": 1.0, "tau2": 1.0})
    with pytest.raises(SignalNameError, match="'strain1'"):
        design_arm_lqg(measured=("theta1", "strain1"))
    with pytest.raises(DesignError, match="not detectable from outputs w1"):
        design_arm_lqg(measured=("w1",), measurement_noise={"w1": 1e-4})
    with pytest.raises(ParameterError, match="'design'"):
        ArmLQGController(design='{"dt": 0.001}')
    with pytest.raises(ParameterError, match="'design'"):
        ArmLQGController(design="not json")


#: Fixed coordinate orders of the rounding-spread estimate below (reproducible)
_ORDERS = [np.random.default_rng(seed).permutation(6) for seed in range(10)]


def _arm_plant(order):
    """The arm linearised at rest as :func:`linearize_arm` makes it (A from the solves
    with the mass matrix, the measured outputs), its coordinates taken in ``order``."""
    model = FlexibleManipulator()
    n = model.n_dof
    states = np.concatenate([order, n + order])
    M = model.mass_matrix(np.zeros(n))[np.ix_(order, order)]
    S = np.zeros((n, 2))
    S[0, 0] = S[1, 1] = 1.0
    A = np.block([[np.zeros((n, n)), np.eye(n)],
                  [-np.linalg.solve(M, model.K[np.ix_(order, order)]),
                   -np.linalg.solve(M, model.D[np.ix_(order, order)])]])
    B = np.vstack([np.zeros((n, 2)), np.linalg.solve(M, S[order])])
    plant = linearize_arm(outputs=MEASURED)
    return ct.ss(A, B, np.asarray(plant.C)[:, states], plant.D,
                 states=[plant.state_labels[i] for i in states], inputs=plant.input_labels,
                 outputs=plant.output_labels, name=plant.name), states


def _rounding_spread(computed: dict) -> dict:
    """How far the design's matrices move when the same design is computed with the
    arm's coordinates in another order [relative Frobenius norm, per matrix].

    The problem is the same (weights go by name), but every LAPACK call on the way
    (the solves with the mass matrix, the matrix exponential, the Riccati equations)
    rounds differently, as under another BLAS kernel; the spread is that rounding
    amplified by the conditioning of each computation (Monte Carlo arithmetic, Parker,
    Pierce and Eggert 2000: the spread of the results of randomly perturbed roundings
    estimates the digits a result carries).  Here the regulator's Riccati equation is
    the ill-conditioned part: its closed loop keeps a pole at |z| = 0.99996 (a mode the
    weights leave nearly undamped), 9e-5 from its mirror 1/z in the symplectic pencil
    whose stable subspace gives K, so K carries about 1e-9 relative rounding error
    (measured spread 8e-10 to 1.3e-9, and up to 1e-9 between the OpenBLAS kernels
    Haswell, Sandybridge, Katmai, Nehalem), while Ad, Bd and L carry 4e-15 to 5e-11.
    An order whose QZ reordering fails (LAPACK's tgsen refuses a swap as too
    ill-conditioned: 6 or 7 orders in 30 on the kernels above) gives no sample; 10
    orders leave 3 samples or more but with odds below 1e-3."""
    plant, states = _arm_plant(np.arange(6))
    np.testing.assert_array_equal(plant.A, linearize_arm(outputs=MEASURED).A)  # the same
    spread = {key: 0.0 for key in ("Ad", "Bd", "K", "L")}
    samples = 0
    for order in _ORDERS:
        plant, states = _arm_plant(order)
        back = np.argsort(states)
        try:
            d = lqg(plant, DEFAULT_Q, DEFAULT_R, list(MEASURED), DEFAULT_PROCESS_NOISE,
                    DEFAULT_MEASUREMENT_NOISE, computed["dt"])
        except ValueError:
            continue
        samples += 1
        again = {"Ad": np.asarray(d.Ad)[np.ix_(back, back)], "Bd": np.asarray(d.Bd)[back],
                 "K": np.asarray(d.K)[:, back], "L": np.asarray(d.L)[back]}
        for key, x in again.items():
            ref = np.asarray(computed[key])
            spread[key] = max(spread[key], np.linalg.norm(x - ref) / np.linalg.norm(ref))
    assert samples >= 3, "too few orders gave a design to estimate the rounding"
    return spread


def test_stored_default_design_is_the_design_of_the_default_weights():
    """The law reads its default design from data (controllers/laws/arm_lqg_default.json);
    it must be what the design tools compute from the default weights and arm, or a
    changed default went unwritten (``python -m controllers.design default-lqg``).

    The file was computed on one machine, the recomputation here may run on another
    BLAS kernel: each matrix must agree to the rounding error it carries, which is
    measured (:func:`_rounding_spread`: the same design with the coordinates in other
    orders), times 10 for a small-sample estimate of a spread (Kenney and Laub 1994:
    a few samples estimate a condition within a factor of 10 with high probability),
    and never below 12 eps (one rounding per state).  A default changed by 0.1 % (Q
    of theta1) moves K by 1e-4, far above that."""
    stored = json.loads(DEFAULT_DESIGN_FILE.read_text())
    computed = json.loads(design_arm_lqg().to_json())
    assert stored.keys() == computed.keys()
    for key in ("states", "inputs", "measured", "dt", "C", "x_lin", "y_lin"):
        assert stored[key] == computed[key], key    # names, and numbers no rounding makes
    spread = _rounding_spread(computed)
    floor = 12 * np.finfo(float).eps
    for key in ("Ad", "Bd", "K", "L"):
        ref = np.asarray(computed[key])
        error = np.linalg.norm(np.asarray(stored[key]) - ref) / np.linalg.norm(ref)
        assert error <= max(10 * spread[key], floor), (key, error, spread[key])
    # the law's default is the file, as read
    np.testing.assert_array_equal(ArmLQGController().design.K, np.asarray(stored["K"]))
