"""Ours against Exudyn (issue 12): the same flexible-multibody cases, in one process, at the
same element count, time step and spectral radius, with the errors of both taken against
the same reference.  Nothing is asserted; the numbers are printed.

    pip install -e ".[bench]"                   # Exudyn (C++ engine, Python API), optional
    python bench/exudyn_compare.py              # full run (a few minutes)
    python bench/exudyn_compare.py --quick      # shorter horizons (smoke run)

One line per case: ``case, ours_s, exudyn_s, ratio, ours_error, exudyn_error`` where the
times are CPU seconds (``time.process_time()``) of building and solving the model, after
an untimed warm-up run of each code (ours builds or loads its C kernels on first use), the
ratio is ours_s / exudyn_s, and both errors are against the same reference, named in the
output.  Then the Newton iterations and Jacobian (re)factorisations per step of both
solvers (ours from ``simulate(...).stats``, Exudyn's from its solver's iteration data),
and a check of each reference: Exudyn at the reference's resolution against it (how far
apart the two codes' discretised models are), and Exudyn at half the reference's element
length and step against it (a bound on the reference's own discretisation error).

Cases (docs/benchmarks.md §1, §2):

1. ``hub-beam``: hub-beam spin-up to 6 rad/s (``SpinUp``, T_s = 15 s), 0-20 s, ANCF
   beam of 8 elements (L = 10 m, rho A = 1.2 kg/m, EI = 1.4e4 N m^2, EA = 2.8e7 N),
   generalized-alpha rho_inf = 0.8 at h = 2.5e-3 s.  Error: max |tip deflection - ref|
   over 0-20 s (sampled every 0.01 s) divided by the peak |tip deflection| of the
   reference.  Reference: ours, ANCF 16 elements at h = 1.25e-3 s.
2. ``arm 1a``: the two-link arm, open loop, bang-bang torques 0.2 / 0.05 N m
   (``bang_bang_torque``), 0-1.2 s, ANCF 8 elements per link (EA = 1e4 N, as in
   tests/test_mbdcore/models/test_ancf_arm.py), h = 2.5e-4 s.  Error: max over both joints and
   0-1.2 s (sampled every 1 ms) of |theta - theta_ref| [rad].  Reference: ours, 16
   elements per link at h = 1.25e-4 s.
3. ``arm x10``: the same arm with the torques scaled to 2 / 0.5 N m, ANCF 16 elements per
   link, h = 2.5e-4 s.  Reference: ours, 32 elements per link at h = 1.25e-4 s.

Ours: ``mbdcore.dae.simulate.simulate(..., "generalized-alpha", rho_inf=0.8)`` with its
defaults (GGL constraints, modified Newton, increment tolerance 1e-10).  Exudyn:
``SolveDynamic`` with its generalized-alpha (index 3), spectralRadius 0.8, fixed step
(adaptiveStep off), its default modified Newton and relative residual tolerance 1e-8, and
an absolute residual tolerance of 1e-6 (RMS per coordinate): with Exudyn's default 1e-10
its Newton stalls at the rounding floor of the stiff axial forces (EA = 2.8e7 N; residual
about 1e-7) and the fixed-step run aborts in the first step.

How each Exudyn model maps to ours
----------------------------------
* ANCF beam -> a chain of ``ObjectANCFCable2D`` elements on ``NodePoint2DSlope1`` nodes
  (position and slope, as ours: 4 (N + 1) coordinates, cubic Hermite interpolation,
  constant mass matrix), same rho A, EI, EA, element length L/N.  Differences in the
  element: Exudyn's axial strain is |r'| - 1 and its curvature uses the slope norm
  differently, ours has the Green strain (r'.r' - 1)/2 and the exact curvature
  (r' x r'')/|r'|^3; they agree to first order in the (small, < 1e-3) axial strain.
  Quadrature: Exudyn Gauss order 9 (axial) / 5 (bending), ours 5 Gauss points.  This
  is a modelling difference of the order of the axial strain: on the arm at 10x torque
  (EA = 1e4 N) the two converged models differ by about 1.8e-4 rad in the joint angles
  over 0-0.3 s, and by 2e-6 rad with EA = 1e6 N in both (measured while writing this
  script), so the "reference check" line of that case shows a floor that is neither
  code's discretisation error.
* rigid body (hub, hub 1, stator, rotor, payload) -> ``NodeRigidBody2D`` +
  ``ObjectRigidBody2D``, same mass and inertia (ours' 1e-9 kg "tiny" mass of hub 1 kept).
* ``Weld`` (clamp of a beam root or tip to a rigid body) -> ``ObjectJointGeneric``
  between ``MarkerBodyRigid`` on the rigid body and on the end of the first / last cable
  element, constrained axes x, y and rotation z: the end point and the angle of the beam's
  tangent there, as ours.
* ``Revolute`` to ground at the origin (hub, hub 1) -> ``CoordinateConstraint`` fixing
  the node's x and y to a ground coordinate; ``Revolute`` stator-rotor ->
  ``ObjectJointRevolute2D`` between ``MarkerBodyPosition`` markers.
* ``AngleDriver`` with ``SpinUp`` (hub angle prescribed) -> ``CoordinateConstraint``
  between a ground coordinate and the hub's rotation coordinate, with an
  ``offsetUserFunction`` returning SpinUp(t) (a Python callback from C++).
* ``JointTorque`` ground->hub1 (tau1) and stator->rotor (tau2) -> ``LoadTorqueVector`` on
  ``MarkerBodyRigid`` of hub 1 (+tau1), the rotor (+tau2) and the stator (-tau2), with
  ``loadVectorUserFunction`` (Python callbacks).  Ours holds the inputs over each step
  (value at t_n); both codes are given the torque of the step's midpoint (k + 1/2) h, so
  the bang-bang switches at 0.3 s and 0.6 s (on the step grid) are seen identically
  whichever time inside the step a code evaluates its loads at.
* Outputs: hub-beam tip deflection = (-sin theta, cos theta) . r_tip with theta the
  prescribed hub angle (as bench/flexible.py); joint angles = hub-1 rotation and rotor
  minus stator rotation (the rotation coordinates of the nodes; ours' ``hub1.phi`` and
  ``rotor.phi - stator.phi``).
"""
from __future__ import annotations

import argparse
import math
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # steadier timings (see tests/conftest)

import numpy as np  # noqa: E402

from mbdcore.dae.simulate import simulate  # noqa: E402
from mbdcore.models.manipulator import bang_bang_torque, validate_arm_parameters  # noqa: E402
from mbdcore.models.mechanisms import HUB_BEAM, SpinUp, hub_beam, two_link_arm  # noqa: E402
from mbdcore.multibody.ancf import ANCFBeam  # noqa: E402

try:
    import exudyn as exu
    from exudyn import itemInterface as ei
except ImportError:                     # the bench extra is not installed
    exu = None

RHO_INF = 0.8
HUB_RATE = 6.0
ARM_EA = 1e4          # axial stiffness of the arm's links [N] (tests/test_mbdcore/models/test_ancf_arm.py)
EXU_ABS_TOL = 1e-6    # Exudyn's Newton: absolute residual tolerance (see the docstring)


def _ours_stats(r):
    """(Newton iterations, Jacobian builds, LU factorisations) per step."""
    st = r.stats
    n = max(int(st.get("nsteps", 0)), 1)
    return (st.get("newton_iterations", math.nan) / n,
            st.get("jacobian_evaluations", math.nan) / n,
            st.get("factorizations", math.nan) / n)


def _exu_stats(mbs, n_steps):
    it = mbs.sys["dynamicSolver"].it
    return it.newtonStepsCount / n_steps, it.newtonJacobiCount / n_steps


def _exu_settings(h, t_end, record):
    ss = exu.SimulationSettings()
    ti = ss.timeIntegration
    ti.numberOfSteps = int(round(t_end / h))
    ti.endTime = t_end
    ti.generalizedAlpha.spectralRadius = RHO_INF
    ti.adaptiveStep = False
    ti.newton.absoluteTolerance = EXU_ABS_TOL
    ti.verboseMode = 0
    ss.solution.file.write = False
    ss.solution.sensors.writePeriod = record
    return ss


def _exu_ground_coordinate(mbs):
    ng = mbs.AddNode(ei.NodePointGround())
    return mbs.AddMarker(ei.MarkerNodeCoordinate(nodeNumber=ng, coordinate=0))


def _exu_rigid(mbs, mass, inertia, at):
    n = mbs.AddNode(ei.NodeRigidBody2D(referenceCoordinates=[at[0], at[1], 0.0]))
    b = mbs.AddObject(ei.ObjectRigidBody2D(nodeNumber=n, mass=mass, inertia=inertia))
    return n, b


def _exu_cable(mbs, start, length, n_el, rho_a, ei_, ea):
    """ANCF cable along +x from ``start``: (nodes, elements)."""
    le = length / n_el
    nodes = [mbs.AddNode(ei.NodePoint2DSlope1(
        referenceCoordinates=[start[0] + i * le, start[1], 1.0, 0.0])) for i in range(n_el + 1)]
    els = [mbs.AddObject(ei.ObjectANCFCable2D(
        length=le, massPerLength=rho_a, bendingStiffness=ei_, axialStiffness=ea,
        nodeNumbers=[nodes[i], nodes[i + 1]])) for i in range(n_el)]
    return nodes, els


def _exu_weld(mbs, body_a, at_a, body_b, at_b):
    ma = mbs.AddMarker(ei.MarkerBodyRigid(bodyNumber=body_a, localPosition=[*at_a, 0.0]))
    mb = mbs.AddMarker(ei.MarkerBodyRigid(bodyNumber=body_b, localPosition=[*at_b, 0.0]))
    mbs.AddObject(ei.ObjectJointGeneric(markerNumbers=[ma, mb], constrainedAxes=[1, 1, 0, 0, 0, 1]))


def _exu_pin_to_ground(mbs, mg, node, angle=None):
    """Fix x and y of a rigid node; prescribe its angle if ``angle(t)`` is given."""
    mc = [mbs.AddMarker(ei.MarkerNodeCoordinate(nodeNumber=node, coordinate=i)) for i in range(3)]
    mbs.AddObject(ei.CoordinateConstraint(markerNumbers=[mg, mc[0]]))
    mbs.AddObject(ei.CoordinateConstraint(markerNumbers=[mg, mc[1]]))
    if angle is not None:
        mbs.AddObject(ei.CoordinateConstraint(
            markerNumbers=[mg, mc[2]], offsetUserFunction=lambda mbs_, t, item, off: angle(t)))


def _solve_exu(mbs, h, t_end, record):
    mbs.Assemble()
    exu.SolveDynamic(mbs, _exu_settings(h, t_end, record))


# -- case 1: hub-beam spin-up -----------------------------------------------------------
def _tip_in_hub_frame(theta, x, y):
    return -np.sin(theta) * x + np.cos(theta) * y


def ours_hub(n_el, h, t_end, record):
    """(cpu [s], t, tip deflection [m], (its/step, jac/step))."""
    t0 = time.process_time()
    s = hub_beam(lambda nm, L, ra, ei_, ea: ANCFBeam(nm, (0.0, 0.0), (L, 0.0), n_el, ra, ei_, ea),
                 HUB_RATE)
    r = simulate(s, t_end, h, "generalized-alpha", rho_inf=RHO_INF,
                 record_every=int(round(record / h)))
    cpu = time.process_time() - t0
    beam, hub = s.body("beam"), s.body("hub")
    tips = []
    for q in r.q:
        p = s.view(q, np.zeros_like(q))[beam].point(beam.markers["tip"])[0]
        tips.append(_tip_in_hub_frame(q[hub.index + 2], p[0], p[1]))
    return cpu, np.asarray(r.t), np.array(tips), _ours_stats(r)


def exu_hub(n_el, h, t_end, record):
    p = HUB_BEAM
    spin = SpinUp(HUB_RATE, p["spin_up_time"])
    t0 = time.process_time()
    mbs = exu.SystemContainer().AddSystem()
    mg = _exu_ground_coordinate(mbs)
    nh, hub = _exu_rigid(mbs, 1.0, 1.0, (0.0, 0.0))      # ours' hub: 1 kg, 1 kg m^2
    _exu_pin_to_ground(mbs, mg, nh, angle=lambda t: spin(t)[0])
    nodes, els = _exu_cable(mbs, (0.0, 0.0), p["length"], n_el, p["rho_a"], p["ei"], p["ea"])
    _exu_weld(mbs, hub, (0.0, 0.0), els[0], (0.0, 0.0))
    sens = mbs.AddSensor(ei.SensorNode(nodeNumber=nodes[-1], storeInternal=True,
                                       writeToFile=False,
                                       outputVariableType=exu.OutputVariableType.Position))
    _solve_exu(mbs, h, t_end, record)
    cpu = time.process_time() - t0
    d = mbs.GetSensorStoredData(sens)
    theta = np.array([spin(t)[0] for t in d[:, 0]])
    return cpu, d[:, 0], _tip_in_hub_frame(theta, d[:, 1], d[:, 2]), \
        _exu_stats(mbs, int(round(t_end / h)))


# -- cases 2, 3: two-link arm -----------------------------------------------------------
def held_torque(scale, h, k):
    """Torques of step k (t_k to t_k + h): the bang-bang law at the step's midpoint."""
    return [scale * u for u in bang_bang_torque((k + 0.5) * h)]


def ours_arm(n_el, h, t_end, scale, record):
    """(cpu [s], t, joint angles (theta1, theta2) [rad], (its/step, jac/step))."""
    t0 = time.process_time()
    s = two_link_arm(lambda nm, L, ra, ei_, at: ANCFBeam(nm, at, (at[0] + L, at[1]), n_el,
                                                         ra, ei_, ARM_EA))
    r = simulate(s, t_end, h, "generalized-alpha", rho_inf=RHO_INF,
                 record_every=int(round(record / h)),
                 inputs=lambda t: dict(zip(("tau1", "tau2"),
                                           held_torque(scale, h, int(round(t / h))))))
    cpu = time.process_time() - t0
    th = np.column_stack([r["hub1.phi"], r["rotor.phi"] - r["stator.phi"]])
    return cpu, np.asarray(r.t), th, _ours_stats(r)


def exu_arm(n_el, h, t_end, scale, record):
    p = validate_arm_parameters()
    l1, l2 = p["l1"], p["l2"]
    tiny = 1e-9                                          # as two_link_arm
    step_of = lambda t: max(int(math.ceil(t / h - 1e-6)) - 1, 0)   # noqa: E731
    tau = lambda t, i: held_torque(scale, h, step_of(t))[i]        # noqa: E731
    t0 = time.process_time()
    mbs = exu.SystemContainer().AddSystem()
    mg = _exu_ground_coordinate(mbs)
    n_hub, hub1 = _exu_rigid(mbs, tiny, p["j_h1"], (0.0, 0.0))
    _exu_pin_to_ground(mbs, mg, n_hub)
    _, link1 = _exu_cable(mbs, (0.0, 0.0), l1, n_el, p["rho_a1"], p["ei1"], ARM_EA)
    n_st, stator = _exu_rigid(mbs, max(p["m_h2"] / 2, tiny), max(p["j_s"], tiny), (l1, 0.0))
    n_ro, rotor = _exu_rigid(mbs, max(p["m_h2"] / 2, tiny), max(p["j_h2"], tiny), (l1, 0.0))
    _, link2 = _exu_cable(mbs, (l1, 0.0), l2, n_el, p["rho_a2"], p["ei2"], ARM_EA)
    _, payload = _exu_rigid(mbs, max(p["m_p"], tiny), max(p["j_p"], tiny), (l1 + l2, 0.0))
    le1, le2 = l1 / n_el, l2 / n_el
    _exu_weld(mbs, hub1, (0.0, 0.0), link1[0], (0.0, 0.0))          # clamp1
    _exu_weld(mbs, link1[-1], (le1, 0.0), stator, (0.0, 0.0))       # elbow
    m_st = mbs.AddMarker(ei.MarkerBodyPosition(bodyNumber=stator, localPosition=[0, 0, 0]))
    m_ro = mbs.AddMarker(ei.MarkerBodyPosition(bodyNumber=rotor, localPosition=[0, 0, 0]))
    mbs.AddObject(ei.ObjectJointRevolute2D(markerNumbers=[m_st, m_ro]))   # joint2
    _exu_weld(mbs, rotor, (0.0, 0.0), link2[0], (0.0, 0.0))          # clamp2
    _exu_weld(mbs, link2[-1], (le2, 0.0), payload, (0.0, 0.0))      # tip
    for body, i, sign in ((hub1, 0, 1.0), (rotor, 1, 1.0), (stator, 1, -1.0)):
        m = mbs.AddMarker(ei.MarkerBodyRigid(bodyNumber=body, localPosition=[0, 0, 0]))
        mbs.AddLoad(ei.LoadTorqueVector(
            markerNumber=m, loadVectorUserFunction=lambda mbs_, t, v, i=i, sign=sign:
            [0.0, 0.0, sign * tau(t, i)]))
    sens = [mbs.AddSensor(ei.SensorNode(nodeNumber=n, storeInternal=True, writeToFile=False,
                                        outputVariableType=exu.OutputVariableType.Coordinates))
            for n in (n_hub, n_st, n_ro)]
    _solve_exu(mbs, h, t_end, record)
    cpu = time.process_time() - t0
    d = [mbs.GetSensorStoredData(k) for k in sens]
    th = np.column_stack([d[0][:, 3], d[2][:, 3] - d[1][:, 3]])
    return cpu, d[0][:, 0], th, _exu_stats(mbs, int(round(t_end / h)))


# -- comparison -------------------------------------------------------------------------
def _on(t_ref, t, y):
    """y(t) sampled at the reference's times (linear interpolation; the records share the
    grid, so this only guards against a sensor time off by rounding)."""
    y = np.asarray(y)
    if y.ndim == 1:
        return np.interp(t_ref, t, y)
    return np.column_stack([np.interp(t_ref, t, y[:, j]) for j in range(y.shape[1])])


def cases(quick: bool):
    """(name, run(code, n_el, h) -> (cpu, t, y, stats), n_el, h, ref n_el, ref h,
    error normaliser (None: absolute), error unit, reference text)."""
    t_hub = 4.0 if quick else 20.0
    t_arm = 0.3 if quick else 1.2
    hub = lambda code, n, h: (ours_hub if code == "ours" else exu_hub)(n, h, t_hub, 0.01)  # noqa
    arm = lambda scale: (lambda code, n, h: (ours_arm if code == "ours" else exu_arm)(   # noqa
        n, h, t_arm, scale, 1e-3))
    return [
        (f"hub-beam 6 rad/s 0-{t_hub:g} s", hub, 8, 2.5e-3, 16, 1.25e-3, "peak",
         "units of the reference's peak |tip deflection|", "ours ANCF 16 el, h = 1.25e-3 s"),
        (f"arm 1a 0-{t_arm:g} s", arm(1.0), 8, 2.5e-4, 16, 1.25e-4, None, "rad",
         "ours ANCF 16 el/link, h = 1.25e-4 s"),
        (f"arm x10 0-{t_arm:g} s", arm(10.0), 16, 2.5e-4, 32, 1.25e-4, None, "rad",
         "ours ANCF 32 el/link, h = 1.25e-4 s"),
    ]


def error(y, t, ref, norm):
    t_ref, y_ref = ref
    gap = float(np.abs(_on(t_ref, t, y) - y_ref).max())
    return gap / float(np.abs(y_ref).max()) if norm == "peak" else gap


def warm_up():
    """Untimed short runs of every model in both codes (kernel compilation, imports)."""
    ours_hub(2, 2.5e-3, 0.02, 0.01)
    ours_arm(2, 2.5e-4, 2e-3, 1.0, 1e-3)
    if exu is not None:
        exu_hub(2, 2.5e-3, 0.02, 0.01)
        exu_arm(2, 2.5e-4, 2e-3, 1.0, 1e-3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="shorter horizons (smoke run)")
    ap.add_argument("--no-checks", action="store_true",
                    help="skip the reference checks (Exudyn at the reference resolution and finer)")
    args = ap.parse_args()
    if exu is None:
        print("exudyn is not installed (pip install -e '.[bench]'): every case not built")
    else:
        print(f"Exudyn {exu.__version__}; ours: mbdcore generalized-alpha (GGL); "
              f"rho_inf = {RHO_INF}; CPU s by time.process_time(), build + solve, after a "
              f"warm-up run; ratio = ours_s / exudyn_s")
    warm_up()
    rows, details = [], []
    for name, run, n_el, h, n_ref, h_ref, norm, unit, ref_text in cases(args.quick):
        _, t_r, y_r, _ = run("ours", n_ref, h_ref)
        ref = (t_r, y_r)
        c_o, t_o, y_o, st_o = run("ours", n_el, h)
        e_o = error(y_o, t_o, ref, norm)
        if exu is None:
            rows.append(f"{name}, {c_o:.2f}, not built: exudyn not installed, -, {e_o:.2e}, -")
            continue
        c_x, t_x, y_x, st_x = run("exudyn", n_el, h)
        e_x = error(y_x, t_x, ref, norm)
        rows.append(f"{name}, {c_o:.2f}, {c_x:.3f}, {c_o / c_x:.1f}, {e_o:.2e}, {e_x:.2e}")
        text = (f"  {name}: {n_el} el, h = {h:g} s; error in {unit} against {ref_text}; "
                f"Newton its/step ours {st_o[0]:.2f}, Exudyn {st_x[0]:.2f}; per step ours "
                f"{st_o[1]:.4f} Jacobian builds and {st_o[2]:.4f} factorisations (kept "
                f"blocks with a new G), Exudyn {st_x[1]:.4f} Jacobians (each factorised)")
        if not args.no_checks:
            _, t_c, y_c, _ = run("exudyn", n_ref, h_ref)
            _, t_f, y_f, _ = run("exudyn", 2 * n_ref, h_ref / 2)
            text += (f"\n    reference check: Exudyn at {n_ref} el, h = {h_ref:g} s against it "
                     f"{error(y_c, t_c, ref, norm):.2e}; Exudyn at {2 * n_ref} el, "
                     f"h = {h_ref / 2:g} s against it {error(y_f, t_f, ref, norm):.2e}")
        details.append(text)
    print("case, ours_s, exudyn_s, ratio, ours_error, exudyn_error")
    for row in rows:
        print(row)
    for text in details:
        print(text)


if __name__ == "__main__":
    main()
