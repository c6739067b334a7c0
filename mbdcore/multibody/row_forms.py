"""How a joint's rows are grouped by form for the batched plan
(:mod:`mbdcore.multibody.assembly`): the slots of the kinematic quantities of one closed
form, a joint's and a body's closed forms, and the probe that finds the quadratic form
of a joint's rows (or of a hinge's cosine and sine) by evaluating its own code."""
from __future__ import annotations

import numpy as np

__all__ = ["Slots", "QuadraticProbe", "CosineSine", "probe_vector", "joint_forms",
           "closed_form", "global_columns", "point_slot", "angle_slot"]


class Slots:
    """Kinematic quantities of one form, in the order they were registered."""

    def __init__(self):
        self.keys: dict = {}
        self.specs: list = []

    def add(self, key, spec) -> int:
        k = self.keys.get(key)
        if k is None:
            k = self.keys[key] = len(self.specs)
            self.specs.append(spec)
        return k


class QuadraticProbe:
    """Finds the quadratic form of a joint's rows (module docstring) by evaluating it.

    Rows made of dot products of quantities linear in q (points, directions and slopes
    of natural-coordinate bodies, bars, ANCF elements) are ``g = q^T H q / 2 + b.q + c``
    with constant H, b, c: G = H q + b is affine, so its differences over a column are
    exact (up to rounding) for any step.  The form is taken at one configuration and
    kept only if it reproduces g, G and gamma at another and the rows have no explicit
    time dependence; otherwise the joint is evaluated by its own code."""

    def __init__(self, system):
        self.system = system
        n = system.n
        q0, _ = system.initial_state()
        self.q0 = q0 + 1e-2 * probe_vector(n, 1)
        self.q1 = q0 + 3e-2 * probe_vector(n, 2)
        self.v1 = probe_vector(n, 3)

    def _rows(self, joint, q, v):
        k, n = joint.n_eq, self.system.n
        g, G, gt, gam = np.zeros(k), np.zeros((k, n)), np.zeros(k), np.zeros(k)
        joint.evaluate(0.0, self.system.view(q, v), g, G, gt, gam)
        return g, G, gt, gam

    def quadratic_form(self, joint, row: int):
        """((rows, j, k, h), (rows, j, b), (rows, c)) of the joint starting at ``row``,
        or None if its rows are not quadratic in q."""
        q0, zero = self.q0, np.zeros_like(self.q0)
        g0, G0, gt0, _ = self._rows(joint, q0, zero)
        g1, G1, gt1, gam1 = self._rows(joint, self.q1, self.v1)
        cols = np.flatnonzero(np.any(G0 != 0.0, axis=0) | np.any(G1 != 0.0, axis=0))
        k = joint.n_eq
        H = np.zeros((k, cols.size, cols.size))
        qp = q0.copy()
        for a, c in enumerate(cols):
            qp[c] = q0[c] + 1.0
            H[:, :, a] = self._rows(joint, qp, zero)[1][:, cols] - G0[:, cols]
            qp[c] = q0[c]
        scale = max(1.0, float(np.abs(G0).max(initial=0.0)), float(np.abs(H).max(initial=0.0)))
        tol = 1e-9 * scale
        if np.abs(H - H.transpose(0, 2, 1)).max(initial=0.0) > tol:
            return None
        x0, x1, v1 = q0[cols], self.q1[cols], self.v1[cols]
        b = G0[:, cols] - H @ x0
        c = g0 - 0.5 * np.einsum("iab,a,b->i", H, x0, x0) - b @ x0
        model_g = 0.5 * np.einsum("iab,a,b->i", H, x1, x1) + b @ x1 + c
        model_G = H @ x1 + b
        model_gam = -np.einsum("iab,a,b->i", H, v1, v1)
        G1c = np.zeros_like(G1)
        G1c[:, cols] = model_G
        if (np.abs(model_g - g1).max() > tol or np.abs(G1c - G1).max() > tol
                or np.abs(model_gam - gam1).max() > tol * max(1.0, float(v1 @ v1))
                or np.any(gt0 != 0.0) or np.any(gt1 != 0.0)):
            return None
        i, a, bb = np.nonzero(H)
        ib, jb = np.nonzero(b)
        rows = row + np.arange(k)
        return ((row + i, cols[a], cols[bb], H[i, a, bb]),
                (row + ib, cols[jb], b[ib, jb]),
                (rows, c))


class CosineSine:
    """The (cos, sin) pair of a hinge's angle as two rows, for the probe: a hinge's
    ``cosine_sine(view)`` gives two scalars with ``fill`` (value, G row, gamma)."""

    n_eq = 2

    def __init__(self, hinge):
        self.hinge = hinge

    def evaluate(self, t, view, g, G, gt, gam):
        c, s = self.hinge.cosine_sine(view)
        c.fill(g[0:1], G[0:1], gam[0:1])
        s.fill(g[1:2], G[1:2], gam[1:2])


def probe_vector(n: int, seed: int) -> np.ndarray:
    """A fixed, irregular direction (deterministic plans)."""
    return np.sin(np.arange(1, n + 1) * (0.7 + 0.37 * seed) + seed)


def joint_forms(joint):
    forms = getattr(joint, "row_forms", None)
    return None if forms is None else forms()


def closed_form(forms) -> bool:
    """Whether every point and orientation the rows read has a closed form."""
    for form in forms:
        if form[0] == "points":
            frames, what = form[1:3], "point_form"
        elif form[0] == "angle_sine":
            frames, what = form[1:3], "angle_form"
        else:
            frames, what = [fr for fr, _ in form[1]], "angle_form"
        for body, loc in frames:
            if getattr(body, what)(loc) is None:
                return False
    return True


def global_columns(body, cols):
    return [body.index + int(c) for c in cols]


def point_slot(frame, rigid: Slots, linear: Slots) -> int:
    """Slot of the point (body, location); its form from ``body.point_form``."""
    body, loc = frame
    kind, *spec = body.point_form(loc)
    key = (body.name, kind, repr(loc))
    if kind == "rigid":
        cols = global_columns(body, (0, 1, 2))
        k = rigid.add(key, (cols, np.asarray(spec[0], float)))
        return ("rigid", k)
    cols, N, c = spec
    k = linear.add(key, (global_columns(body, cols) if body.index is not None else [],
                         np.asarray(N, float), np.asarray(c, float)))
    return ("linear", k)


def angle_slot(frame, linear: Slots, slope: Slots):
    body, loc = frame
    kind, *spec = body.angle_form(loc)
    key = (body.name, kind, repr(loc))
    if kind == "linear":
        cols, coef, c = spec
        k = linear.add(key, (global_columns(body, cols) if body.index is not None else [],
                             np.asarray(coef, float), float(c)))
        return ("linear", k)
    (cx, cy), S1, theta0, t0 = spec
    k = slope.add(key, ((global_columns(body, cx), global_columns(body, cy)), np.asarray(S1, float),
                        float(theta0), np.asarray(t0, float)))
    return ("slope", k)
