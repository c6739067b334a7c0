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
4. ``cable net``: the spatial case, ``mbdcore.models.spatial_mechanisms.cable_net``: a
   6 x 6 net of junctions 1 m apart joined by 60 3D ANCF cables of 4 elements (1800
   coordinates; rho A = 0.5 kg/m, EA = 1e5 N, EI = 10 N m^2) whose ends meet in
   spherical joints, the border junctions pinned, released at rest under gravity,
   0-0.2 s, h = 1e-3 s (ours on the sparse path, ``sparse="auto"``).  Error: max over
   0-0.2 s (every 1 ms) of |z - z_ref| of junction (2, 2) [m].  Reference: ours, 8
   elements per cable at h = 5e-4 s.  For this case the details also give ours' ms per
   step, Newton iterations per step and the split of a step's CPU time into the
   compiled terms (the scaled residual and the Newton blocks, ``SystemTerms``), the SuperLU
   factorisations, the SuperLU solves and the rest (Python: the iteration's logic,
   the assembly of the sparse Newton matrix), with the compiled terms and without
   (``System.compiled_residual = False``: each body and joint in Python, as before
   the compiled spatial terms).

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
* 3D ANCF cable -> ``ObjectANCFCable`` elements on ``NodePointSlope1`` nodes (position
  and slope, 6 coordinates per node as ours), its own nodes per cable, same rho A, EI,
  EA, element length; the same difference of axial strain as the planar element.
  Gravity -> ``LoadMassProportional`` on a ``MarkerBodyMass`` of every element.
  ``Spherical`` at a junction -> ``ObjectJointSpherical`` between ``MarkerNodePosition``
  markers of the cable ends (the first cable's end with each other's); a pinned border
  junction -> ``ObjectJointSpherical`` between a ``MarkerBodyPosition`` on the ground
  and the first cable end.  Exudyn solves it with its sparse solver
  (``linearSolverType = EigenSparse``; its dense default would factorise 2100 x 2100
  dense matrices).
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

from mbdcore.dae.methods import make_method  # noqa: E402
from mbdcore.dae.simulate import simulate  # noqa: E402
from mbdcore.models.manipulator import bang_bang_torque, validate_arm_parameters  # noqa: E402
from mbdcore.dae import newton_matrix  # noqa: E402
from mbdcore.dae.index1 import SparseFactors  # noqa: E402
from mbdcore.models.mechanisms import HUB_BEAM, SpinUp, hub_beam, two_link_arm  # noqa: E402
from mbdcore.models.spatial_mechanisms import CABLE_NET, cable_net  # noqa: E402
from mbdcore.multibody.ancf import ANCFBeam  # noqa: E402
from mbdcore.multibody.terms import SystemTerms  # noqa: E402

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


def _exu_settings(h, t_end, record, sparse=False):
    ss = exu.SimulationSettings()
    if sparse:
        ss.linearSolver.solverType = exu.LinearSolverType.EigenSparse
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


def _solve_exu(mbs, h, t_end, record, sparse=False):
    mbs.Assemble()
    exu.SolveDynamic(mbs, _exu_settings(h, t_end, record, sparse))


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


# -- case 4: a net of 3D ANCF cables on spherical joints ---------------------------------
NET_JUNCTION = (2, 2)       # the junction whose height is compared


class _Split:
    """CPU time [s] spent in the compiled terms, the SuperLU factorisations and solves
    during a run (timers wrapped around them, removed on exit)."""

    def __init__(self):
        self.time = dict(terms=0.0, factorisation=0.0, solves=0.0)
        self._saved = []

    def _wrap(self, owner, name, key):
        real = getattr(owner, name)
        self._saved.append((owner, name, real))

        def timed(*args, **kwargs):
            t0 = time.process_time()
            try:
                return real(*args, **kwargs)
            finally:
                self.time[key] += time.process_time() - t0
        setattr(owner, name, timed)

    def __enter__(self):
        for name in ("sparse_residual", "sparse_jacobian"):
            self._wrap(SystemTerms, name, "terms")
        self._wrap(newton_matrix, "sparse_lu", "factorisation")
        self._wrap(SparseFactors, "solve", "solves")
        return self

    def __exit__(self, *exc):
        for owner, name, real in reversed(self._saved):
            setattr(owner, name, real)


def ours_net(n_el, h, t_end, record):
    """(cpu [s], t, z of the junction [m], (its/step, jac/step, LU/step))."""
    t0 = time.process_time()
    s = cable_net(n_elements=n_el)
    r = simulate(s, t_end, h, "generalized-alpha", rho_inf=RHO_INF,
                 record_every=int(round(record / h)))
    cpu = time.process_time() - t0
    i, j = NET_JUNCTION
    z = np.asarray(r[f"c{i}_{j}_x.n0.rz"])
    return cpu, np.asarray(r.t), z, _ours_stats(r)


def exu_net(n_el, h, t_end, record):
    p = CABLE_NET
    k, a, g = p["junctions"], p["spacing"], p["gravity"]
    le = a / n_el
    t0 = time.process_time()
    mbs = exu.SystemContainer().AddSystem()
    ground = mbs.AddObject(ei.ObjectGround())
    ends: dict = {}
    watch = None
    for i in range(k):
        for j in range(k):
            for di, dj in ((1, 0), (0, 1)):
                if i + di >= k or j + dj >= k:
                    continue
                nodes = [mbs.AddNode(ei.NodePointSlope1(referenceCoordinates=[
                    (i + di * x / n_el) * a, (j + dj * x / n_el) * a, 0.0, di, dj, 0.0]))
                    for x in range(n_el + 1)]
                for e in range(n_el):
                    el = mbs.AddObject(ei.ObjectANCFCable(
                        length=le, massPerLength=p["rho_a"], bendingStiffness=p["ei"],
                        axialStiffness=p["ea"], nodeNumbers=[nodes[e], nodes[e + 1]]))
                    mm = mbs.AddMarker(ei.MarkerBodyMass(bodyNumber=el))
                    mbs.AddLoad(ei.LoadMassProportional(markerNumber=mm,
                                                        loadVector=[0.0, 0.0, -g]))
                if (i, j) == NET_JUNCTION and watch is None:
                    watch = nodes[0]
                ends.setdefault((i, j), []).append(nodes[0])
                ends.setdefault((i + di, j + dj), []).append(nodes[-1])
    for (i, j), at in ends.items():
        markers = [mbs.AddMarker(ei.MarkerNodePosition(nodeNumber=nd)) for nd in at]
        for other in markers[1:]:
            mbs.AddObject(ei.ObjectJointSpherical(markerNumbers=[markers[0], other]))
        if i in (0, k - 1) or j in (0, k - 1):
            mg = mbs.AddMarker(ei.MarkerBodyPosition(bodyNumber=ground,
                                                     localPosition=[i * a, j * a, 0.0]))
            mbs.AddObject(ei.ObjectJointSpherical(markerNumbers=[mg, markers[0]]))
    sens = mbs.AddSensor(ei.SensorNode(nodeNumber=watch, storeInternal=True,
                                       writeToFile=False,
                                       outputVariableType=exu.OutputVariableType.Position))
    _solve_exu(mbs, h, t_end, record, sparse=True)
    cpu = time.process_time() - t0
    d = mbs.GetSensorStoredData(sens)
    return cpu, d[:, 0], d[:, 3], _exu_stats(mbs, int(round(t_end / h)))


def net_split_text(n_el, h, t_end) -> str:
    """Ours' step loop (the integrator's steps after its start, without the model's
    build, the redundancy check and the recording) in ms per step and its split, with
    and without the compiled terms."""
    out = []
    for compiled in (True, False):
        s = cable_net(n_elements=n_el)
        s.compiled_residual = compiled
        s.resolve_redundancy()
        stepper = make_method("generalized-alpha", rho_inf=RHO_INF, sparse="auto")
        q, v = s.initial_state()
        stepper.start(s, 0.0, q, v)
        steps = int(round(t_end / h))
        with _Split() as timers:
            t0 = time.process_time()
            for k in range(steps):
                q, v = stepper.step(s, k * h, q, v, h)
            cpu = time.process_time() - t0
        split, per = timers.time, 1e3 / steps
        rest = cpu - sum(split.values())
        its = stepper.newton_iterations / steps
        out.append(f"    ours {'compiled terms' if compiled else 'Python terms (before)'}: "
                   f"{cpu * per:.2f} ms/step (step loop), {its:.2f} Newton its/step, "
                   f"{stepper.factorizations / steps:.3f} LU/step; terms "
                   f"{split['terms'] * per:.2f}, factorisation {split['factorisation'] * per:.2f}, "
                   f"solves {split['solves'] * per:.2f}, rest (Python: Newton logic, sparse "
                   f"assembly; before: the terms too) {rest * per:.2f} ms/step "
                   f"(n = {s.n}, m = {s.m})")
    return "\n".join(out)


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
    t_net = 0.05 if quick else 0.2
    hub = lambda code, n, h: (ours_hub if code == "ours" else exu_hub)(n, h, t_hub, 0.01)  # noqa
    arm = lambda scale: (lambda code, n, h: (ours_arm if code == "ours" else exu_arm)(   # noqa
        n, h, t_arm, scale, 1e-3))
    net = lambda t_end: (lambda code, n, h: (ours_net if code == "ours" else exu_net)(   # noqa
        n, h, t_end, 1e-3))
    return [
        (f"hub-beam 6 rad/s 0-{t_hub:g} s", hub, 8, 2.5e-3, 16, 1.25e-3, "peak",
         "units of the reference's peak |tip deflection|", "ours ANCF 16 el, h = 1.25e-3 s"),
        (f"arm 1a 0-{t_arm:g} s", arm(1.0), 8, 2.5e-4, 16, 1.25e-4, None, "rad",
         "ours ANCF 16 el/link, h = 1.25e-4 s"),
        (f"arm x10 0-{t_arm:g} s", arm(10.0), 16, 2.5e-4, 32, 1.25e-4, None, "rad",
         "ours ANCF 32 el/link, h = 1.25e-4 s"),
        (f"cable net 6x6 0-{t_net:g} s", net(t_net), 4, 1e-3, 8, 5e-4, None, "m",
         "ours 8 el/cable, h = 5e-4 s"),
    ]


def error(y, t, ref, norm):
    t_ref, y_ref = ref
    gap = float(np.abs(_on(t_ref, t, y) - y_ref).max())
    return gap / float(np.abs(y_ref).max()) if norm == "peak" else gap


def warm_up():
    """Untimed short runs of every model in both codes (kernel compilation, imports)."""
    ours_hub(2, 2.5e-3, 0.02, 0.01)
    ours_arm(2, 2.5e-4, 2e-3, 1.0, 1e-3)
    ours_net(1, 1e-3, 2e-3, 1e-3)
    if exu is not None:
        exu_net(1, 1e-3, 2e-3, 1e-3)
        exu_hub(2, 2.5e-3, 0.02, 0.01)
        exu_arm(2, 2.5e-4, 2e-3, 1.0, 1e-3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="shorter horizons (smoke run)")
    ap.add_argument("--only", default="",
                    help="run only the cases whose name contains this text (e.g. 'net')")
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
        if args.only not in name:
            continue
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
        if name.startswith("cable net"):
            text += "\n" + net_split_text(n_el, h, 0.05 if args.quick else 0.2)
        details.append(text)
    print("case, ours_s, exudyn_s, ratio, ours_error, exudyn_error")
    for row in rows:
        print(row)
    for text in details:
        print(text)


if __name__ == "__main__":
    main()
