"""Force elements of planar multibody systems (absolute coordinates).

Each element adds its generalised forces to F(t, q, q') through ``apply`` and reports
its potential energy [J] (0 for non-conservative parts).  Elements with ``input_names``
read named inputs of the system: applied joint torques [N m] and forces [N] that become
FMU inputs.  Gravity is a property of the System.
"""
from __future__ import annotations

import math

import numpy as np

from mbdcore.blocks import ParameterError
from mbdcore.multibody.constraints import initial_angle
from mbdcore.multibody.system import E, StateView, rot, scatter_force
from mbdcore.multibody.terms import (CompiledElement, angle_terms, constant_law,
                                     contact_law, measure_element, point_terms,
                                     spring_law)

__all__ = ["Force", "line_element", "angle_element", "PointForce",
           "TranslationalSpringDamper", "RotationalSpringDamper",
           "JointTorque", "ConstantTorque", "JointForce", "Contact"]


def _check(name: str, label: str, value: float, minimum: float = 0.0, strict: bool = False,
           unit: str = "") -> float:
    value = float(value)
    ok = math.isfinite(value) and (value > minimum if strict else value >= minimum)
    if not ok:
        rel = ">" if strict else ">="
        raise ParameterError(f"{name}: {label} = {value!r} is invalid: accepted values are "
                             f"finite numbers {rel} {minimum} {unit}".rstrip())
    return value


class Force:
    """Base class of force elements."""

    input_names: tuple[str, ...] = ()
    #: unit of the inputs in ``input_names`` (FMI notation): what the element reads
    input_unit = "N"
    kind = "force"
    _count = 0

    def __init__(self, name: str | None = None):
        Force._count += 1
        self.name = name or f"{self.kind}{Force._count}"
        self.system = None

    def bind(self, system) -> None:
        self.system = system

    def apply(self, t, view, f, inputs) -> None:
        raise NotImplementedError

    def potential(self, t, view) -> float:
        return 0.0

    def jacobians(self, t, q, v, inputs):
        """(dF/dq, dF/dv) or None to let the system use finite differences."""
        return None

    def state_independent(self) -> bool:
        """True if the generalised force does not depend on (q, v) -- only on t and the
        inputs --, so the compiled Newton iterations take it as a constant of each solve
        (:class:`~mbdcore.multibody.assembly.SystemTerms`).  False by default."""
        return False

    def input_limits(self) -> dict:
        """{input name: (low, high)}: the range this element clips an input to before
        using it (a C model clips alike); {} by default."""
        return {}

    def compiled_element(self) -> CompiledElement | None:
        """The element's state-dependent generalised force and its exact tangents as a C
        kernel over the coordinates it reads (most as a measure element,
        :func:`~mbdcore.multibody.terms.measure_element`), for the compiled Newton
        iterations (:class:`~mbdcore.multibody.terms.SystemTerms`), or None (the
        default): the system's residual is then evaluated in Python."""
        return None

    def load_solve(self, t, inputs) -> None:
        """Before each solve at time t [s] on the compiled path: write what this
        element's compiled form reads besides the state into its parameters -- its
        inputs (name -> value: a linear actuator's force), its load at t (a point force
        given as a function of time); nothing by default."""

    def compiled_per_solve(self) -> bool:
        """True if :meth:`load_solve` writes what the compiled form reads (an input, a
        load in time): a C model, which does not call it, cannot take the element.
        False by default."""
        return False

    def compiled_engagement(self):
        """None, or the parameters of this element's compiled law (made by
        :meth:`compiled_element`) whose entry 3 is its discrete state "engaged": an
        element that engages for good at the first accepted state where its measure
        s >= 0 (a latch), which a C model keeps as state and switches as :meth:`update`
        does.  None by default."""
        return None

    # events and discrete state (a latch that engages, say) ------------------------------
    def update(self, t, q, v) -> bool:
        """An event between time steps, at the accepted state (t, q, v); True when the
        element's forces jumped (the integrator must then restart).  Most have none."""
        return False

    def discrete_state(self):
        """What the element keeps between steps besides (q, v), as plain data, or None:
        saved and restored with the state of a simulation (FMU rollback)."""
        return None

    def set_discrete_state(self, state) -> None:
        """Restore what :meth:`discrete_state` returned."""

    # helpers -------------------------------------------------------------------------
    @staticmethod
    def _add_point_force(f, state, J, force):
        """Generalised force J^T F of a force F [N] acting at a point with dr/dq = J."""
        scatter_force(f, state, J, force)

    @staticmethod
    def _add_torque(f, view, frame, torque):
        """Generalised force of a torque [N m] on the orientation of ``frame``."""
        body = frame[0]
        form = body.angle_form(frame[1])
        if form is not None and form[0] == "linear":
            # an orientation linear in the coordinates (a rigid body's angle, the
            # ground): its Jacobian is the constant coefficients (the body's first column
            # in f may be that of an element's local block)
            start = view.column(body)
            if start is not None:
                for col, k in zip(form[1], form[2]):
                    f[start + col] += k * torque
            return
        st = view[body]
        scatter_force(f, st, st.angle(frame[1])[2], torque)


def line_element(a, b, s0: float, law, linear=(), beta: float = 1.0, normal=None,
                 along: bool = False) -> CompiledElement | None:
    """A measure element on s = beta |r_b - r_a| + sum w q[col] + s0 between the markers
    a and b (``linear``: (column, weight) terms besides), or with a ``normal`` fixed in
    a's body (a rigid body or the ground) on its projection beta n . (r_b - r_a) instead
    of the length (``along``: a force along n, :func:`~mbdcore.multibody.terms.
    measure_element`); None where a point has no closed form
    (:func:`~mbdcore.multibody.terms.point_terms`) or the normal's body is neither."""
    pa, pb = point_terms(a), point_terms(b)
    if pa is None or pb is None:
        return None
    if normal is not None and pa[0] != "rigid":
        if a[0].n_coords != 0:
            return None
        normal = rot(a[0].angle) @ normal        # in the ground's frame, fixed
    return measure_element(list(linear), s0, law, (pa, pb), beta, normal, along)


def angle_element(frames, s0: float, law, linear=()) -> CompiledElement | None:
    """A measure element on s = sum sign theta(frame) + sum w q[col] + s0 over
    (frame, sign) pairs: orientations linear in q, and at most one a beam's slope angle
    theta0 + atan2(t0 x a, t0 . a), a = (S1 . q[cols_x], S1 . q[cols_y]) (the measure's
    angle term, a its point b from the origin); None otherwise."""
    terms, slope = list(linear), None
    for frame, sign in frames:
        form = angle_terms(frame, sign)
        if form is not None:
            terms.extend(form[0])
            s0 += form[1]
            continue
        body = frame[0]
        form = body.angle_form(frame[1])
        if slope is not None or form is None or form[0] != "slope" or body.index is None:
            return None
        slope = body, sign, form
    if slope is None:
        return measure_element(terms, s0, law)
    body, sign, (_, (cols_x, cols_y), s1, theta0, t0) = slope
    k = len(cols_x)
    along = np.zeros((2, 2 * k))
    along[0, :k] = along[1, k:] = s1
    origin = ("linear", [], np.zeros((2, 0)), np.zeros(2))
    vector = ("linear", [body.index + int(c) for c in list(cols_x) + list(cols_y)], along,
              np.zeros(2))
    return measure_element(terms, s0 + sign * theta0, law, (origin, vector), sign,
                           tangent0=np.asarray(t0, float))


class PointForce(Force):
    """A force ``F(t) -> (Fx, Fy)`` [N] in the ground frame at a marker."""

    kind = "point_force"

    def __init__(self, at, force, name=None):
        super().__init__(name)
        self.at_ref = at
        #: the constant force [N] when one was given (None for a function of time)
        self.value = None if callable(force) else np.asarray(force, float)
        self.force = force if callable(force) else (lambda t, c=self.value: c)
        #: the force the compiled element reads [N] (F(t) of the solve's time)
        self._now = None

    def bind(self, system):
        super().bind(system)
        self.at = system.marker(self.at_ref)

    def apply(self, t, view, f, inputs):
        s = view[self.at[0]]
        _, _, jphi, _ = s.point(self.at[1])
        self._add_point_force(f, s, jphi, np.asarray(self.force(t), float))

    def state_independent(self) -> bool:
        """On a point linear in q (the ground's, a bar's, a natural-coordinate body's, a
        beam node's) the generalised force J^T F(t) has a constant J."""
        form = point_terms(self.at)
        return form is not None and form[0] == "linear"

    def compiled_element(self):
        """A force F on a planar rigid body's point r: its work s = F . r [J] under the
        constant law T = -1 (f = J^T F; -df/dphi = F . A c), F the constant value or,
        for a function of time, F(t) written before each solve (:meth:`load_solve`)."""
        form = point_terms(self.at)
        if form is None or form[0] != "rigid":
            return None
        if self._now is None:
            self._now = np.array(self.force(0.0), dtype=float)
        dim = self._now.size
        origin = ("linear", [], np.zeros((dim, 0)), np.zeros(dim))
        return measure_element([], 0.0, constant_law(-1.0), (origin, form),
                               normal=self._now)

    def load_solve(self, t, inputs) -> None:
        if self._now is not None and self.value is None:
            self._now[:] = self.force(t)

    def compiled_per_solve(self) -> bool:
        return self.value is None


class TranslationalSpringDamper(Force):
    """Linear spring-damper between two markers:
    tension = k (L - L0) + c L' along the line joining them [N].

    Parameters: stiffness k [N/m] >= 0, damping c [N s/m] >= 0, rest length L0 [m]
    (default: the initial distance).  The line must not shrink to zero length.
    """

    kind = "spring"

    def __init__(self, a, b, stiffness: float, damping: float = 0.0,
                 rest_length: float | None = None, name=None):
        super().__init__(name)
        self.a_ref, self.b_ref = a, b
        self.k = _check(self.name, "stiffness", stiffness, unit="N/m")
        self.c = _check(self.name, "damping", damping, unit="N.s/m")
        self.l0 = None if rest_length is None else _check(self.name, "rest_length", rest_length,
                                                          unit="m")

    def bind(self, system):
        super().bind(system)
        self.a = system.marker(self.a_ref)
        self.b = system.marker(self.b_ref)
        if self.l0 is None:
            ra = self.a[0].position + rot(self.a[0].angle) @ self.a[1]
            rb = self.b[0].position + rot(self.b[0].angle) @ self.b[1]
            self.l0 = float(np.linalg.norm(rb - ra))

    def _geometry(self, view):
        sa = view[self.a[0]]
        sb = view[self.b[0]]
        ra, rad, ja, _ = sa.point(self.a[1])
        rb, rbd, jb, _ = sb.point(self.b[1])
        d = rb - ra
        length = float(np.linalg.norm(d))
        if length == 0.0:
            raise FloatingPointError(f"{self.name}: the spring has zero length")
        e = d / length
        return sa, sb, ja, jb, e, length, float(e @ (rbd - rad))

    def apply(self, t, view, f, inputs):
        sa, sb, ja, jb, e, length, rate = self._geometry(view)
        tension = self.k * (length - self.l0) + self.c * rate
        self._add_point_force(f, sa, ja, tension * e)
        self._add_point_force(f, sb, jb, -tension * e)

    def potential(self, t, view):
        _, _, _, _, _, length, _ = self._geometry(view)
        return 0.5 * self.k * (length - self.l0) ** 2

    def compiled_element(self):
        """s = L - L0 under the linear law, where both points have a closed form."""
        return line_element(self.a, self.b, -self.l0, spring_law(self.k, self.c))


class RotationalSpringDamper(Force):
    """Torsion spring-damper between two bodies on the relative angle
    theta = phi_b - phi_a: torque on b = -k (theta - theta0) - c theta' [N m].

    Parameters: stiffness k [N m/rad] >= 0, damping c [N m s/rad] >= 0, rest angle
    theta0 [rad] (default: the initial relative angle).
    """

    kind = "torsion_spring"

    def __init__(self, a: str, b: str, stiffness: float, damping: float = 0.0,
                 rest_angle: float | None = None, name=None):
        super().__init__(name)
        self.a_name, self.b_name = a, b
        self.k = _check(self.name, "stiffness", stiffness, unit="N.m/rad")
        self.c = _check(self.name, "damping", damping, unit="N.m.s/rad")
        self.theta0 = rest_angle

    def bind(self, system):

        super().bind(system)
        self.a, self.b = system.frame(self.a_name), system.frame(self.b_name)
        if self.theta0 is None:
            self.theta0 = initial_angle(self.b) - initial_angle(self.a)
        self._rigid = all(fr[0].n_coords in (0, 3) and fr[1] is None for fr in (self.a, self.b))

    def _angle(self, view):
        ta, wa, _, _ = view[self.a[0]].angle(self.a[1])
        tb, wb, _, _ = view[self.b[0]].angle(self.b[1])
        return tb - ta, wb - wa

    def apply(self, t, view, f, inputs):
        theta, rate = self._angle(view)
        torque = -self.k * (theta - self.theta0) - self.c * rate
        self._add_torque(f, view, self.b, torque)
        self._add_torque(f, view, self.a, -torque)

    def potential(self, t, view):
        theta, _ = self._angle(view)
        return 0.5 * self.k * (theta - self.theta0) ** 2

    def compiled_element(self):
        """s = theta - theta0 under the linear law, on orientations linear in q."""
        return angle_element([(self.b, 1.0), (self.a, -1.0)], -self.theta0,
                             spring_law(self.k, self.c))

    def jacobians(self, t, q, v, inputs):
        if not self._rigid:
            return None  # orientation of a flexible body: finite differences
        n = len(q)
        kq, kv = np.zeros((n, n)), np.zeros((n, n))
        for (bi, _), si in ((self.b, 1.0), (self.a, -1.0)):
            if bi.index is None:
                continue
            for (bj, _), sj in ((self.b, 1.0), (self.a, -1.0)):
                if bj.index is None:
                    continue
                kq[bi.index + 2, bj.index + 2] -= si * sj * self.k
                kv[bi.index + 2, bj.index + 2] -= si * sj * self.c
        return kq, kv


class JointTorque(Force):
    """Applied torque between two bodies from the input ``input`` [N m]: +tau on b,
    -tau on a (a motor whose stator is on a)."""

    kind = "torque"
    input_unit = "N.m"

    def __init__(self, a: str, b: str, input: str, name=None):
        super().__init__(name)
        self.a_name, self.b_name = a, b
        self.input_names = (input,)
        self._law = None

    def bind(self, system):
        super().bind(system)
        self.a, self.b = system.frame(self.a_name), system.frame(self.b_name)

    def _torque(self, inputs) -> float:
        return inputs[self.input_names[0]]

    def apply(self, t, view, f, inputs):
        tau = self._torque(inputs)
        self._add_torque(f, view, self.b, tau)
        self._add_torque(f, view, self.a, -tau)

    def compiled_element(self):
        """On a beam's slope (where the torque's generalised force depends on q): the
        relative angle s = theta_b - theta_a under the constant law T = -tau, tau written
        before each solve (:meth:`load_solve`; one array shared by every compiled form
        made of this element)."""
        if self._law is None:
            self._law = constant_law(-self._torque(self.system.inputs))
        return angle_element([(self.b, 1.0), (self.a, -1.0)], 0.0, self._law)

    def load_solve(self, t, inputs) -> None:
        if self._law is not None:
            self._law[1][0] = -float(self._torque(inputs))

    def compiled_per_solve(self) -> bool:
        return bool(self.input_names)

    def jacobians(self, t, q, v, inputs):
        if any(fr[1] is not None for fr in (self.a, self.b)):
            return None
        n = len(q)
        return np.zeros((n, n)), np.zeros((n, n))

    def state_independent(self) -> bool:
        """On orientations linear in q (rigid bodies, the ground) a torque's generalised
        force is constant coefficients times tau."""
        return all((form := fr[0].angle_form(fr[1])) is not None and form[0] == "linear"
                   for fr in (self.a, self.b))


class ConstantTorque(JointTorque):
    """A constant torque [N m] between two bodies (no input)."""

    kind = "constant_torque"

    def __init__(self, a: str, b: str, torque: float, name=None):
        Force.__init__(self, name)
        self.a_name, self.b_name = a, b
        self.torque = float(torque)
        self.input_names = ()
        self._law = None

    def _torque(self, inputs) -> float:
        return self.torque


class JointForce(Force):
    """Applied force from the input ``input`` [N] along ``direction`` (fixed in body a)
    acting on marker b, with the reaction on marker a (a linear actuator)."""

    kind = "linear_actuator"

    def __init__(self, a, b, input: str, direction=(1.0, 0.0), name=None):
        super().__init__(name)
        self.a_ref, self.b_ref = a, b
        self.input_names = (input,)
        u = np.asarray(direction, float)
        self.direction = u.copy()
        self.u = u / np.linalg.norm(u)
        self._law = None

    def bind(self, system):
        super().bind(system)
        self.a = system.marker(self.a_ref)
        self.b = system.marker(self.b_ref)

    def apply(self, t, view, f, inputs):
        sa = view[self.a[0]]
        sb = view[self.b[0]]
        _, _, ja, _ = sa.point(self.a[1])
        _, _, jb, _ = sb.point(self.b[1])
        force = inputs[self.input_names[0]] * sa.vector(self.a[1], self.u)[0]
        self._add_point_force(f, sb, jb, force)
        self._add_point_force(f, sa, ja, -force)

    def compiled_element(self):
        """The force along u (fixed in a's body: a rigid body or the ground) at b and its
        reaction at a, u's turn doing no work, under the constant law T = -input, which
        :meth:`load_solve` writes before each solve (one array, shared by every compiled
        form made of this element)."""
        if self._law is None:
            self._law = constant_law(0.0)
        return line_element(self.a, self.b, 0.0, self._law, normal=self.u, along=True)

    def load_solve(self, t, inputs) -> None:
        if self._law is not None:
            self._law[1][0] = -float(inputs[self.input_names[0]])

    def compiled_per_solve(self) -> bool:
        return True


class Contact(Force):
    """Penalty contact (docs/benchmarks.md §6): F = K delta^n + C delta^n delta'
    (Hunt-Crossley damping), never pulling (clipped at 0), along the contact normal.

    Geometry: a circle (centre marker ``a``, radius ``radius_a`` [m]) against either a
    circle (centre marker ``b``, ``radius_b``) or, with ``line_direction``, the line
    through marker ``b`` with that direction in b's frame (the free side is the one
    the normal E*direction points to).  delta [m] is the penetration.

    Parameters: stiffness K [N/m^n] > 0, exponent n >= 1, damping C [N s/m^(n+1)] >= 0.
    """

    #: a penalty stiffness: a model with it is stiff (its block defaults to an implicit method,
    #: mbdcore.multibody.system_block.stiff_parts)
    stiff = True

    kind = "contact"

    def __init__(self, a, b, radius_a: float, stiffness: float, exponent: float = 1.5,
                 damping: float = 0.0, radius_b: float | None = None, line_direction=None,
                 name=None):
        super().__init__(name)
        self.a_ref, self.b_ref = a, b
        self.ra = _check(self.name, "radius_a", radius_a, strict=True, unit="m")
        self.k = _check(self.name, "stiffness", stiffness, strict=True)
        self.n_exp = _check(self.name, "exponent", exponent, minimum=1.0)
        self.c = _check(self.name, "damping", damping)
        if (radius_b is None) == (line_direction is None):
            raise ParameterError(f"{self.name}: give either radius_b (circle-circle) or "
                                 "line_direction (circle-line)")
        self.rb = None if radius_b is None else _check(self.name, "radius_b", radius_b,
                                                        strict=True, unit="m")
        self.line_direction = None
        if line_direction is not None:
            u = np.asarray(line_direction, float)
            self.line_direction = u.copy()
            self.normal_local = E @ (u / np.linalg.norm(u))
        self.last_force = 0.0

    def bind(self, system):
        super().bind(system)
        self.a = system.marker(self.a_ref)
        self.b = system.marker(self.b_ref)
        if self.rb is None and self.b[0].n_coords not in (0, 3):
            raise ParameterError(f"{self.name}: the line of a circle-line contact must be on "
                                 f"a rigid body (or the ground), not on {self.b[0].name!r}")

    def _geometry(self, view):
        """(penetration [m], its rate [m/s], normal on a (pointing from b to a),
        states and point jacobians)."""
        sa = view[self.a[0]]
        sb = view[self.b[0]]
        ca, cad, ja, _ = sa.point(self.a[1])
        cb, cbd, jb, _ = sb.point(self.b[1])
        if self.rb is not None:
            d = ca - cb
            dist = float(np.linalg.norm(d))
            nrm = d / dist if dist > 0 else np.array([1.0, 0.0])
            delta = self.ra + self.rb - dist
            rate = -float(nrm @ (cad - cbd))
            # the force acts at the centres (circles): torque-free about them
            jb_contact = jb
        else:
            nrm, _, _, _ = sb.vector(self.b[1], self.normal_local)
            dist = float(nrm @ (ca - cb))
            delta = self.ra - dist
            # the contact point on b's line moves with b: velocity of the material point
            # of b under the circle's centre
            contact_local = np.linalg.solve(sb.A, (ca - self.ra * nrm) - sb.p)
            _, pbd, jb_contact, _ = sb.point(contact_local)
            rate = -float(nrm @ (cad - pbd))
        return delta, rate, nrm, sa, sb, ja, jb_contact

    def force_magnitude(self, delta, rate) -> float:
        if delta <= 0.0:
            return 0.0
        dn = delta**self.n_exp
        return max(self.k * dn + self.c * dn * rate, 0.0)

    def apply(self, t, view, f, inputs):
        delta, rate, nrm, sa, sb, ja, jb = self._geometry(view)
        mag = self.force_magnitude(delta, rate)
        self.last_force = mag
        if mag == 0.0:
            return
        self._add_point_force(f, sa, ja, mag * nrm)
        self._add_point_force(f, sb, jb, -mag * nrm)

    def compiled_element(self):
        """The contact law on s = -delta: circle against circle, the distance of the
        centres less the radii (the centres from b to a, so that the force pushes a
        away); circle against line, the centre's height over the line, n . (c_a - r_b),
        less the radius, n the line's normal turning with b (a rigid body or the
        ground).  Its gradient is the Python element's force: the reaction at b's
        material point under the centre and the turn of n give b's angle the same
        moment, (E n) . (c_a - x_b)."""
        law = contact_law(self.k, self.c, self.n_exp)
        if self.rb is None:
            return line_element(self.b, self.a, -self.ra, law, normal=self.normal_local)
        return line_element(self.b, self.a, -(self.ra + self.rb), law)

    def potential(self, t, view):
        delta = self._geometry(view)[0]
        return self.k * delta ** (self.n_exp + 1) / (self.n_exp + 1) if delta > 0 else 0.0

    def penetration(self, q) -> float:
        """Penetration delta [m] (negative: gap) at coordinates q."""
        return self._geometry(StateView(q, np.zeros_like(q)))[0]

