"""Constraint rows assembled in batches by kind, not one Python call per joint.

A joint's rows are built from two kinds of kinematic quantities of the bodies it
connects: points r(q) and orientations theta(q).  Most of them have one of a few
closed forms, whatever joint asks for them:

* a point of a rigid body, ``r = p + A(phi) s`` over the pose (x, y, phi);
* a point **linear** in the coordinates, ``r = N q[cols] + c``: a point of an ANCF beam
  at a fixed arc length (N the Hermite shape functions), a point of the ground (no
  columns);
* an orientation linear in the coordinates, ``theta = k . q[cols] + c``: a rigid body's
  angle, the ground's;
* the **slope angle** of an ANCF beam, ``theta = theta0 + atan2(t0 x a, t0 . a)`` with the
  slope ``a = S' q[cols]`` linear in q.

and the rows of the joints of this module's three forms:

* ``"points"``: ``g = r_a - r_b`` (two rows; revolute joints, the pin of a weld);
* ``"angle_sine"``: ``g = sin(theta_b - theta_a - angle)`` (the moment row of a weld);
* ``"angle_sum"``: ``g = sum_k c_k theta_k - f(t)`` (gears, angle drivers).

A body says which closed form its points and orientations take
(``BodyBase.point_form`` / ``angle_form``, None when none does), a joint which row
forms it is made of (``Constraint.row_forms``, None when it is not).
:class:`ConstraintPlan` groups every quantity of every joint by its form once per
topology, evaluates each group with a few array operations per Newton iteration, and
scatters the Jacobian entries through index arrays computed once.  Joints or bodies
without a closed form are evaluated one by one as before (``Constraint.evaluate``),
which stays the reference the batched rows are tested against (to 1e-12).
"""
from __future__ import annotations

import ctypes
import dataclasses
import math
from pathlib import Path

import numpy as np
import scipy.sparse

from mbdcore.native import kernel_library

__all__ = ["ConstraintPlan", "PLAN_C_SOURCE", "plan_function"]


class _Slots:
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


class ConstraintPlan:
    """The batched evaluation of a System's joints (see the module docstring).

    Built by :meth:`build` from the system's joints, bodies and their coordinate
    offsets; :meth:`evaluate` returns ``(g, G, g_t, gamma)`` as
    ``System.constraint_terms`` does, G dense (``sparse=False``) or CSR.
    """

    def __init__(self, system):
        self.system = system
        # every row, dependent ones included (the system drops those it removes)
        self.n, self.m = system.n, sum(j.n_eq for j in system.joints)
        # points: rigid (x, y, phi columns; local s) and linear (cols, N 2xK, c)
        rigid_pts, linear_pts = _Slots(), _Slots()
        lin_angles, slope_angles = _Slots(), _Slots()
        point_rows, sine_rows, sum_rows, sum_terms = [], [], [], []
        self.fallback = []            # (joint, first row) evaluated one by one
        quadratic = []                # (rows, H entries, b entries, c) of quadratic joints
        probe = _Probe(system) if any(getattr(j, "quadratic", False)
                                      or hasattr(j, "angle_rows") for j in system.joints) \
            else None
        # rows of hinge angles: the hinges' (cos, sin) pairs as quadratic scalars
        self._pairs: dict = {}        # id(hinge) -> pair index
        self._pair_forms: list = []   # quadratic forms of the pairs' scalars
        self._pair_sign: list = []    # the hinge's sign (its angle is sign atan2(s, c))
        self.angle_specs: list = []  # (row, kind, ...) of the batched angle rows
        row = 0
        for joint in system.joints:
            forms = _joint_forms(joint)
            if forms is None or not _closed_form(forms):
                form = probe.quadratic_form(joint, row) if getattr(joint, "quadratic", False) \
                    else None
                if form is not None:
                    quadratic.append(form)
                elif not self._angle_row(joint, row, probe):
                    self.fallback.append((joint, row))
                row += joint.n_eq
                continue
            for form in forms:
                if form[0] == "points":
                    _, fa, fb = form
                    a = _point_slot(fa, rigid_pts, linear_pts)
                    b = _point_slot(fb, rigid_pts, linear_pts)
                    point_rows.append((row, a, b))
                    row += 2
                elif form[0] == "angle_sine":
                    _, fa, fb, angle = form
                    a = _angle_slot(fa, lin_angles, slope_angles)
                    b = _angle_slot(fb, lin_angles, slope_angles)
                    sine_rows.append((row, a, b, float(angle)))
                    row += 1
                else:
                    _, terms, offset = form
                    sum_rows.append((row, offset))
                    for frame, coef in terms:
                        sum_terms.append((row, _angle_slot(frame, lin_angles, slope_angles),
                                          float(coef)))
                    row += 1
        if row != self.m:
            raise AssertionError(f"constraint plan fills {row} rows of {self.m}")
        self._setup_points(rigid_pts, linear_pts)
        self._setup_angles(lin_angles, slope_angles)

        def pt(slot):           # rigid points first, then the linear ones
            return slot[1] if slot[0] == "rigid" else self.n_rigid + slot[1]

        def an(slot):           # linear orientations first, then the slope angles
            return slot[1] if slot[0] == "linear" else self.n_lin + slot[1]
        self._setup_rows([(r, pt(a), pt(b)) for r, a, b in point_rows],
                         [(r, an(a), an(b), x) for r, a, b, x in sine_rows],
                         sum_rows, [(r, an(s), c) for r, s, c in sum_terms])
        self._setup_quadratic(quadratic)
        self._setup_angles_rows()
        self._setup_kernel()
        self.fallback_rows = np.concatenate(
            [np.arange(r, r + j.n_eq) for j, r in self.fallback]) if self.fallback else \
            np.zeros(0, dtype=int)

    @property
    def batched(self) -> int:
        """Number of constraint rows evaluated in batches."""
        return self.m - self.fallback_rows.size

    # -- setup: index arrays of every group ---------------------------------------------
    def _setup_points(self, rigid, linear):
        self.n_rigid = len(rigid.specs)
        self.n_pts = self.n_rigid + len(linear.specs)
        if self.n_rigid:
            cols = np.array([c for c, _ in rigid.specs], dtype=int)       # (R, 3)
            self.r_cols = cols
            self.r_local = np.array([s for _, s in rigid.specs], dtype=float)
        else:
            self.r_cols = np.zeros((0, 3), dtype=int)
            self.r_local = np.zeros((0, 2))
        width = max((len(c) for c, _, _ in linear.specs), default=0)
        L = len(linear.specs)
        self.l_cols = np.zeros((L, width), dtype=int)
        self.l_N = np.zeros((L, 2, width))
        self.l_c = np.zeros((L, 2))
        for k, (c, N, const) in enumerate(linear.specs):
            self.l_cols[k, :len(c)] = c
            self.l_N[k, :, :len(c)] = N
            self.l_c[k] = const
        # Jacobian entries of every point, dimension by dimension: (slot, dim, col, value
        # source).  Rigid: d/dx, d/dy constant 1, d/dphi = E A s (per evaluation);
        # linear: N (constant).
        ent_slot, ent_dim, ent_col, ent_const = [], [], [], []
        for k in range(self.n_rigid):
            cx, cy, cp = self.r_cols[k]
            ent_slot += [k, k, k, k]
            ent_dim += [0, 1, 0, 1]
            ent_col += [cx, cy, cp, cp]
            ent_const += [1.0, 1.0, np.nan, np.nan]     # nan: filled per evaluation
        for k, (c, N, _) in enumerate(linear.specs):
            for d in range(2):
                for j, col in enumerate(c):
                    if N[d, j] != 0.0:
                        ent_slot.append(self.n_rigid + k)
                        ent_dim.append(d)
                        ent_col.append(col)
                        ent_const.append(N[d, j])
        self.pt_slot = np.array(ent_slot, dtype=int)
        self.pt_dim = np.array(ent_dim, dtype=int)
        self.pt_col = np.array(ent_col, dtype=int)
        self.pt_val = np.array(ent_const, dtype=float)
        self.pt_phi_x = np.arange(self.n_rigid) * 4 + 2      # d x / d phi entries
        self.pt_phi_y = np.arange(self.n_rigid) * 4 + 3

    def _setup_angles(self, linear, slope):
        self.n_lin = len(linear.specs)
        self.n_ang = self.n_lin + len(slope.specs)
        self.a_lin_cols = [np.asarray(c, dtype=int) for c, _, _ in linear.specs]
        width = max((len(c) for c, _, _ in linear.specs), default=0)
        self.a_lin_idx = np.zeros((self.n_lin, width), dtype=int)
        self.a_lin_k = np.zeros((self.n_lin, width))
        self.a_lin_c = np.zeros(self.n_lin)
        ent_slot, ent_col, ent_const = [], [], []
        for k, (c, coef, const) in enumerate(linear.specs):
            self.a_lin_idx[k, :len(c)] = c
            self.a_lin_k[k, :len(c)] = coef
            self.a_lin_c[k] = const
            for col, val in zip(c, coef):
                ent_slot.append(k)
                ent_col.append(col)
                ent_const.append(val)
        S = len(slope.specs)
        width = max((len(c[0]) for c, _, _, _ in slope.specs), default=0)
        self.s_cols = np.zeros((S, width), dtype=int)
        self.s_S1 = np.zeros((S, width))            # a_x = S1 . q[cols_x] (and y alike)
        self.s_colsy = np.zeros((S, width), dtype=int)
        self.s_theta0 = np.zeros(S)
        self.s_t0 = np.zeros((S, 2))
        self.s_first = len(ent_col)
        for k, (cx_cy, S1, theta0, t0) in enumerate(slope.specs):
            cx, cy = cx_cy
            self.s_cols[k, :len(cx)] = cx
            self.s_colsy[k, :len(cy)] = cy
            self.s_S1[k, :len(S1)] = S1
            self.s_theta0[k] = theta0
            self.s_t0[k] = t0
            for col in (*cx, *cy):
                ent_slot.append(self.n_lin + k)
                ent_col.append(col)
                ent_const.append(np.nan)
        self.s_width = width
        self.an_slot = np.array(ent_slot, dtype=int)
        self.an_col = np.array(ent_col, dtype=int)
        self.an_val = np.array(ent_const, dtype=float)

    def _setup_rows(self, point_rows, sine_rows, sum_rows, sum_terms):
        # g rows
        self.p_row = np.array([r for r, _, _ in point_rows], dtype=int)
        self.p_a = np.array([a for _, a, _ in point_rows], dtype=int)
        self.p_b = np.array([b for _, _, b in point_rows], dtype=int)
        self.s_row = np.array([r for r, _, _, _ in sine_rows], dtype=int)
        self.s_a = np.array([a for _, a, _, _ in sine_rows], dtype=int)
        self.s_b = np.array([b for _, _, b, _ in sine_rows], dtype=int)
        self.s_angle = np.array([x for _, _, _, x in sine_rows], dtype=float)
        self.sum_rows = sum_rows
        self.sum_row_idx = np.array([r for r, _ in sum_rows], dtype=int)
        self.t_row = np.array([r for r, _, _ in sum_terms], dtype=int)
        self.t_slot = np.array([s for _, s, _ in sum_terms], dtype=int)
        self.t_coef = np.array([c for _, _, c in sum_terms], dtype=float)
        # G entries: (row, col, source entry, multiplier, row factor index)
        rows, cols, src, mult, sine = [], [], [], [], []
        pt_by_slot_dim: dict = {}
        for e, (s, d) in enumerate(zip(self.pt_slot, self.pt_dim)):
            pt_by_slot_dim.setdefault((int(s), int(d)), []).append(e)
        for r, a, b in point_rows:
            for d in range(2):
                for slot, sign in ((a, 1.0), (b, -1.0)):
                    for e in pt_by_slot_dim.get((slot, d), ()):
                        rows.append(r + d)
                        cols.append(self.pt_col[e])
                        src.append(e)
                        mult.append(sign)
                        sine.append(-1)
        n_pt_ent = self.pt_col.size
        an_by_slot: dict = {}
        for e, s in enumerate(self.an_slot):
            an_by_slot.setdefault(int(s), []).append(e)
        for i, (r, a, b, _) in enumerate(sine_rows):
            for slot, sign in ((a, -1.0), (b, 1.0)):
                for e in an_by_slot.get(slot, ()):
                    rows.append(r)
                    cols.append(self.an_col[e])
                    src.append(n_pt_ent + e)
                    mult.append(sign)
                    sine.append(i)
        for r, slot, coef in sum_terms:
            for e in an_by_slot.get(slot, ()):
                rows.append(r)
                cols.append(self.an_col[e])
                src.append(n_pt_ent + e)
                mult.append(coef)
                sine.append(-1)
        self.G_row = np.array(rows, dtype=int)
        self.G_col = np.array(cols, dtype=int)
        self.G_src = np.array(src, dtype=int)
        self.G_mult = np.array(mult, dtype=float)
        sine = np.array(sine, dtype=int)
        self.G_sine = np.flatnonzero(sine >= 0)
        self.G_sine_row = sine[self.G_sine]

    def _setup_quadratic(self, forms):
        """Entries of the rows quadratic in q (module docstring): H entries
        ``(row, j, k, h)``: G[row, j] += h q_k, g[row] += h q_j q_k / 2,
        gamma[row] -= h v_j v_k; b entries ``(row, j, b)``: G[row, j] += b, g[row] += b q_j;
        constants c by row."""
        cat = (lambda parts, k, dtype: np.concatenate([p[k] for p in parts]).astype(dtype)
               if parts else np.zeros(0, dtype=dtype))
        hs = [f[0] for f in forms]
        bs = [f[1] for f in forms]
        self.qr, self.qj, self.qk = (cat(hs, i, np.int64) for i in range(3))
        self.qh = cat(hs, 3, float)
        self.br, self.bj = cat(bs, 0, np.int64), cat(bs, 1, np.int64)
        self.bv = cat(bs, 2, float)
        self.q_const = np.zeros(self.m)
        for f in forms:
            self.q_const[f[2][0]] = f[2][1]
        self.quadratic_rows = np.unique(np.concatenate([f[2][0] for f in forms])) if forms \
            else np.zeros(0, dtype=int)

    def _angle_row(self, joint, row: int, probe) -> bool:
        """Register the row of a joint on hinge angles (``joint.angle_rows()``, a gear or
        an angle driver) if every hinge's (cos, sin) pair is quadratic in q."""
        spec = getattr(joint, "angle_rows", None)
        spec = None if spec is None else spec()
        if spec is None or joint.n_eq != 1:
            return False
        hinges = [h for h, _ in spec[1]] if spec[0] == "angle_sum" else [spec[1]]
        for hinge in hinges:
            if id(hinge) in self._pairs:
                continue
            form = probe.quadratic_form(_CosineSine(hinge), 2 * len(self._pair_forms))
            if form is None:
                return False
            self._pairs[id(hinge)] = len(self._pair_forms)
            self._pair_forms.append(form)
            self._pair_sign.append(float(hinge.sign))
        if spec[0] == "angle_sum":
            self.angle_specs.append((row, "sum", [(self._pairs[id(h)], float(c))
                                                   for h, c in spec[1]], float(spec[2])))
        else:
            self.angle_specs.append((row, "driven", self._pairs[id(spec[1])], spec[2]))
        return True

    def _setup_angles_rows(self):
        """Index arrays of the hinge-angle rows: the pairs' scalars (scalar 2p the
        cosine, 2p + 1 the sine of pair p) as quadratic forms, and the links (row,
        scalar) through which a row's Jacobian takes a scalar's gradient."""
        forms = self._pair_forms
        cat = (lambda parts, k, dtype: np.concatenate([p[k] for p in parts]).astype(dtype)
               if parts else np.zeros(0, dtype=dtype))
        hs, bs = [f[0] for f in forms], [f[1] for f in forms]
        self.p_count = 2 * len(forms)
        self.sr, self.sj, self.sk = (cat(hs, i, np.int64) for i in range(3))
        self.sh = cat(hs, 3, float)
        self.sbr, self.sbj = cat(bs, 0, np.int64), cat(bs, 1, np.int64)
        self.sbv = cat(bs, 2, float)
        self.s_const = np.zeros(self.p_count)
        for f in forms:
            self.s_const[f[2][0]] = f[2][1]
        self.pair_sign = np.array(self._pair_sign)
        # gradient entries of the scalars: (scalar, column)
        self.e_scalar = np.concatenate([self.sr, self.sbr])
        self.e_col = np.concatenate([self.sj, self.sbj])
        by_scalar: dict = {}
        for e, sc in enumerate(self.e_scalar):
            by_scalar.setdefault(int(sc), []).append(e)
        links_row, links_scalar = [], []
        for spec in self.angle_specs:
            pairs = [p for p, _ in spec[2]] if spec[1] == "sum" else [spec[2]]
            for p in pairs:
                for sc in (2 * p, 2 * p + 1):
                    links_row.append(spec[0])
                    links_scalar.append(sc)
        self.link_row = np.array(links_row, dtype=np.int64)
        self.link_scalar = np.array(links_scalar, dtype=np.int64)
        ge_link, ge_entry = [], []
        for k, sc in enumerate(links_scalar):
            for e in by_scalar.get(sc, ()):
                ge_link.append(k)
                ge_entry.append(e)
        self.ge_link = np.array(ge_link, dtype=np.int64)
        self.ge_entry = np.array(ge_entry, dtype=np.int64)
        self.ge_row = self.link_row[self.ge_link] if self.ge_link.size else \
            np.zeros(0, dtype=np.int64)
        self.ge_col = self.e_col[self.ge_entry] if self.ge_entry.size else \
            np.zeros(0, dtype=np.int64)
        self.angle_rows_idx = np.array([spec[0] for spec in self.angle_specs], dtype=np.int64)

    def _hinge_angles(self, t, q, v):
        """(g, g_t, gamma over all rows, Jacobian entry values) of the hinge-angle rows.

        Pair p: c, s (quadratic scalars), their rates and quads; the hinge angle
        theta = sign atan2(s, c) with rate sign (c s' - s c')/rho^2 and quad
        sign [(c s'' - s c'')_quad / rho^2 - 2 rate_raw (c c' + s s') / rho^2] (as
        ``mbdcore.spatial.kinematics.relative_angle``).  Gear rows sum coefficients times
        angles; driver rows are s cos F - c sin F, F = sign f(t) (as the spatial
        ``AngleDriver``)."""
        m = self.m
        g, gt, gam = np.zeros(m), np.zeros(m), np.zeros(m)
        if not self.angle_specs:
            return g, gt, gam, np.zeros(0)
        S = self.p_count
        hq = self.sh * q[self.sk]
        val = (0.5 * np.bincount(self.sr, hq * q[self.sj], minlength=S)
               + np.bincount(self.sbr, self.sbv * q[self.sbj], minlength=S) + self.s_const)
        e_val = np.concatenate([hq, self.sbv])
        rate = np.bincount(self.e_scalar, e_val * v[self.e_col], minlength=S)
        quad = np.bincount(self.sr, self.sh * v[self.sj] * v[self.sk], minlength=S)
        c, s = val[0::2], val[1::2]
        cd, sd = rate[0::2], rate[1::2]
        cq, sq = quad[0::2], quad[1::2]
        rho2 = c * c + s * s
        raw = np.arctan2(s, c)
        raw_rate = (c * sd - s * cd) / rho2
        raw_quad = (c * sq - s * cq) / rho2 - 2.0 * raw_rate * (c * cd + s * sd) / rho2
        weight = np.empty(self.link_row.size)
        k = 0
        for spec in self.angle_specs:
            row = spec[0]
            if spec[1] == "sum":
                total, tq = -spec[3], 0.0
                for p, coef in spec[2]:
                    w = coef * self.pair_sign[p]
                    total += w * raw[p]
                    tq += w * raw_quad[p]
                    weight[k] = -w * s[p] / rho2[p]          # d theta / d c
                    weight[k + 1] = w * c[p] / rho2[p]       # d theta / d s
                    k += 2
                g[row] = total
                gam[row] = -tq
            else:
                p, motion = spec[2], spec[3]
                sign = self.pair_sign[p]
                f, fd, fdd = (sign * float(x) for x in motion(t))
                cf, sf = math.cos(f), math.sin(f)
                along = s[p] * sf + c[p] * cf
                across = s[p] * cf - c[p] * sf
                g[row] = across
                weight[k], weight[k + 1] = -sf, cf
                k += 2
                gt[row] = -fd * along
                gam[row] = -(sq[p] * cf - cq[p] * sf - 2.0 * fd * (sd[p] * sf + cd[p] * cf)
                             - fdd * along - fd * fd * across)
        return g, gt, gam, weight[self.ge_link] * e_val[self.ge_entry]

    # -- evaluation: one call of native/constraint_plan.c ----------------------------------
    def _setup_kernel(self):
        """The plan's arrays as the C struct (kept alive here) and the Jacobian's
        scatter maps: into a dense G's flat index, or a CSR matrix's data index."""
        m, n = self.m, self.n
        flat_c = self.G_row * n + self.G_col
        flat_q = np.concatenate([self.qr * n + self.qj, self.br * n + self.bj,
                                 self.ge_row * n + self.ge_col])
        flat = np.concatenate([flat_c, flat_q])
        uniq, inverse = np.unique(flat, return_inverse=True)
        inverse = inverse.ravel()
        self.csr_indices = (uniq % n).astype(np.int32) if n else uniq.astype(np.int32)
        rows = uniq // n if n else uniq
        self.csr_indptr = np.searchsorted(rows, np.arange(m + 1)).astype(np.int32)
        self.scatter = {False: _ints(flat_c), True: _ints(inverse[:flat_c.size])}
        n_quad = self.qr.size + self.br.size
        self.quadratic_scatter = {False: flat_q[:n_quad],
                                  True: inverse[flat_c.size:flat_c.size + n_quad]}
        self.angle_scatter = {False: flat_q[n_quad:], True: inverse[flat_c.size + n_quad:]}
        P, A = self.n_pts, self.n_ang
        self.work = np.zeros(4 * P + self.pt_val.size + 3 * A + self.an_val.size
                             + self.s_row.size + 1)
        keep = self._keep = {}

        def ints(name, a):
            keep[name] = _ints(a)
            return keep[name].ctypes.data

        def reals(name, a):
            keep[name] = np.ascontiguousarray(a, dtype=np.float64)
            return keep[name].ctypes.data

        st = _Plan()
        st.m = m
        st.n_rigid, st.n_linear, st.lin_width = self.n_rigid, self.l_cols.shape[0], \
            self.l_cols.shape[1]
        st.r_cols, st.r_local = ints("r_cols", self.r_cols), reals("r_local", self.r_local)
        st.l_cols, st.l_N, st.l_c = ints("l_cols", self.l_cols), reals("l_N", self.l_N), \
            reals("l_c", self.l_c)
        st.n_lin_ang, st.ang_width = self.n_lin, self.a_lin_idx.shape[1]
        st.a_idx, st.a_k, st.a_c = ints("a_idx", self.a_lin_idx), reals("a_k", self.a_lin_k), \
            reals("a_c", self.a_lin_c)
        st.n_slope, st.slope_width = self.n_ang - self.n_lin, self.s_width
        st.s_cols, st.s_colsy = ints("s_cols", self.s_cols), ints("s_colsy", self.s_colsy)
        st.s_S1, st.s_theta0, st.s_t0 = reals("s_S1", self.s_S1), \
            reals("s_theta0", self.s_theta0), reals("s_t0", self.s_t0)
        st.n_pt_ent, st.n_an_ent, st.s_first = self.pt_val.size, self.an_val.size, \
            self.s_first
        st.pt_val, st.an_val = reals("pt_val", np.nan_to_num(self.pt_val)), \
            reals("an_val", np.nan_to_num(self.an_val))
        st.n_point_rows = self.p_row.size
        st.p_row, st.p_a, st.p_b = (ints(k, x) for k, x in
                                    (("p_row", self.p_row), ("p_a", self.p_a),
                                     ("p_b", self.p_b)))
        st.n_sine_rows = self.s_row.size
        st.sn_row, st.sn_a, st.sn_b = (ints(k, x) for k, x in
                                       (("sn_row", self.s_row), ("sn_a", self.s_a),
                                        ("sn_b", self.s_b)))
        st.sn_angle = reals("sn_angle", self.s_angle)
        st.n_terms = self.t_row.size
        st.t_row, st.t_slot = ints("t_row", self.t_row), ints("t_slot", self.t_slot)
        st.t_coef = reals("t_coef", self.t_coef)
        sine_row = np.full(self.G_row.size, -1)
        sine_row[self.G_sine] = self.G_sine_row
        st.n_G = self.G_row.size
        st.G_src, st.G_sine_row = ints("G_src", self.G_src), ints("G_sine_row", sine_row)
        st.G_mult = reals("G_mult", self.G_mult)
        st.n_qh, st.n_qb = self.qr.size, self.br.size
        st.qh_row, st.qh_j, st.qh_k = (ints(k, x) for k, x in
                                       (("qh_row", self.qr), ("qh_j", self.qj),
                                        ("qh_k", self.qk)))
        st.qh_h = reals("qh_h", self.qh)
        st.qb_row, st.qb_j = ints("qb_row", self.br), ints("qb_j", self.bj)
        st.qb_b = reals("qb_b", self.bv)
        const_rows = np.flatnonzero(self.q_const)
        st.n_qc = const_rows.size
        st.qc_row, st.qc_c = ints("qc_row", const_rows), reals("qc_c", self.q_const[const_rows])
        self.quadratic_scatter = {k: _ints(a) for k, a in self.quadratic_scatter.items()}
        self.struct = st
        self._struct_ref = ctypes.addressof(st)
        self.scatter_addr = {k: a.ctypes.data for k, a in self.scatter.items()}
        self.quadratic_addr = {k: a.ctypes.data for k, a in self.quadratic_scatter.items()}
        self._work_addr = self.work.ctypes.data
        self._kernel = _plan_library().plan_evaluate
        # the columns the C-evaluated rows read (the quadratic rows' terms are exact)
        self.geometric_columns = [int(c) for c in np.unique(self.G_col)]
        self._setup_geometric()

    def _batched(self, q, v, sparse: bool):
        """(g, gamma, Jacobian values) of the batched rows: one C call; the values are
        a dense G's (m n,) or the CSR data of ``csr_indices``/``csr_indptr``."""
        q = np.ascontiguousarray(q, dtype=np.float64)
        v = np.ascontiguousarray(v, dtype=np.float64)
        g, gam = np.empty(self.m), np.empty(self.m)
        out = np.empty(self.csr_indices.size if sparse else self.m * self.n)
        self._call(q, v, g, gam, out, sparse)
        return g, gam, out

    def _call(self, q_addr, v_addr, g_addr, gam_addr, out, sparse):
        st = self.struct
        st.G_scatter = self.scatter_addr[bool(sparse)]
        st.Q_scatter = self.quadratic_addr[bool(sparse)]
        st.n_out = out.size
        self._kernel(self._struct_ref, q_addr, v_addr, g_addr, gam_addr, out, self._work_addr)

    def kernel_struct(self, sparse: bool):
        """A copy of the C table of ``plan_evaluate`` that writes G dense (m n values,
        row-major) or as the values of the CSR pattern ``csr_indices``/``csr_indptr``
        (``sparse``), for a C caller (the compiled system terms); the plan keeps the
        arrays it points into."""
        st = type(self.struct).from_buffer_copy(self.struct)
        st.G_scatter = self.scatter_addr[bool(sparse)]
        st.Q_scatter = self.quadratic_addr[bool(sparse)]
        st.n_out = self.csr_indices.size if sparse else self.m * self.n
        return st

    def _setup_geometric(self):
        """Index arrays of the derivatives of the C rows' Jacobian entries (analytic):
        a rigid point's d/dphi entries (-A s turned), an ANCF slope angle's entries
        (the Hessian of atan2 through the slope), and the cos d factor of the sine rows
        (-sin d times the row's angle Jacobian)."""
        self._geometric_table = None      # ctypes table of them (geometric_table)
        n_pt = self.pt_val.size
        src, sine = self.G_src, np.full(self.G_row.size, -1)
        sine[self.G_sine] = self.G_sine_row
        self.g_sine = sine
        # (1) rigid points: d ent[4k+2]/dphi = -ent[4k+3], d ent[4k+3]/dphi = ent[4k+2]
        k1, c1, o1, s1 = [], [], [], []
        for k, e in enumerate(src):
            if e < 4 * self.n_rigid and e % 4 >= 2:
                slot = e // 4
                k1.append(k)
                c1.append(self.r_cols[slot, 2])
                o1.append(4 * slot + (3 if e % 4 == 2 else 2))
                s1.append(-1.0 if e % 4 == 2 else 1.0)
        self.gr_k, self.gr_col = np.array(k1, dtype=np.int64), np.array(c1, dtype=np.int64)
        self.gr_other, self.gr_sign = np.array(o1, dtype=np.int64), np.array(s1)
        # (2) slope angles: entry (slot, part, j) = S1_j d_part; d/dq[c_i] of it
        k2, c2, coef, slot2, kind2 = [], [], [], [], []
        w = self.s_width
        first = n_pt + self.s_first
        for k, e in enumerate(src):
            if e >= first and w:
                local = e - first
                slot, j = divmod(local, 2 * w)
                part, jj = divmod(j, w)            # part 0: x (dx), 1: y (dy)
                for i in range(w):
                    for axis, cols in ((0, self.s_cols), (1, self.s_colsy)):
                        k2.append(k)
                        c2.append(cols[slot, i])
                        coef.append(self.s_S1[slot, jj] * self.s_S1[slot, i])
                        slot2.append(slot)
                        kind2.append(2 * part + axis)
        self.gs_k, self.gs_col = np.array(k2, dtype=np.int64), np.array(c2, dtype=np.int64)
        self.gs_coef, self.gs_slot = np.array(coef), np.array(slot2, dtype=np.int64)
        self.gs_kind = np.array(kind2, dtype=np.int64)
        # (3) sine rows: pairs (k, k') of entries of one row
        k3, kp3, i3 = [], [], []
        by_row: dict = {}
        for k, i in enumerate(sine):
            if i >= 0:
                by_row.setdefault(int(i), []).append(k)
        for i, ks in by_row.items():
            for k in ks:
                for kp in ks:
                    k3.append(k)
                    kp3.append(kp)
                    i3.append(i)
        self.gc_k, self.gc_kp = np.array(k3, dtype=np.int64), np.array(kp3, dtype=np.int64)
        self.gc_i = np.array(i3, dtype=np.int64)

    def geometric_positions(self):
        """Where each term ``plan_geometric`` adds goes, in its order (the derivatives
        of the C rows' Jacobian entries, then the quadratic rows' H entries): ``(K_rows,
        K_cols), (H_rows, H_cols)`` in d(G^T lam)/dq (n x n) and d(G v)/dq (m x n)."""
        ks = np.concatenate([self.gr_k, self.gs_k, self.gc_k]).astype(np.int64)
        cs = np.concatenate([self.gr_col, self.gs_col, self.G_col[self.gc_kp]]).astype(np.int64)
        return ((np.concatenate([self.G_col[ks], self.qj]), np.concatenate([cs, self.qk])),
                (np.concatenate([self.G_row[ks], self.qr]), np.concatenate([cs, self.qk])))

    def geometric_struct(self, K_at, H_at):
        """A copy of the table of ``plan_geometric`` that adds its terms at the value
        indices ``K_at``, ``H_at`` (int32 arrays in the order of
        :meth:`geometric_positions`, kept alive by the caller): a sparse pattern's."""
        st = type(self.geometric_table()).from_buffer_copy(self.geometric_table())
        st.K_at = K_at.ctypes.data if K_at.size else None
        st.H_at = H_at.ctypes.data if H_at.size else None
        return st

    def geometric_table(self):
        """The ctypes table of ``plan_geometric`` (native/constraint_plan.c: the
        derivatives of :meth:`_entry_derivatives` and the quadratic rows' exact terms,
        accumulated into dense matrices in C) and the arrays it points into, built
        once."""
        if self._geometric_table is None:
            keep = []

            def ints(a):
                a = np.ascontiguousarray(a, dtype=np.int32)
                keep.append(a)
                return a.ctypes.data if a.size else None

            def reals(a):
                a = np.ascontiguousarray(a, dtype=np.float64)
                keep.append(a)
                return a.ctypes.data if a.size else None
            P, A = self.n_pts, self.n_ang
            n_ent = self.pt_val.size + self.an_val.size
            base = self.work.ctypes.data
            st = _PlanGeometric()
            st.n, st.nG = self.n, self.G_row.size
            st.G_row, st.G_col, st.G_src = ints(self.G_row), ints(self.G_col), ints(self.G_src)
            st.g_sine, st.G_mult = ints(self.g_sine), reals(self.G_mult)
            st.ent = base + 8 * (4 * P)
            st.th = base + 8 * (4 * P + n_ent)
            st.cosd = base + 8 * (4 * P + n_ent + 3 * A)
            st.n_gr = self.gr_k.size
            st.gr_k, st.gr_col = ints(self.gr_k), ints(self.gr_col)
            st.gr_other, st.gr_sign = ints(self.gr_other), reals(self.gr_sign)
            st.n_slope, st.s_width = self.s_S1.shape[0], self.s_width
            st.s_cols, st.s_colsy, st.s_S1 = ints(self.s_cols), ints(self.s_colsy), \
                reals(self.s_S1)
            st.n_gs = self.gs_k.size
            st.gs_k, st.gs_col = ints(self.gs_k), ints(self.gs_col)
            st.gs_slot, st.gs_kind = ints(self.gs_slot), ints(self.gs_kind)
            st.gs_coef = reals(self.gs_coef)
            st.s_a, st.s_b, st.s_angle = ints(self.s_a), ints(self.s_b), reals(self.s_angle)
            st.n_gc = self.gc_k.size
            st.gc_k, st.gc_kp, st.gc_i = ints(self.gc_k), ints(self.gc_kp), ints(self.gc_i)
            st.table = reals(np.zeros(max(1, 4 * self.s_S1.shape[0])))
            total = self.gr_k.size + self.gs_k.size + self.gc_k.size
            self._derivatives = (np.zeros(total, dtype=np.int32),
                                 np.zeros(total, dtype=np.int32), np.zeros(total))
            st.k_out, st.c_out, st.val_out = (a.ctypes.data if total else None
                                              for a in self._derivatives)
            st.n_qh = self.qr.size
            st.qh_row, st.qh_j, st.qh_k = ints(self.qr), ints(self.qj), ints(self.qk)
            st.qh_h = reals(self.qh)
            (kr, kc), (hr, hc) = self.geometric_positions()
            st.K_at, st.H_at = ints(kr * self.n + kc), ints(hr * self.n + hc)
            self._geometric_table = (st, keep)
        return self._geometric_table[0]

    def _entry_derivatives(self, q):
        """(entry k, column c, d data_k / dq_c) of the C rows, from the state the last
        ``_batched`` call left in the work buffer (at the same q): one call of
        ``plan_entry_derivatives`` (native/constraint_plan.c, the one implementation,
        which ``plan_geometric`` accumulates for the compiled Newton matrix)."""
        table = self.geometric_table()
        ks, cs, vals = self._derivatives
        if ks.size:
            _plan_library().plan_entry_derivatives(ctypes.addressof(table), q, ks, cs, vals)
        return ks.copy(), cs.copy(), vals.copy()

    def geometric_terms(self, q, v, lam, t: float = 0.0):
        """d(G^T lam)/dq (n, n) and d(G v)/dq (m, n) over the batched rows, as COO
        triplets ``(rows, cols, values)`` of each.

        Exact for the rows the C plan evaluates (the derivatives of their Jacobian
        entries, :meth:`_entry_derivatives`) and for the quadratic rows; forward
        differences of step sqrt(eps) max(1, |q_c|) (as the per-joint ones of
        ``System.geometric_stiffness_sparse``) for the hinge-angle rows."""
        eps = np.sqrt(np.finfo(float).eps)
        q = np.ascontiguousarray(q, dtype=np.float64)
        v = np.ascontiguousarray(v, dtype=np.float64)
        lam = np.asarray(lam, dtype=float)
        k_r, k_c, k_v, h_r, h_c, h_v = [], [], [], [], [], []
        if self.G_row.size:
            self._batched(q, v, True)              # fills the work buffer at q
            k, c, val = self._entry_derivatives(q)
            k_r.append(self.G_col[k])
            k_c.append(c)
            k_v.append(lam[self.G_row[k]] * val)
            h_r.append(self.G_row[k])
            h_c.append(c)
            h_v.append(v[self.G_col[k]] * val)
        if self.angle_specs:
            # hinge-angle rows: forward differences of their Jacobian values
            q = np.asarray(q, dtype=np.float64)
            a0 = self._hinge_angles(t, q, v)[3]
            qa = q.copy()
            lam_a, v_a = np.asarray(lam)[self.ge_row], v[self.ge_col]
            for c in np.unique(self.ge_col):
                e = eps * max(1.0, abs(q[c]))
                qa[c] = q[c] + e
                d = self._hinge_angles(t, qa, v)[3] - a0
                qa[c] = q[c]
                hit = np.flatnonzero(d)
                if hit.size:
                    d = d[hit] / e
                    k_r.append(self.ge_col[hit])
                    k_c.append(np.full(hit.size, c))
                    k_v.append(d * lam_a[hit])
                    h_r.append(self.ge_row[hit])
                    h_c.append(np.full(hit.size, c))
                    h_v.append(d * v_a[hit])
        if self.qh.size:
            # quadratic rows, exact: d(G^T lam)_j/dq_k = lam h, d(G v)_row/dq_k = h v_j
            k_r.append(self.qj)
            k_c.append(self.qk)
            k_v.append(np.asarray(lam)[self.qr] * self.qh)
            h_r.append(self.qr)
            h_c.append(self.qk)
            h_v.append(self.qh * v[self.qj])
        return (k_r, k_c, k_v), (h_r, h_c, h_v)

    def evaluate(self, t, q, v, sparse: bool = False, per_joint: bool = True):
        """(g, G, g_t, gamma) at (t, q, v); G dense (m, n) or CSR.  ``per_joint=False``
        leaves the rows of the joints without a closed form zero (the caller fills
        them)."""
        m, n = self.m, self.n
        g, gam, out = self._batched(q, v, sparse)
        gt = np.zeros(m)
        if self.angle_specs:
            ag, agt, agam, vals = self._hinge_angles(t, np.asarray(q, float),
                                                     np.asarray(v, float))
            g += ag
            gt += agt
            gam += agam
            out += np.bincount(self.angle_scatter[bool(sparse)], vals, minlength=out.size)
        for row, offset in self.sum_rows:
            f, fd, fdd = offset(t)
            g[row] -= f
            gt[row] = -fd
            gam[row] += fdd
        if self.fallback and per_joint:
            view = self.system.view(q, v)
            Gf = np.zeros((self.fallback_rows.size, n))
            k = 0
            for joint, row in self.fallback:
                sl = slice(row, row + joint.n_eq)
                joint.evaluate(t, view, g[sl], Gf[k:k + joint.n_eq], gt[sl], gam[sl])
                k += joint.n_eq
        if sparse:
            G = scipy.sparse.csr_matrix((out, self.csr_indices, self.csr_indptr),
                                        shape=(m, n))
            if self.fallback and per_joint:
                P = scipy.sparse.csr_matrix(
                    (np.ones(self.fallback_rows.size),
                     (self.fallback_rows, np.arange(self.fallback_rows.size))),
                    shape=(m, self.fallback_rows.size))
                G = (G + P @ scipy.sparse.csr_matrix(Gf)).tocsr()
            return g, G, gt, gam
        G = out.reshape(m, n)
        if self.fallback and per_joint:
            G[self.fallback_rows] += Gf
        return g, G, gt, gam


def _ints(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int32)


_P, _N = ctypes.c_void_p, ctypes.c_int


class _Plan(ctypes.Structure):
    """``plan_t`` of native/constraint_plan.c (same field order)."""

    _fields_ = [("m", _N), ("n_rigid", _N), ("n_linear", _N), ("lin_width", _N),
                ("r_cols", _P), ("r_local", _P), ("l_cols", _P), ("l_N", _P), ("l_c", _P),
                ("n_lin_ang", _N), ("ang_width", _N), ("a_idx", _P), ("a_k", _P),
                ("a_c", _P), ("n_slope", _N), ("slope_width", _N), ("s_cols", _P),
                ("s_colsy", _P), ("s_S1", _P), ("s_theta0", _P), ("s_t0", _P),
                ("n_pt_ent", _N), ("n_an_ent", _N), ("s_first", _N), ("pt_val", _P),
                ("an_val", _P), ("n_point_rows", _N), ("p_row", _P), ("p_a", _P),
                ("p_b", _P), ("n_sine_rows", _N), ("sn_row", _P), ("sn_a", _P),
                ("sn_b", _P), ("sn_angle", _P), ("n_terms", _N), ("t_row", _P),
                ("t_slot", _P), ("t_coef", _P), ("n_G", _N), ("n_out", _N), ("G_src", _P),
                ("G_sine_row", _P), ("G_scatter", _P), ("G_mult", _P), ("n_qh", _N),
                ("n_qb", _N), ("n_qc", _N), ("qh_row", _P), ("qh_j", _P), ("qh_k", _P),
                ("qb_row", _P), ("qb_j", _P), ("qc_row", _P), ("Q_scatter", _P),
                ("qh_h", _P), ("qb_b", _P), ("qc_c", _P)]


class _PlanGeometric(ctypes.Structure):
    """``plan_geometric_t`` of native/constraint_plan.c (same field order)."""

    _fields_ = [("n", _N), ("nG", _N), ("G_row", _P), ("G_col", _P), ("G_src", _P),
                ("g_sine", _P), ("G_mult", _P), ("ent", _P), ("th", _P), ("cosd", _P),
                ("n_gr", _N), ("gr_k", _P), ("gr_col", _P), ("gr_other", _P),
                ("gr_sign", _P), ("n_slope", _N), ("s_width", _N), ("s_cols", _P),
                ("s_colsy", _P), ("s_S1", _P), ("n_gs", _N), ("gs_k", _P), ("gs_col", _P),
                ("gs_slot", _P), ("gs_kind", _P), ("gs_coef", _P), ("s_a", _P),
                ("s_b", _P), ("s_angle", _P), ("n_gc", _N), ("gc_k", _P), ("gc_kp", _P),
                ("gc_i", _P), ("table", _P), ("k_out", _P), ("c_out", _P),
                ("val_out", _P), ("n_qh", _N), ("qh_row", _P), ("qh_j", _P), ("qh_k", _P),
                ("qh_h", _P), ("K_at", _P), ("H_at", _P)]




#: The batched rows in C (their one implementation; Constraint.evaluate is the reference).
PLAN_C_SOURCE = Path(__file__).resolve().parent / "native" / "constraint_plan.c"
_plan_library = kernel_library("mbdcore.multibody._constraint_plan", PLAN_C_SOURCE)


def plan_function(name: str) -> int:
    """Address of a function of native/constraint_plan.c (``"plan_evaluate"``,
    ``"plan_geometric"``) for a C caller."""
    return _plan_library().ADDRESSES[name]


class _Probe:
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
        self.q0 = q0 + 1e-2 * _probe_vector(n, 1)
        self.q1 = q0 + 3e-2 * _probe_vector(n, 2)
        self.v1 = _probe_vector(n, 3)

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


class _CosineSine:
    """The (cos, sin) pair of a hinge's angle as two rows, for the probe: a hinge's
    ``cosine_sine(view)`` gives two scalars with ``fill`` (value, G row, gamma)."""

    n_eq = 2

    def __init__(self, hinge):
        self.hinge = hinge

    def evaluate(self, t, view, g, G, gt, gam):
        c, s = self.hinge.cosine_sine(view)
        c.fill(g[0:1], G[0:1], gam[0:1])
        s.fill(g[1:2], G[1:2], gam[1:2])


def _probe_vector(n: int, seed: int) -> np.ndarray:
    """A fixed, irregular direction (deterministic plans)."""
    return np.sin(np.arange(1, n + 1) * (0.7 + 0.37 * seed) + seed)


def _joint_forms(joint):
    forms = getattr(joint, "row_forms", None)
    return None if forms is None else forms()


def _closed_form(forms) -> bool:
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


def _global(body, cols):
    return [body.index + int(c) for c in cols]


def _point_slot(frame, rigid: _Slots, linear: _Slots) -> int:
    """Slot of the point (body, location); its form from ``body.point_form``."""
    body, loc = frame
    kind, *spec = body.point_form(loc)
    key = (body.name, kind, repr(loc))
    if kind == "rigid":
        cols = _global(body, (0, 1, 2))
        k = rigid.add(key, (cols, np.asarray(spec[0], float)))
        return ("rigid", k)
    cols, N, c = spec
    k = linear.add(key, (_global(body, cols) if body.index is not None else [],
                         np.asarray(N, float), np.asarray(c, float)))
    return ("linear", k)


def _angle_slot(frame, linear: _Slots, slope: _Slots):
    body, loc = frame
    kind, *spec = body.angle_form(loc)
    key = (body.name, kind, repr(loc))
    if kind == "linear":
        cols, coef, c = spec
        k = linear.add(key, (_global(body, cols) if body.index is not None else [],
                             np.asarray(coef, float), float(c)))
        return ("linear", k)
    (cx, cy), S1, theta0, t0 = spec
    k = slope.add(key, ((_global(body, cx), _global(body, cy)), np.asarray(S1, float),
                        float(theta0), np.asarray(t0, float)))
    return ("slope", k)
