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
forms it is made of (``Constraint.row_forms``, None when it is not).  Two more kinds
come from the joint's own code, found by :class:`QuadraticProbe`: rows **quadratic** in q
(``Constraint.quadratic``: every spatial joint's and natural-coordinate body's rows,
``g = q^T H q / 2 + b . q + c``) and rows of **hinge angles** (``angle_rows()``:
spatial gears and angle drivers on the quadratic cosine and sine of each hinge).
:class:`ConstraintPlan` groups every quantity of every joint by its form once per
topology, evaluates all of them in one C call per Newton iteration
(``native/constraint_plan.c``: g, gamma, the driver rows' g_t and the Jacobian's
values, scattered into a dense G or the values of a CSR pattern through index arrays
computed once) and their exact geometric terms in another (``plan_geometric``).  Joints or bodies
without a closed form are evaluated one by one as before (``Constraint.evaluate``),
which stays the reference the batched rows are tested against (to 1e-12).
"""
from __future__ import annotations

import ctypes
from functools import cache
from pathlib import Path

import numpy as np
import scipy.sparse

from mbdcore.multibody.row_forms import (
    CosineSine,
    QuadraticProbe,
    Slots,
    angle_slot,
    closed_form,
    joint_forms,
    point_slot,
)
from mbdcore.cbuild import TABLE_LAYOUT_HEADER
from mbdcore.native import TableLayout, kernel_library, table_layout

__all__ = ["ConstraintPlan", "PLAN_C_SOURCE", "plan_function", "plan_layout",
           "plan_geometric_layout"]


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
        rigid_pts, linear_pts = Slots(), Slots()
        lin_angles, slope_angles = Slots(), Slots()
        point_rows, sine_rows, sum_rows, sum_terms = [], [], [], []
        self.fallback = []            # (joint, first row) evaluated one by one
        quadratic = []                # (rows, H entries, b entries, c) of quadratic joints
        probe = QuadraticProbe(system) if any(getattr(j, "quadratic", False)
                                      or hasattr(j, "angle_rows") for j in system.joints) \
            else None
        # rows of hinge angles: the hinges' (cos, sin) pairs as quadratic scalars
        self._pairs: dict = {}        # id(hinge) -> pair index
        self._pair_forms: list = []   # quadratic forms of the pairs' scalars
        self._pair_sign: list = []    # the hinge's sign (its angle is sign atan2(s, c))
        self.angle_specs: list = []  # (row, kind, ...) of the batched angle rows
        row = 0
        for joint in system.joints:
            forms = joint_forms(joint)
            if forms is None or not closed_form(forms):
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
                    a = point_slot(fa, rigid_pts, linear_pts)
                    b = point_slot(fb, rigid_pts, linear_pts)
                    point_rows.append((row, a, b))
                    row += 2
                elif form[0] == "angle_sine":
                    _, fa, fb, angle = form
                    a = angle_slot(fa, lin_angles, slope_angles)
                    b = angle_slot(fb, lin_angles, slope_angles)
                    sine_rows.append((row, a, b, float(angle)))
                    row += 1
                else:
                    _, terms, offset = form
                    sum_rows.append((row, offset))
                    for frame, coef in terms:
                        sum_terms.append((row, angle_slot(frame, lin_angles, slope_angles),
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
            form = probe.quadratic_form(CosineSine(hinge), 2 * len(self._pair_forms))
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
        self._setup_angle_kernel(by_scalar)

    def _setup_angle_kernel(self, by_scalar):
        """The hinge-angle rows for native/constraint_plan.c: gear terms (row, pair,
        coefficient times the hinge's sign, the cosine's link) and constants, driver
        rows (row, pair, link; the motion and sign, evaluated per time by
        :meth:`set_time`), and the entries of their exact geometric terms (gl: a link
        with each H entry of its scalar; gp: pairs of gradient entries of a gear term's
        pair; gh: a gear term's gradient entries)."""
        at, ac, ad = [], [], []
        self.ad_motion = []
        link = 0
        for spec in self.angle_specs:
            if spec[1] == "sum":
                ac.append((spec[0], spec[3]))
                for p, coef in spec[2]:
                    at.append((spec[0], p, coef * self.pair_sign[p], link))
                    link += 2
            else:
                ad.append((spec[0], spec[2], link))
                self.ad_motion.append((spec[3], self.pair_sign[spec[2]]))
                link += 2
        col = (lambda rows, k, dtype=np.int64: np.array([r[k] for r in rows], dtype=dtype))
        self.at_row, self.at_pair, self.at_link = col(at, 0), col(at, 1), col(at, 3)
        self.at_w = col(at, 2, float)
        self.ac_row, self.ac_c = col(ac, 0), col(ac, 1, float)
        self.ad_row, self.ad_pair, self.ad_link = col(ad, 0), col(ad, 1), col(ad, 2)
        self.ad_values = np.zeros((3, len(ad)))          # f, f', f'' times the sign
        self.a_gt = np.zeros(self.m)
        h_by_scalar: dict = {}
        for i, sc in enumerate(self.sr):
            h_by_scalar.setdefault(int(sc), []).append(i)
        gl = [(k, i) for k, sc in enumerate(self.link_scalar)
              for i in h_by_scalar.get(int(sc), ())]
        self.gl_link, self.gl_h = col(gl, 0), col(gl, 1)
        gp, gh = [], []
        for t, p in enumerate(self.at_pair):
            entries = by_scalar.get(2 * int(p), []) + by_scalar.get(2 * int(p) + 1, [])
            gp += [(t, a, b) for a in entries for b in entries]
            gh += [(t, b) for b in entries]
        self.gp_term, self.gp_a, self.gp_b = col(gp, 0), col(gp, 1), col(gp, 2)
        self.gh_term, self.gh_b = col(gh, 0), col(gh, 1)

    def set_time(self, t: float) -> None:
        """The driver rows' prescribed angles, rates and accelerations at time t [s]
        (times their hinges' signs), which the next evaluations read."""
        for k, (motion, sign) in enumerate(self.ad_motion):
            self.ad_values[:, k] = [sign * float(x) for x in motion(t)]

    # -- evaluation: one call of native/constraint_plan.c ----------------------------------
    def _setup_kernel(self):
        """The plan's arrays as the C struct (kept alive here) and the Jacobian's
        scatter maps: into a dense G's flat index, or a CSR matrix's data index."""
        self._setup_scatter()
        self.struct = st = self._plan_struct()
        # the work buffer of plan_evaluate, of the length its C layout takes
        self.work = np.zeros(_plan_library().plan_work_length(ctypes.addressof(st)))
        self._struct_ref = ctypes.addressof(st)
        self.scatter_addr = {k: a.ctypes.data for k, a in self.scatter.items()}
        self.quadratic_addr = {k: a.ctypes.data for k, a in self.quadratic_scatter.items()}
        self.angle_addr = {k: a.ctypes.data for k, a in self.angle_scatter.items()}
        self._work_addr = self.work.ctypes.data
        self._kernel = _plan_library().plan_evaluate
        # the columns the C-evaluated rows read (the quadratic rows' terms are exact)
        self.geometric_columns = [int(c) for c in np.unique(self.G_col)]
        self._setup_geometric()

    def _setup_scatter(self):
        """Where the Jacobian values of the C rows, the quadratic rows and the
        hinge-angle rows go: a dense G's flat index (False) or the data index of the
        CSR pattern ``csr_indices``/``csr_indptr`` (True), int32 each."""
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
        self.quadratic_scatter = {False: _ints(flat_q[:n_quad]),
                                  True: _ints(inverse[flat_c.size:flat_c.size + n_quad])}
        self.angle_scatter = {False: _ints(flat_q[n_quad:]),
                              True: _ints(inverse[flat_c.size + n_quad:])}

    def _plan_struct(self):
        """The ``plan_t`` of the plan's arrays (PLAN_LAYOUT), writing G dense."""
        sine_row = np.full(self.G_row.size, -1)
        sine_row[self.G_sine] = self.G_sine_row
        const_rows = np.flatnonzero(self.q_const)
        ints = {name: getattr(self, name) for name in (
            "r_cols", "l_cols", "s_cols", "s_colsy", "sr", "sj", "sk", "sbr", "sbj",
            "e_scalar", "e_col", "at_row", "at_pair", "at_link", "ac_row", "ad_row",
            "ad_pair", "ad_link", "ge_link", "ge_entry")}
        ints.update(a_idx=self.a_lin_idx, p_row=self.p_row, p_a=self.p_a, p_b=self.p_b,
                    sn_row=self.s_row, sn_a=self.s_a, sn_b=self.s_b, t_row=self.t_row,
                    t_slot=self.t_slot, G_src=self.G_src, G_sine_row=sine_row,
                    qh_row=self.qr, qh_j=self.qj, qh_k=self.qk, qb_row=self.br, qb_j=self.bj,
                    qc_row=const_rows)
        reals = {name: getattr(self, name) for name in (
            "r_local", "l_N", "l_c", "s_S1", "s_theta0", "s_t0", "t_coef", "G_mult", "sh",
            "sbv", "s_const", "at_w", "ac_c")}
        reals.update(a_k=self.a_lin_k, a_c=self.a_lin_c, pt_val=np.nan_to_num(self.pt_val),
                     an_val=np.nan_to_num(self.an_val), sn_angle=self.s_angle,
                     qh_h=self.qh, qb_b=self.bv, qc_c=self.q_const[const_rows])
        return plan_layout().structure(
            m=self.m, n_rigid=self.n_rigid, n_linear=self.l_cols.shape[0],
            lin_width=self.l_cols.shape[1], n_lin_ang=self.n_lin,
            ang_width=self.a_lin_idx.shape[1], n_slope=self.n_ang - self.n_lin,
            slope_width=self.s_width, n_pt_ent=self.pt_val.size, n_an_ent=self.an_val.size,
            s_first=self.s_first, n_point_rows=self.p_row.size, n_sine_rows=self.s_row.size,
            n_terms=self.t_row.size, n_G=self.G_row.size, n_out=self.m * self.n,
            G_scatter=self.scatter[False], n_qh=self.qr.size, n_qb=self.br.size,
            n_qc=const_rows.size, Q_scatter=self.quadratic_scatter[False],
            n_pair=self.p_count // 2, n_sh=self.sr.size, n_sb=self.sbr.size,
            n_at=self.at_row.size, n_ac=self.ac_row.size, n_ad=self.ad_row.size,
            n_ge=self.ge_link.size, A_scatter=self.angle_scatter[False],
            ad_f=self.ad_values[0], ad_fd=self.ad_values[1], ad_fdd=self.ad_values[2],
            a_gt=self.a_gt, **{k: _ints(a) for k, a in ints.items()},
            **{k: _reals(a) for k, a in reals.items()})

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
        st.A_scatter = self.angle_addr[bool(sparse)]
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
        st.A_scatter = self.angle_addr[bool(sparse)]
        st.n_out = self.csr_indices.size if sparse else self.m * self.n
        return st

    def _setup_geometric(self):
        """Index arrays of the derivatives of the C rows' Jacobian entries (analytic):
        a rigid point's d/dphi entries (-A s turned), an ANCF slope angle's entries
        (the Hessian of atan2 through the slope), and the cos d factor of the sine rows
        (-sin d times the row's angle Jacobian)."""
        self._geometric_table = None      # ctypes table of them (geometric_table)
        self._triplets = None             # its copy writing each term to its own slot
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
        gl_h, gl_row = self.gl_h, self.link_row[self.gl_link] if self.gl_link.size else \
            np.zeros(0, dtype=np.int64)
        gp_row = self.e_col[self.gp_a] if self.gp_a.size else np.zeros(0, dtype=np.int64)
        gp_col = self.e_col[self.gp_b] if self.gp_b.size else np.zeros(0, dtype=np.int64)
        gh_row = self.at_row[self.gh_term] if self.gh_term.size else \
            np.zeros(0, dtype=np.int64)
        gh_col = self.e_col[self.gh_b] if self.gh_b.size else np.zeros(0, dtype=np.int64)
        K = (np.concatenate([self.G_col[ks], self.qj, self.sj[gl_h], gp_row]),
             np.concatenate([cs, self.qk, self.sk[gl_h], gp_col]))
        H = (np.concatenate([self.G_row[ks], self.qr, gl_row, gh_row]),
             np.concatenate([cs, self.qk, self.sk[gl_h], gh_col]))
        return tuple(tuple(a.astype(np.int64) for a in x) for x in (K, H))

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
        derivatives of the C rows' Jacobian entries, ``plan_entry_derivatives``, and the
        quadratic and hinge-angle rows' exact terms,
        accumulated into dense matrices in C) and the arrays it points into, built
        once."""
        if self._geometric_table is None:
            total = self.gr_k.size + self.gs_k.size + self.gc_k.size
            self._derivatives = (np.zeros(total, dtype=np.int32),
                                 np.zeros(total, dtype=np.int32), np.zeros(total))
            (kr, kc), (hr, hc) = self.geometric_positions()
            ints = dict(G_row=self.G_row, G_col=self.G_col, gr_k=self.gr_k,
                        gr_col=self.gr_col, gr_other=self.gr_other, gs_k=self.gs_k,
                        gs_col=self.gs_col, gs_slot=self.gs_slot, gs_kind=self.gs_kind,
                        gc_k=self.gc_k, gc_kp=self.gc_kp, gc_i=self.gc_i,
                        link_row=self.link_row, gl_link=self.gl_link, gl_h=self.gl_h,
                        gp_term=self.gp_term, gp_a=self.gp_a, gp_b=self.gp_b,
                        gh_term=self.gh_term, gh_b=self.gh_b, K_at=kr * self.n + kc,
                        H_at=hr * self.n + hc)
            st = plan_geometric_layout().structure(
                plan=ctypes.addressof(self.struct), n_work=self.work.size, work=self.work,
                nG=self.G_row.size, n_gr=self.gr_k.size, gr_sign=_reals(self.gr_sign),
                n_gs=self.gs_k.size, gs_coef=_reals(self.gs_coef), n_gc=self.gc_k.size,
                n_slope=self.s_S1.shape[0], table=np.zeros(4 * self.s_S1.shape[0]),
                k_out=self._derivatives[0], c_out=self._derivatives[1],
                val_out=self._derivatives[2], n_qh=self.qr.size,
                n_link=self.link_row.size, n_gl=self.gl_link.size, n_gp=self.gp_term.size,
                n_gh=self.gh_term.size, **{k: _ints(a) for k, a in ints.items()})
            self._geometric_table = st
        return self._geometric_table

    def geometric_terms(self, q, v, lam, t: float = 0.0):
        """d(G^T lam)/dq (n, n) and d(G v)/dq (m, n) over the batched rows, as COO
        triplets ``(rows, cols, values)`` of each (lam over every row), exact: one call
        of ``plan_geometric`` (native/constraint_plan.c, the one implementation, which
        the compiled terms accumulate into their matrices) writing each term into its
        own slot, at the positions of :meth:`geometric_positions`."""
        q = np.ascontiguousarray(q, dtype=np.float64)
        v = np.ascontiguousarray(v, dtype=np.float64)
        lam = np.ascontiguousarray(lam, dtype=np.float64)
        (kr, kc), (hr, hc) = self.geometric_positions()
        kv, hv = np.zeros(kr.size), np.zeros(hr.size)
        if kr.size or hr.size:
            if self._triplets is None:
                slots = (np.arange(kr.size, dtype=np.int32), np.arange(hr.size, dtype=np.int32))
                self._triplets = (self.geometric_struct(*slots), slots)
            self.set_time(t)
            self._batched(q, v, True)               # the work buffer at (q, v)
            _plan_library().plan_geometric(ctypes.addressof(self._triplets[0]), q, v, lam,
                                           kv, hv)
        return ([kr], [kc], [kv]), ([hr], [hc], [hv])

    def evaluate(self, t, q, v, sparse: bool = False, per_joint: bool = True):
        """(g, G, g_t, gamma) at (t, q, v); G dense (m, n) or CSR.  ``per_joint=False``
        leaves the rows of the joints without a closed form zero (the caller fills
        them)."""
        m, n = self.m, self.n
        self.set_time(t)
        g, gam, out = self._batched(q, v, sparse)
        gt = self.a_gt.copy()
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


def _reals(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


#: The batched rows in C (their one implementation; Constraint.evaluate is the reference).
PLAN_C_SOURCE = Path(__file__).resolve().parent / "native" / "constraint_plan.c"
_plan_library = kernel_library("mbdcore.multibody._constraint_plan", PLAN_C_SOURCE,
                               [TABLE_LAYOUT_HEADER])


@cache
def plan_layout() -> TableLayout:
    """The table of ``plan_evaluate`` (``PLAN_LAYOUT`` of native/constraint_plan.c)."""
    return table_layout(_plan_library, "PLAN_LAYOUT")


@cache
def plan_geometric_layout() -> TableLayout:
    """The table of ``plan_geometric`` (``PLAN_GEOMETRIC_LAYOUT`` of
    native/constraint_plan.c)."""
    return table_layout(_plan_library, "PLAN_GEOMETRIC_LAYOUT")


def plan_function(name: str) -> int:
    """Address of a function of native/constraint_plan.c (``"plan_evaluate"``,
    ``"plan_geometric"``) for a C caller."""
    return _plan_library().ADDRESSES[name]
