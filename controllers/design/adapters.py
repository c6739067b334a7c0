"""python-control adapters: the arm model, blocks and FMUs as named I/O systems.

* :func:`arm_iosys` — the flexible arm's equations of motion as a continuous-time
  ``control.NonlinearIOSystem`` with named states, inputs and outputs, so that
  ``find_operating_point``, ``linearize``, ``interconnect`` and
  ``input_output_response`` of python-control work on it.
* :func:`linearize_arm` — its linearisation as a named ``StateSpace``, with the
  analytic Jacobians of an equilibrium or with finite differences.
* :func:`arm_modal_analysis` — the modal analysis of the model through
  :func:`mbdcore.multibody.modal.modal_analysis` (the independent reference for the eigenvalues).
* :func:`as_iosystem` — any block as a ``NonlinearIOSystem`` with its named signals and
  states: continuous time for a block whose state obeys an ODE, or sampled, stepping
  exactly as the co-simulation master steps it (``block_iosys``, its former name).
* :func:`fmu_iosys` — any FMU that can get and set its state as a discrete-time I/O
  system; :func:`linearize_fmu` — its linearisation from finite-difference pulse
  responses taken from one saved FMU state (eigensystem realization).
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import control as ct
import numpy as np
import scipy.linalg as sl

from fmu.cosim.fmu_component import FMUComponent
from mbdcore.blocks import Block
from mbdcore.models.manipulator import (
    ARM_INPUTS,
    ARM_OUTPUTS,
    ArmProblem,
    FlexibleManipulator,
)
from mbdcore.multibody.modal import modal_analysis

__all__ = ["SignalNameError", "check_names", "signal_labels",
           "arm_iosys", "joint_angles", "linearize_arm", "arm_modal_analysis",
           "as_iosystem", "block_iosys", "FMUPlant", "fmu_iosys", "linearize_fmu"]



class SignalNameError(KeyError):
    """A signal, state or parameter name that the system does not have."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


def check_names(names: Sequence[str], known: Sequence[str], what: str) -> None:
    """Raise :class:`SignalNameError` naming every entry of ``names`` not in ``known``."""
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SignalNameError(f"unknown {what} {', '.join(map(repr, unknown))}; "
                              f"known {what}s: {', '.join(known)}")


def signal_labels(sys, kind: str) -> list[str]:
    """The names of a python-control system's ``kind`` signals: ``"input"``,
    ``"output"`` or ``"state"``."""
    return list(getattr(sys, f"{kind}_labels"))


# ----------------------------------------------------------------------------------
# the arm model
# ----------------------------------------------------------------------------------
def _model(model, params) -> FlexibleManipulator:
    if model is not None and params:
        raise TypeError("give either an arm model or its parameters, not both")
    return model if model is not None else FlexibleManipulator(**params)


def arm_iosys(model: FlexibleManipulator | None = None, name: str = "arm",
              outputs: Sequence[str] = ARM_OUTPUTS, **params) -> ct.NonlinearIOSystem:
    """The arm as a continuous-time ``NonlinearIOSystem``.

    Parameters
    ----------
    model : FlexibleManipulator, optional
        The model; built from ``params`` (arm parameters, SI units) if omitted.
    name : str
        System name (python-control prefixes signals with it in ``interconnect``).
    outputs : sequence of str
        Outputs, any of :data:`ARM_OUTPUTS`.

    Returns
    -------
    control.NonlinearIOSystem
        Inputs ``tau1``, ``tau2`` [N m]; states :meth:`~mbdcore.models.manipulator.FlexibleManipulator.state_names`; ``outputs``.
        ``sys.model`` is the FlexibleManipulator.
    """
    model = _model(model, params)
    outputs = list(outputs)
    check_names(outputs, ARM_OUTPUTS, "arm output")
    rhs = model.rhs

    def updfcn(t, x, u, p):
        return rhs(t, np.asarray(x, float), float(u[0]), float(u[1]))

    def outfcn(t, x, u, p):
        y = model.outputs(np.asarray(x, float))
        return np.array([y[n] for n in outputs])

    sys = ct.NonlinearIOSystem(updfcn, outfcn, inputs=list(ARM_INPUTS), outputs=outputs,
                               states=model.state_names(), name=name)
    sys.model = model
    return sys


def _arm_output_jacobian(model: FlexibleManipulator, theta, outputs) -> np.ndarray:
    """d(outputs)/dx at (theta, no deflection, rest): foreshortening is quadratic in the
    modal amplitudes, so only the rigid kinematics and the tip slopes appear."""
    n, nm = model.n_dof, model.n_modes
    l1, l2 = model.params["l1"], model.params["l2"]
    dphil1 = model.modes1.shapes(l1, 1)[0]
    e1 = np.exp(1j * theta[0])
    e2 = np.exp(1j * (theta[0] + theta[1]))
    dtip = np.zeros(2 * n, complex)                    # d(x_tip + i y_tip)/dx
    dtip[0] = 1j * (l1 * e1 + l2 * e2)
    dtip[1] = 1j * l2 * e2
    dtip[2:2 + nm] = 1j * e1 + 1j * l2 * e2 * dphil1
    dtip[2 + nm:n] = 1j * e2
    rows = {"theta1": np.eye(2 * n)[0], "theta2": np.eye(2 * n)[1],
            "omega1": np.eye(2 * n)[n], "omega2": np.eye(2 * n)[n + 1],
            "w1": np.r_[0, 0, np.ones(nm), np.zeros(nm), np.zeros(n)],
            "w2": np.r_[0, 0, np.zeros(nm), np.ones(nm), np.zeros(n)],
            "x_tip": dtip.real, "y_tip": dtip.imag}
    return np.array([rows[o] for o in outputs])


def joint_angles(theta) -> np.ndarray:
    """The two joint angles [rad] from ``theta``: a pair ``(theta1, theta2)``, or one
    number meaning both joints at that angle (``0`` is the straight arm).

    Raises
    ------
    ValueError
        Anything else, naming ``theta`` and the accepted forms.
    """
    try:
        arr = np.asarray(theta, float)
    except (TypeError, ValueError):
        arr = None
    if arr is not None and arr.ndim == 0:
        arr = np.full(2, float(arr))
    if arr is None or arr.shape != (2,) or not np.all(np.isfinite(arr)):
        raise ValueError(f"theta = {theta!r}: give the joint angles [rad] as a pair "
                         "(theta1, theta2), or one number for both joints")
    return arr


def linearize_arm(model: FlexibleManipulator | None = None, theta=(0.0, 0.0),
                  outputs: Sequence[str] = ARM_OUTPUTS, jacobian: str = "analytic",
                  name: str = "arm", **params) -> ct.StateSpace:
    """The arm linearised at rest, straight links, joint angles ``theta`` [rad], no torque.

    Every such configuration is an equilibrium (the arm moves in the horizontal
    plane).  There ``q'' = M(q)^-1 (tau - K q - D q' - h(q, q'))`` with ``h`` quadratic
    in ``q'`` and ``tau - K q = 0``, so the Jacobians are exactly

        A = [[0, I], [-M^-1 K, -M^-1 D]],   B = [[0], [M^-1 S]],   S = d(Q)/d(tau).

    Parameters
    ----------
    theta : pair of float, or float
        Joint angles (theta1, theta2) [rad]; one number sets both (:func:`joint_angles`).
    jacobian : {"analytic", "fd"}
        ``"fd"``: python-control's finite-difference ``linearize`` of :func:`arm_iosys`.

    Returns
    -------
    control.StateSpace
        Continuous time, named states/inputs/outputs as :func:`arm_iosys`.
    """
    model = _model(model, params)
    theta = joint_angles(theta)
    x0 = model.initial_state(*theta)
    if jacobian == "fd":
        return ct.linearize(arm_iosys(model, name=name, outputs=outputs), x0, [0.0, 0.0],
                            name=name)
    if jacobian != "analytic":
        raise ValueError(f"jacobian = {jacobian!r}; accepted: 'analytic', 'fd'")
    outputs = list(outputs)
    check_names(outputs, ARM_OUTPUTS, "arm output")
    n = model.n_dof
    M = model.mass_matrix(x0[:n])
    S = np.zeros((n, 2))
    S[0, 0] = S[1, 1] = 1.0
    A = np.block([[np.zeros((n, n)), np.eye(n)],
                  [-np.linalg.solve(M, model.K), -np.linalg.solve(M, model.D)]])
    B = np.vstack([np.zeros((n, 2)), np.linalg.solve(M, S)])
    C = _arm_output_jacobian(model, theta, outputs)
    return ct.ss(A, B, C, np.zeros((len(outputs), 2)), inputs=list(ARM_INPUTS),
                 outputs=outputs, states=model.state_names(), name=name)


def arm_modal_analysis(model: FlexibleManipulator | None = None, theta=(0.0, 0.0),
                       locked_joints: bool = False, **params):
    """Modal analysis of the arm model at rest at ``theta`` (:func:`mbdcore.multibody.modal.modal_analysis`).

    ``locked_joints=True`` fixes both joint angles (the locked-rotor modes); otherwise
    the joints are free (torque-free: the open-loop modes, rigid modes dropped).
    Returns a :class:`mbdcore.multibody.modal.ModalResult` (frequencies [Hz]).
    """

    model = _model(model, params)
    problem = ArmProblem(model)
    if locked_joints:
        lock = np.zeros((2, model.n_dof))
        lock[0, 0] = lock[1, 1] = 1.0
        problem.constraint_jacobian = lambda t, q: lock
        problem.m = 2
    q0 = np.zeros(model.n_dof)
    q0[:2] = joint_angles(theta)
    return modal_analysis(problem, q0)


# ----------------------------------------------------------------------------------
# blocks
# ----------------------------------------------------------------------------------
def as_iosystem(block: Block, dt: float | None = None, name: str | None = None,
                inputs: Sequence[str] | None = None,
                outputs: Sequence[str] | None = None) -> ct.NonlinearIOSystem:
    """Any block as a python-control ``NonlinearIOSystem`` with its named inputs,
    outputs and states (its :meth:`~mbdcore.blocks.Block.vector_state`), so that
    ``control.interconnect`` (by name), ``control.input_output_response`` and
    ``control.linearize`` work on it.

    Two forms, chosen by ``dt``:

    * ``dt`` [s] given: the **sampled form**, what the co-simulation master computes
      with Jacobi stepping: ``x[k+1] = f(x[k], u[k])`` is one ``do_step(t_k, dt)`` with
      the inputs held (a continuous block: its own integrator over the step, substeps
      included), ``y[k] = h(t_k, x[k], u[k])`` the block's outputs after setting the
      inputs.  Every block has it; a closed loop of sampled forms run by
      ``input_output_response`` is the master's run.
    * ``dt`` omitted: the block's **own time base**.  A block whose state obeys an ODE
      (one that declares ``derivatives() -> (rhs, args)``, ``x' = rhs(x, *args)`` for
      the current inputs: every :class:`~mbdcore.dae.ode_block.OdeBlock` — the arm, the
      drive motors, the antenna axis, the linear plant — and the joint PD with rate
      filters) is continuous time, ``x' = f(x, u)`` that right-hand side, not the
      integrator's; a block without state (the joint PD, computed torque, a
      trajectory) is static with an unspecified time base (``dt=None``: it joins a
      continuous or a discrete loop), its outputs those at time ``t`` (a trajectory's
      are functions of time).  A block with a discrete state (PID, notch, LQG) or a
      constrained (DAE) system block has no continuous form: ``dt`` is asked for.

    Parameters
    ----------
    block : Block
        Used in place: its state, time and inputs are overwritten at every call.
    dt : float, optional
        Sample time [s] of the sampled form.
    name : str, optional
        System name (python-control prefixes signals with it); default the class name.
    inputs, outputs : sequence of str, optional
        The inputs and outputs exposed (default all); the other inputs keep their
        current values.

    Returns
    -------
    control.NonlinearIOSystem
        ``sys.block`` is the block, ``sys.x0`` its current state vector.
    """
    vs = block.vector_state()
    kind = type(block).__name__
    inputs = list(block.input_names() if inputs is None else inputs)
    check_names(inputs, block.input_names(), f"input of {kind}")
    outputs = list(block.output_names() if outputs is None else outputs)
    check_names(outputs, block.output_names(), f"output of {kind}")
    if dt is not None and not (np.isfinite(dt) and dt > 0):
        raise ValueError(f"dt = {dt!r}: the sample time of the sampled form must be a "
                         "finite number > 0 [s]")
    # a continuous state is one with a right-hand side: derivatives() -> (rhs, args),
    # rhs(x, *args) with the inputs held (OdeBlock's contract; the joint PD's filters)
    continuous = dt is None and bool(vs.names) and callable(getattr(block, "derivatives", None))
    if dt is None and vs.names and not continuous:
        raise ValueError(f"{kind} has a discrete or constrained state "
                         f"({', '.join(vs.names[:4])}{', ...' if len(vs.names) > 4 else ''}) "
                         "and no continuous-time form: give dt, the sample time [s] of its "
                         "sampled form")

    def hold(t, u):
        block.time = float(t)
        block.set_inputs(dict(zip(inputs, map(float, u))))

    def load(t, x, u):
        vs.set(block, x)
        hold(t, u)

    def sampled_update(t, x, u, p):
        load(t, x, u)
        block.do_step(float(t), dt)
        return vs.get(block)

    def ode_rhs(t, x, u, p):
        hold(t, u)            # the right-hand side takes the state as an argument
        rhs, args = block.derivatives()
        return np.asarray(rhs(np.asarray(x, float), *args), float)

    def outfcn(t, x, u, p):
        load(t, x, u)
        out = block.outputs()
        return np.array([out[n] for n in outputs], float)

    sys = ct.NonlinearIOSystem(ode_rhs if continuous else sampled_update, outfcn,
                               inputs=inputs, outputs=outputs, states=vs.names or 0,
                               dt=0 if continuous else dt, name=name or kind)
    sys.block = block
    sys.x0 = vs.get(block)
    return sys


#: The sampled form under its former name: ``block_iosys(block, dt)`` is
#: ``as_iosystem(block, dt)``.
block_iosys = as_iosystem


# ----------------------------------------------------------------------------------
# FMUs
# ----------------------------------------------------------------------------------
class FMUPlant:
    """An FMI 2.0 co-simulation FMU driven step by step, with state save/restore.

    A thin layer over :class:`fmu.cosim.fmu_component.FMUComponent` (fmpy), which reports FMU
    failures with the variable and the FMU's log.  Use as a context manager.

    Parameters
    ----------
    fmu_path : str or Path
    parameters : dict, optional
        Start values by name, set in initialization mode.
    inputs, outputs : sequence of str, optional
        Variables used (default: all inputs / outputs of the FMU).
    """

    def __init__(self, fmu_path, parameters: dict | None = None,
                 inputs: Sequence[str] | None = None, outputs: Sequence[str] | None = None,
                 name: str = "fmu"):

        self.component = FMUComponent(name, Path(fmu_path), parameters=parameters or {})
        cs = self.component.model_description.coSimulation
        if not cs.canGetAndSetFMUstate:
            raise ValueError(f"{Path(fmu_path).name} cannot get and set its state "
                             "(canGetAndSetFMUstate is false): it cannot be linearised or "
                             "used as a python-control system")
        self.inputs = list(self.component.inputs if inputs is None else inputs)
        self.outputs = list(self.component.outputs if outputs is None else outputs)
        check_names(self.inputs, self.component.inputs, "FMU input")
        check_names(self.outputs, self.component.outputs, "FMU output")
        self._set = None
        self.time = 0.0

    def start(self, t0: float = 0.0) -> "FMUPlant":
        self.component.initialize(t0)
        self._set = self.component.input_setter(self.inputs) if self.inputs else None
        self.time = t0
        return self

    def set_inputs(self, u) -> None:
        if self._set is not None:
            self._set([float(v) for v in u])

    def read(self) -> np.ndarray:
        y = self.component.get_outputs()
        return np.array([y[n] for n in self.outputs])

    def step(self, h: float) -> None:
        self.component.do_step(self.time, h)
        self.time += h

    def get_state(self):
        return (self.time, self.component.get_state())

    def set_state(self, state) -> None:
        self.time, s = state
        self.component.set_state(s)

    def close(self) -> None:
        self.component.terminate()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()


def fmu_iosys(fmu_path, dt: float, parameters: dict | None = None,
              inputs: Sequence[str] | None = None, outputs: Sequence[str] | None = None,
              name: str = "fmu") -> ct.NonlinearIOSystem:
    """An FMU as a discrete-time ``NonlinearIOSystem`` (sample time ``dt`` [s]).

    An FMU's state is opaque, so the system's one state is a *handle*: the index of an
    FMU state saved with ``fmi2GetFMUstate``.  ``x[k+1] = f(x[k], u[k])`` restores the
    state ``x[k]``, sets ``u[k]``, takes one ``fmi2DoStep`` and saves the new state
    under a new handle; the initial handle is ``0``.  That makes the FMU usable in
    ``input_output_response`` and ``interconnect`` with other discrete-time systems;
    it has no meaningful derivative with respect to the handle: linearise with
    :func:`linearize_fmu`.  ``sys.plant`` is the :class:`FMUPlant`; call
    ``sys.plant.close()`` when done.
    """
    plant = FMUPlant(fmu_path, parameters, inputs, outputs, name=name).start()
    saved = [plant.get_state()]
    # python-control calls f and h at the same (x, u) several times; reuse the step
    cache: dict = {}

    def load(x, u):
        plant.set_state(saved[int(round(float(x[0])))])
        plant.set_inputs(u)

    def updfcn(t, x, u, p):
        key = (int(round(float(x[0]))), tuple(np.asarray(u, float)))
        if key not in cache:
            load(x, u)
            plant.step(dt)
            saved.append(plant.get_state())
            cache[key] = len(saved) - 1
        return np.array([float(cache[key])])

    def outfcn(t, x, u, p):
        load(x, u)
        return plant.read()

    sys = ct.NonlinearIOSystem(updfcn, outfcn, inputs=plant.inputs, outputs=plant.outputs,
                               states=[f"{name}_state_handle"], dt=dt, name=name)
    sys.plant = plant
    return sys


def _era(markov: np.ndarray, order: int | None, rows: int, rtol: float):
    """Eigensystem realization (Juang & Pappa 1985) of Markov parameters
    ``markov[k] = C A^k B`` (k = 0, 1, ...), shape (K, p, m): returns (A, B, C, sv)."""
    K, p, m = markov.shape
    cols = K - 1 - rows
    if cols < 1:
        raise ValueError("too few Markov parameters for the Hankel matrix")
    H0 = np.block([[markov[i + j] for j in range(cols)] for i in range(rows)])
    H1 = np.block([[markov[i + j + 1] for j in range(cols)] for i in range(rows)])
    U, s, Vt = np.linalg.svd(H0, full_matrices=False)
    if order is None:
        order = int(np.sum(s > rtol * s[0]))
    if order > len(s) or s[order - 1] <= 0.0:
        raise ValueError(f"order {order} exceeds the rank of the Hankel matrix")
    U, sr, Vt = U[:, :order], np.sqrt(s[:order]), Vt[:order]
    A = (U / sr).T @ H1 @ (Vt.T / sr)
    B = (sr[:, None] * Vt)[:, :m]
    C = (U * sr)[:p]
    return A, B, C, s


def linearize_fmu(fmu_path, dt: float, u0=None, parameters: dict | None = None,
                  inputs: Sequence[str] | None = None, outputs: Sequence[str] | None = None,
                  t_settle: float = 0.0, delta: float = 1e-2, decimate: int = 10,
                  n_samples: int = 81, order: int | None = None, rtol: float = 1e-7,
                  name: str = "fmu") -> ct.StateSpace:
    """Linear model of an FMU at an operating point, by finite differences through
    its saved state.

    The FMU runs with the inputs ``u0`` for ``t_settle`` [s]; that state is saved
    (``fmi2GetFMUstate``).  For each input j, two runs restored from it apply
    ``u0 +- delta e_j`` during the first step and ``u0`` afterwards; half their
    difference over ``delta`` is the pulse response (central differences: the
    quadratic part of the nonlinearity cancels).  Sampled every ``decimate`` steps it
    gives the Markov parameters ``C Phi^(k decimate) Gamma`` of the discrete model
    (``Phi = e^{A dt}``, ``Gamma`` the response to a one-step pulse), from which the
    eigensystem realization builds ``(Phi^decimate, Gamma, C)``.  The model at ``dt``
    and its continuous-time equivalent follow from the matrix logarithm of ``Phi^d``.  ``D`` is the difference of the
    outputs at the time the pulse is applied (direct feedthrough).

    Parameters
    ----------
    dt : float
        Communication step [s].
    u0 : sequence of float, optional
        Operating-point inputs (default: zero).
    delta : float
        Input perturbation (unit of each input).
    decimate : int
        Steps between Markov samples; ``1 / (decimate dt)`` must exceed twice the
        highest frequency of interest (aliasing).
    n_samples : int
        Markov samples (the run is ``n_samples * decimate`` steps).
    order : int, optional
        Model order; default: singular values of the Hankel matrix above ``rtol``
        times the largest.

    Returns
    -------
    control.StateSpace
        Continuous time, inputs and outputs named as in the FMU, states
        ``x0 .. x<n-1>`` (a realization: they are not physical coordinates).
        Attributes ``hankel_singular_values`` and ``discrete`` (the model at ``dt``).
    """
    with FMUPlant(fmu_path, parameters, inputs, outputs, name=name) as plant:
        m, p = len(plant.inputs), len(plant.outputs)
        u0 = np.zeros(m) if u0 is None else np.asarray(u0, float)
        if u0.shape != (m,):
            raise ValueError(f"u0 has shape {u0.shape}; the FMU has {m} inputs {plant.inputs}")
        plant.set_inputs(u0)
        for _ in range(int(round(t_settle / dt))):
            plant.step(dt)
        s0 = plant.get_state()
        n_steps = n_samples * decimate

        def run(u_first):
            plant.set_state(s0)
            plant.set_inputs(u_first)
            y = [plant.read()]
            plant.step(dt)
            plant.set_inputs(u0)
            y.append(plant.read())
            for k in range(1, n_steps):
                plant.step(dt)
                if (k + 1) % decimate == 1 or decimate == 1:
                    y.append(plant.read())
            return np.array(y)

        D = np.zeros((p, m))
        markov = None
        for j in range(m):
            du = np.zeros(m)
            du[j] = delta
            diff = (run(u0 + du) - run(u0 - du)) / (2 * delta)
            D[:, j] = diff[0]
            if markov is None:
                markov = np.zeros((len(diff) - 1, p, m))
            markov[:, :, j] = diff[1:]
    rows = min(len(markov) // 2, max(1, len(markov) - 2))
    Ad, Bd, C, sv = _era(markov, order, rows, rtol)
    n = len(Ad)
    # markov[k] = C Phi^(k d) Gamma: Ad = Phi^d (principal logarithm; the modes must
    # lie below the Nyquist frequency of the decimated samples), Bd = Gamma.
    Ac = sl.logm(Ad).real / (decimate * dt)
    # Gamma = int_0^dt e^{A s} ds B_c  ->  B_c from the one-step pulse response
    G = sl.expm(np.block([[Ac, np.eye(n)], [np.zeros((n, 2 * n))]]) * dt)[:n, n:]
    Bc = np.linalg.solve(G, Bd)
    sys = ct.ss(Ac, Bc, C, D, inputs=plant.inputs, outputs=plant.outputs,
                states=[f"x{i}" for i in range(n)], name=name)
    sys.hankel_singular_values = sv
    sys.discrete = ct.ss(sl.expm(Ac * dt), Bd, C, D, dt, inputs=plant.inputs,
                         outputs=plant.outputs, states=[f"x{i}" for i in range(n)], name=name)
    return sys
