/*
 * The terms of a System's Newton residual in one call, for a system whose parts all
 * have compiled forms (mbdcore.multibody.system.System.compiled_terms): the constraint
 * rows g, their Jacobian G (dense, m x n, row-major) and rate g_t from the batched
 * constraint plan (constraint_plan.c, through its function pointer) with the driving
 * offsets of the solve's time, and the applied forces F = F0 + the bodies' compiled
 * force kernels (each through a function pointer of one signature), F0 being the forces
 * that do not depend on the state (gravity of constant-mass bodies).
 *
 * One context writes dense matrices (G m x n, K and C n x n, H m x n, row-major), another
 * of the same system the values of sparse patterns fixed per topology (computed once in
 * Python, mbdcore.multibody.assembly.SystemTerms): the plan and its geometric terms
 * scatter through their own maps, and each body's tangent block is written into a
 * dense scratch block and gathered into the pattern's values.
 *
 * A system whose redundant rows were removed (kept != NULL) has the plan fill every row
 * into scratch arrays, from which the kept rows' g, g_t and G (and H) values are taken
 * through index maps; the multipliers of the removed rows are zero.
 *
 * The Newton solver of mbdcore.dae (native/newton.c) calls system_constraints and
 * system_forces through its problem-independent signatures; nothing here knows the
 * integrator.
 */
#include <math.h>
#include <string.h>

#include "table_layout.h"

/* marks what Python and other kernels call (mbdcore.cbuild binds it) */
#ifndef TERMS_API
#define TERMS_API
#endif

typedef void (*plan_fn)(const void *plan, const double *q, const double *v, double *g,
                        double *gam, double *out, double *work);
typedef void (*body_force_fn)(const void *params, const double *q, const double *v,
                              double *f);
/* adds -df/dq into K and -df/dv into C, both with leading dimension ld, at the body's
   diagonal block */
typedef void (*body_tangent_fn)(const void *params, const double *q, const double *v,
                                double *K, double *C, int ld);
typedef void (*plan_geometric_fn)(const void *geo, const double *q, const double *v,
                                  const double *lam, double *K, double *H);

/* A force law on a scalar measure s [m or rad] of the state and its rate s': out =
   (T, dT/ds, dT/ds'), T [N or N m] the force conjugate to s (the element's generalised
   force is -T ds/dq), p its parameters. */
typedef void (*force_law_fn)(const double *p, double s, double rate, double *out);

/* A force element on one scalar measure (a "measure element", docs/spatial.md, "The
   spatial residual in C"): over the n coordinates it reads (gathered, local order),

     s = sum_k lin_w[k] q[lin_at[k]] + beta |r_b - r_a| + s0

   with the points r_a, r_b of dimension dim (dim = 0: no line), each
   r = N q[cols] + c, or for a planar rigid point (rigid = 1; cols the body's x, y, phi)
   r = (q[x], q[y]) + A(q[phi]) c.  Springs, dampers, gears, screw drives and latches are
   this with their laws.  With projected = 1 the line term is instead the projection
   beta n . (r_b - r_a) on a vector fixed in a's body: n = A(q[phi_a]) normal for a
   planar rigid point a, n = normal for any other (the ground's): a circle's centre b
   against a line through a (contact, n its unit normal), a constant force's work (n
   the force).  With along = 1 besides, the element is a force -T along n at b and its
   reaction at a, n's turn doing no work (a linear actuator's direction fixed in a):
   "ds/dq" is then beta n^T dr/dq without the turn's (E n) . (r_b - r_a) at phi_a, no
   gradient of s.  With angle = 1 (planar, points linear in q) the line term is the
   angle beta atan2(t0 x d, t0 . d) of d = r_b - r_a from tangent0 = t0: a beam's slope
   angle (a = 0, b its slope vector, linear in q).  work: (dim + 2) n scratch (dr/dq, ds/dq,
   ds'/dq). */
#define MEASURE_LAYOUT(X)                                                                  \
    X(INT, n, 1) X(INT, n_lin, 1) X(INTS, lin_at, n_lin) X(ARRAY, lin_w, n_lin)            \
    X(REAL, beta, 1) X(REAL, s0, 1) X(INT, dim, 1)                                         \
    X(INT, projected, 1) X(INT, along, 1) X(ARRAY, normal, projected * dim)                \
    X(INT, angle, 1) X(ARRAY, tangent0, angle * dim)                                       \
    X(INT, a_rigid, 1) X(INT, a_n, 1) X(INTS, a_cols, a_n) X(ARRAY, a_N, dim * a_n)        \
    X(ARRAY, a_c, dim)                                                                     \
    X(INT, b_rigid, 1) X(INT, b_n, 1) X(INTS, b_cols, b_n) X(ARRAY, b_N, dim * b_n)        \
    X(ARRAY, b_c, dim)                                                                     \
    X(FN, law, force_law_fn) X(INT, n_law, 1) X(ARRAY, law_params, n_law)                  \
    X(WORK, work, (dim + 2) * n)

typedef struct {
    MEASURE_LAYOUT(TABLE_MEMBER)
} measure_t;

typedef struct {
    int n, m;
    plan_fn plan;
    const void *plan_data;
    double *plan_work, *gam;        /* the plan's work array and a gamma scratch (m) */
    const double *zeros;            /* n zeros: the rates the plan's gamma is not wanted at */
    int n_offset;                   /* angle-sum rows with a time offset */
    const int *offset_row;
    const double *offset, *offset_rate;   /* f(t) [rad], f'(t) [rad/s], set per solve */
    const double *F0;               /* state-independent forces (n) [N, N m] */
    int n_bodies;                   /* bodies with a compiled force kernel */
    const int *body_start, *body_size;
    const body_force_fn *body_fn;
    const void *const *body_params;
    double *scratch;                /* max body_size doubles */
    /* the Newton matrix's blocks (system_jacobian) */
    const body_tangent_fn *body_tangent;
    plan_geometric_fn geometric;
    const void *geometric_data;
    double *g_scratch, *G_scratch;  /* m, the plan's G values (m n dense, or its pattern's) */
    int nK, nC, nH;                 /* values of K, C, H (n n, n n, m n when dense) */
    /* sparse K and C: per body, the entries of its tangent block (flat indices into a
       body_size^2 block) and where they go in K's and C's values; NULL when dense */
    const int *body_nnz, *body_first, *body_entry, *body_K_at, *body_C_at;
    double *block_K, *block_C;      /* max body_size^2 each */
    /* removed redundant rows: NULL, or the m kept rows of m_all, the G and H values
       taken from the all-row scratch (n_G_take, n_H_take of them), the multipliers
       spread over all rows */
    int m_all, n_G_take, n_H_take;
    const int *kept, *G_take, *H_take;
    double *g_all, *gt_all, *G_all, *H_all, *lam_all;
    const double *plan_gt;          /* g_t the plan writes (driver rows; m_all) or NULL */
    /* the sparse residual (system_residual_sparse): G's CSR pattern (the kept rows') and
       the constant M's CSR matrix */
    const int *G_indptr, *G_indices, *M_indptr, *M_indices;
    const double *M_data;
    double *F_scratch;              /* n */
    /* force elements over gathered coordinates (a measure element, or any kernel of a
       body's signature): element k reads elem_size[k] coordinates elem_cols[elem_first[k]
       ...]; sparse: where each entry of its (size x size) tangent block goes in K's and
       C's values (from elem_block[k]; NULL when dense) */
    int n_elements;
    const body_force_fn *elem_fn;
    const body_tangent_fn *elem_tangent;
    const void *const *elem_params;
    const int *elem_first, *elem_size, *elem_cols, *elem_block, *elem_K_at, *elem_C_at;
    double *elem_q, *elem_v, *elem_f;   /* max size each */
    double *elem_K, *elem_C;            /* max size^2 each */
} system_terms_t;

/* One point of a measure element at the local coordinates q, v: r, r' (dim each) and
   dr/dq added with the sign sg into J (dim x n, row-major); A c for a rigid point
   (its curvature terms). */
static void measure_point(int dim, int n, int rigid, int np, const int *cols,
                          const double *N, const double *c, const double *q,
                          const double *v, double sg, double *r, double *rd, double *J,
                          double *Ac)
{
    int i, k;
    if (rigid) {
        const int x = cols[0], y = cols[1], f = cols[2];
        const double co = cos(q[f]), si = sin(q[f]);
        Ac[0] = co * c[0] - si * c[1];
        Ac[1] = si * c[0] + co * c[1];
        r[0] = q[x] + Ac[0];
        r[1] = q[y] + Ac[1];
        rd[0] = v[x] - v[f] * Ac[1];
        rd[1] = v[y] + v[f] * Ac[0];
        J[x] += sg;
        J[n + y] += sg;
        J[f] -= sg * Ac[1];
        J[n + f] += sg * Ac[0];
        return;
    }
    for (i = 0; i < dim; ++i) {
        double ri = c[i], vi = 0.0;
        for (k = 0; k < np; ++k) {
            ri += N[i * np + k] * q[cols[k]];
            vi += N[i * np + k] * v[cols[k]];
            J[i * n + cols[k]] += sg * N[i * np + k];
        }
        r[i] = ri;
        rd[i] = vi;
    }
}

/* What the tangent needs of a measure element's line besides ds/dq and ds'/dq: the unit
   direction e (|r_b - r_a|) or normal n (projected), the length |r_b - r_a|, d = r_b -
   r_a and its rate d', the rigid points' A c, and for a projected measure E n, the
   rate of a's angle (0 unless a is a rigid point) and ds/dphi_a's turn term
   (E n) . d. */
typedef struct {
    double e[3], length, d[3], dd[3], ac_a[2], ac_b[2], en[2], w_a, turn, hess[3];
} measure_geo_t;

/* The line term of a measure |r_b - r_a| (its value, rate, ds/dq and ds'/dq added with
   beta), from d, d' and dr/dq (J) in geo and work. */
static void measure_length(const measure_t *p, const double *v, measure_geo_t *g,
                           double *s, double *rate)
{
    const int n = p->n, dim = p->dim;
    const double *J = p->work;
    double *ds = p->work + dim * n, *dsd = ds + n, length = 0.0, ldot = 0.0;
    int i, k;
    for (i = 0; i < dim; ++i) length += g->d[i] * g->d[i];
    length = sqrt(length);
    for (i = 0; i < dim; ++i) {
        g->e[i] = g->d[i] / length;     /* a zero length: NaN, the Newton solve fails */
        ldot += g->e[i] * g->dd[i];
    }
    g->length = length;
    *s += p->beta * length;
    *rate += p->beta * ldot;
    for (k = 0; k < n; ++k) {
        double eJ = 0.0;
        for (i = 0; i < dim; ++i) eJ += g->e[i] * J[i * n + k];
        ds[k] += p->beta * eJ;
    }
    /* ds'/dq = beta (J^T (I - e e^T) d' / length + e . d(d')/dq), the last term
       from the rigid points' rotation: d(phi' E A c)/dphi = -phi' A c */
    for (k = 0; k < n; ++k) {
        double acc = 0.0;
        for (i = 0; i < dim; ++i)
            acc += J[i * n + k] * (g->dd[i] - g->e[i] * ldot);
        dsd[k] += p->beta * acc / length;
    }
    if (p->a_rigid)
        dsd[p->a_cols[2]] += p->beta * v[p->a_cols[2]] * (g->e[0] * g->ac_a[0] +
                                                          g->e[1] * g->ac_a[1]);
    if (p->b_rigid)
        dsd[p->b_cols[2]] -= p->beta * v[p->b_cols[2]] * (g->e[0] * g->ac_b[0] +
                                                          g->e[1] * g->ac_b[1]);
}

/* The line term of a projected measure n . (r_b - r_a), n turning with a's angle
   phi_a when a is a rigid point (dn/dphi_a = E n, E n . w = -n . E w):

     s' = n . d' + phi_a' (E n) . d,
     ds/dq = n^T J + (E n) . d at phi_a,
     ds'/dq = n . d(d')/dq + phi_a' (E n)^T J + ((E n) . d' - phi_a' n . d) at phi_a,

   d(d')/dphi = -phi' A c for b, +phi_a' A c for a (the rotation of the rigid points);
   a force along n (along = 1) has the rate n . d' (its power over T) and n^T J for
   ds/dq, the terms of n's turn left out but (E n) . d' at phi_a (the rate's own). */
static void measure_projection(const measure_t *p, const double *q, const double *v,
                               measure_geo_t *g, double *s, double *rate)
{
    const int n = p->n, dim = p->dim;
    const double *J = p->work;
    double *ds = p->work + dim * n, *dsd = ds + n, nd = 0.0, ndd = 0.0, end = 0.0;
    int i, k;
    g->w_a = 0.0;
    for (i = 0; i < dim; ++i) g->e[i] = p->normal[i];
    if (p->a_rigid) {
        const int f = p->a_cols[2];
        const double co = cos(q[f]), si = sin(q[f]);
        g->e[0] = co * p->normal[0] - si * p->normal[1];
        g->e[1] = si * p->normal[0] + co * p->normal[1];
        g->w_a = v[f];
    }
    g->en[0] = dim == 2 ? -g->e[1] : 0.0;
    g->en[1] = dim == 2 ? g->e[0] : 0.0;
    for (i = 0; i < dim; ++i) {
        nd += g->e[i] * g->d[i];
        ndd += g->e[i] * g->dd[i];
    }
    if (p->a_rigid) end = g->en[0] * g->d[0] + g->en[1] * g->d[1];
    g->turn = end;
    if (p->along) end = 0.0;        /* a force along n: its turn does no work */
    *s += p->beta * nd;
    *rate += p->beta * (ndd + g->w_a * end);
    for (k = 0; k < n; ++k) {
        double nJ = 0.0, enJ = 0.0;
        for (i = 0; i < dim; ++i) nJ += g->e[i] * J[i * n + k];
        if (p->a_rigid && !p->along) enJ = g->en[0] * J[k] + g->en[1] * J[n + k];
        ds[k] += p->beta * nJ;
        dsd[k] += p->beta * g->w_a * enJ;
    }
    if (p->a_rigid) {
        const int f = p->a_cols[2];
        ds[f] += p->beta * end;
        dsd[f] += p->beta * (g->w_a * (g->e[0] * g->ac_a[0] + g->e[1] * g->ac_a[1])
                             + g->en[0] * g->dd[0] + g->en[1] * g->dd[1]
                             - (p->along ? 0.0 : g->w_a * nd));
    }
    if (p->b_rigid)
        dsd[p->b_cols[2]] -= p->beta * v[p->b_cols[2]] * (g->e[0] * g->ac_b[0] +
                                                          g->e[1] * g->ac_b[1]);
}

/* The line term of an angle measure theta = atan2(t0 x d, t0 . d) (beta times it), d
   linear in q (J constant): dtheta/dd = E d / |d|^2 (into e), its Hessian in d
   [[2 x y, y^2 - x^2], [y^2 - x^2, -2 x y]] / |d|^4 (into hess: 00, 01, 11), s' =
   dtheta/dd . d', ds/dq = J^T dtheta/dd, ds'/dq = J^T hess d'. */
static void measure_angle(const measure_t *p, measure_geo_t *g, double *s, double *rate)
{
    const int n = p->n;
    const double *J = p->work, x = g->d[0], y = g->d[1], *t0 = p->tangent0;
    double *ds = p->work + 2 * n, *dsd = ds + n;
    const double l2 = x * x + y * y, l4 = l2 * l2;
    double hd0, hd1;
    int k;
    g->e[0] = -y / l2;
    g->e[1] = x / l2;
    g->hess[0] = 2.0 * x * y / l4;
    g->hess[1] = (y * y - x * x) / l4;
    g->hess[2] = -2.0 * x * y / l4;
    hd0 = g->hess[0] * g->dd[0] + g->hess[1] * g->dd[1];
    hd1 = g->hess[1] * g->dd[0] + g->hess[2] * g->dd[1];
    *s += p->beta * atan2(t0[0] * y - t0[1] * x, t0[0] * x + t0[1] * y);
    *rate += p->beta * (g->e[0] * g->dd[0] + g->e[1] * g->dd[1]);
    for (k = 0; k < n; ++k) {
        ds[k] += p->beta * (g->e[0] * J[k] + g->e[1] * J[n + k]);
        dsd[k] += p->beta * (hd0 * J[k] + hd1 * J[n + k]);
    }
}

/* s, s' and the law at (q, v), with ds/dq (= ds'/dv) and ds'/dq in the work array; out:
   the law's (T, dT/ds, dT/ds'); g, what the tangent needs of the line; returns s. */
static double measure_eval(const measure_t *p, const double *q, const double *v,
                           double *out, measure_geo_t *g)
{
    const int n = p->n, dim = p->dim;
    double *J = p->work, *ds = p->work + dim * n;
    double s = p->s0, rate = 0.0;
    int i, k;
    memset(p->work, 0, (size_t)(dim + 2) * n * sizeof(double));
    for (k = 0; k < p->n_lin; ++k) {
        const int at = p->lin_at[k];
        s += p->lin_w[k] * q[at];
        rate += p->lin_w[k] * v[at];
        ds[at] += p->lin_w[k];
    }
    if (dim > 0) {
        double ra[3], rb[3], va[3], vb[3];
        measure_point(dim, n, p->a_rigid, p->a_n, p->a_cols, p->a_N, p->a_c, q, v, -1.0,
                      ra, va, J, g->ac_a);
        measure_point(dim, n, p->b_rigid, p->b_n, p->b_cols, p->b_N, p->b_c, q, v, 1.0,
                      rb, vb, J, g->ac_b);
        for (i = 0; i < dim; ++i) {
            g->d[i] = rb[i] - ra[i];
            g->dd[i] = vb[i] - va[i];
        }
        if (p->angle)
            measure_angle(p, g, &s, &rate);
        else if (p->projected)
            measure_projection(p, q, v, g, &s, &rate);
        else
            measure_length(p, v, g, &s, &rate);
    }
    p->law(p->law_params, s, rate, out);
    return s;
}

/* The measure s [m or rad] of a measure element at its gathered (q, v): what a C model
   tests a latch's engagement on (s >= 0, as its Python update does). */
TERMS_API double measure_value(const void *params, const double *q, const double *v)
{
    double law[3];
    measure_geo_t g;
    return measure_eval((const measure_t *)params, q, v, law, &g);
}

/* The generalised force f = -T ds/dq of a measure element (a body_force_fn over its
   gathered coordinates). */
TERMS_API void measure_forces(const void *params, const double *q, const double *v,
                              double *f)
{
    const measure_t *p = (const measure_t *)params;
    const double *ds = p->work + p->dim * p->n;
    double law[3];
    measure_geo_t g;
    int k;
    measure_eval(p, q, v, law, &g);
    for (k = 0; k < p->n; ++k) f[k] = -law[0] * ds[k];
}

/* T d2s/dq2 of the line term added into K (leading dimension ld), tb = T beta: for the
   length (J^T (I - e e^T) J) / length, for the projection (E n)^T J at phi_a's row and
   column each and -n . d at (phi_a, phi_a), for a force along n its column only (the
   derivative of n^T J by n's turn); and the rigid points' d2r/dphi2 = -A c (e or n .
   A c at a's angle, minus at b's). */
static void measure_curvature(const measure_t *p, const measure_geo_t *g, double tb,
                              double *K, int ld)
{
    const int n = p->n, dim = p->dim;
    const double *J = p->work, *e = g->e, *h = g->hess;
    int i, j, k;
    if (p->angle) {
        for (i = 0; i < n; ++i)
            for (j = 0; j < n; ++j)
                K[(size_t)i * ld + j] += tb * (J[i] * (h[0] * J[j] + h[1] * J[n + j]) +
                                               J[n + i] * (h[1] * J[j] + h[2] * J[n + j]));
        return;
    }
    if (!p->projected)
        for (i = 0; i < n; ++i)
            for (j = 0; j < n; ++j) {
                double acc = 0.0, ei = 0.0, ej = 0.0;
                for (k = 0; k < dim; ++k) {
                    acc += J[k * n + i] * J[k * n + j];
                    ei += e[k] * J[k * n + i];
                    ej += e[k] * J[k * n + j];
                }
                K[(size_t)i * ld + j] += tb * (acc - ei * ej) / g->length;
            }
    if (p->a_rigid) {
        const int f = p->a_cols[2];
        K[(size_t)f * ld + f] += tb * (e[0] * g->ac_a[0] + e[1] * g->ac_a[1]);
        if (p->projected && !p->along)
            K[(size_t)f * ld + f] -= tb * (e[0] * g->d[0] + e[1] * g->d[1]);
        if (p->projected)
            for (j = 0; j < n; ++j) {
                const double enJ = tb * (g->en[0] * J[j] + g->en[1] * J[n + j]);
                if (!p->along) K[(size_t)f * ld + j] += enJ;
                K[(size_t)j * ld + f] += enJ;
            }
    }
    if (p->b_rigid) {
        const int f = p->b_cols[2];
        K[(size_t)f * ld + f] -= tb * (e[0] * g->ac_b[0] + e[1] * g->ac_b[1]);
    }
}

/* Its tangents (a body_tangent_fn): -df/dq = ds (dT/ds ds + dT/ds' ds'/dq)^T + T d2s/dq2,
   -df/dv = dT/ds' ds ds^T, added into K and C (leading dimension ld). */
TERMS_API void measure_tangent(const void *params, const double *q, const double *v,
                               double *K, double *C, int ld)
{
    const measure_t *p = (const measure_t *)params;
    const int n = p->n, dim = p->dim;
    const double *ds = p->work + dim * n, *dsd = ds + n;
    double law[3];
    measure_geo_t g;
    int i, j;
    measure_eval(p, q, v, law, &g);
    for (i = 0; i < n; ++i) {
        if (ds[i] == 0.0) continue;
        for (j = 0; j < n; ++j) {
            K[(size_t)i * ld + j] += ds[i] * (law[1] * ds[j] + law[2] * dsd[j]);
            C[(size_t)i * ld + j] += law[2] * ds[i] * ds[j];
        }
    }
    if (dim > 0 && law[0] != 0.0)
        measure_curvature(p, &g, law[0] * p->beta, K, ld);
    if (p->projected && p->along && p->a_rigid && law[1] != 0.0)
        /* dT/ds times the turn's part of the true ds/dphi_a, left out of ds */
        for (i = 0; i < n; ++i)
            K[(size_t)i * ld + p->a_cols[2]] += ds[i] * law[1] * p->beta * g.turn;
}

/* A force element linear in the n coordinates it reads (gathered, local order):
   f = sum_j scale[j] (B_j q + b_j) over m terms, B_j n x n row-major, the factors
   written by its owner before each solve (an input, a load at the solve's time, or
   constants): a torque T on a natural-coordinate body, whose forces (T x e_k) / 2 on
   its unit vectors e_k are linear in q and not the gradient of a measure, one term per
   component of T (mbdcore.spatial.forces.BodyTorque). */
#define LINEAR_LAYOUT(X)                                                                   \
    X(INT, n, 1) X(INT, m, 1) X(ARRAY, scale, m) X(ARRAY, B, m * n * n) X(ARRAY, b, m * n)

typedef struct {
    LINEAR_LAYOUT(TABLE_MEMBER)
} linear_t;

/* Its forces (a body_force_fn over its gathered coordinates). */
TERMS_API void linear_forces(const void *params, const double *q, const double *v,
                             double *f)
{
    const linear_t *p = (const linear_t *)params;
    const int n = p->n;
    int i, j, k;
    (void)v;
    for (i = 0; i < n; ++i) f[i] = 0.0;
    for (k = 0; k < p->m; ++k) {
        const double *B = p->B + (size_t)k * n * n, *b = p->b + (size_t)k * n;
        for (i = 0; i < n; ++i) {
            double acc = b[i];
            for (j = 0; j < n; ++j) acc += B[i * n + j] * q[j];
            f[i] += p->scale[k] * acc;
        }
    }
}

/* Its tangents (a body_tangent_fn): -df/dq = -sum_j scale[j] B_j added into K, no C. */
TERMS_API void linear_tangent(const void *params, const double *q, const double *v,
                              double *K, double *C, int ld)
{
    const linear_t *p = (const linear_t *)params;
    const int n = p->n;
    int i, j, k;
    (void)q;
    (void)v;
    (void)C;
    for (k = 0; k < p->m; ++k)
        for (i = 0; i < n; ++i)
            for (j = 0; j < n; ++j)
                K[(size_t)i * ld + j] -= p->scale[k] * p->B[((size_t)k * n + i) * n + j];
}

/* The penalty contact law of mbdcore.multibody.forces.Contact on s = -delta, delta the
   penetration (two circles: s = distance - (r_a + r_b); a circle on a line: s = its
   centre's height over the line - r_a): magnitude K delta^n + C delta^n delta', never
   pulling (p: K, C, n), pushing the bodies apart, T = -magnitude. */
TERMS_API void contact_law(const double *p, double s, double rate, double *out)
{
    const double delta = -s, delta_rate = -rate;
    double dn, magnitude;
    out[0] = out[1] = out[2] = 0.0;
    if (!(delta > 0.0)) return;
    dn = pow(delta, p[2]);
    magnitude = p[0] * dn + p[1] * dn * delta_rate;
    if (!(magnitude > 0.0)) return;
    out[0] = -magnitude;
    out[1] = p[2] * pow(delta, p[2] - 1.0) * (p[0] + p[1] * delta_rate);
    out[2] = p[1] * dn;
}

/* A constant T = p[0] whatever s: a constant load's measure is its work F . r (a point
   force [N] on a rigid body's point, T = -1). */
TERMS_API void constant_law(const double *p, double s, double rate, double *out)
{
    (void)s;
    (void)rate;
    out[0] = p[0];
    out[1] = out[2] = 0.0;
}

/* The linear spring-damper law T = k s + c s' (p: k, c), one-sided with p[2] != 0 (no
   force while s <= 0, a stop or a latch not yet engaged) unless engaged, p[3] != 0. */
TERMS_API void spring_law(const double *p, double s, double rate, double *out)
{
    if (p[2] != 0.0 && p[3] == 0.0 && !(s > 0.0)) {
        out[0] = out[1] = out[2] = 0.0;
        return;
    }
    out[0] = p[0] * s + p[1] * rate;
    out[1] = p[0];
    out[2] = p[1];
}

TERMS_API void system_constraints(const void *ctx, const double *q, double *g, double *G, double *gt)
{
    const system_terms_t *s = (const system_terms_t *)ctx;
    double *ga = s->kept ? s->g_all : g, *gta = s->kept ? s->gt_all : gt;
    const int m = s->kept ? s->m_all : s->m;
    int k;
    if (m > 0)
        s->plan(s->plan_data, q, s->zeros, ga, s->gam, s->kept ? s->G_all : G, s->plan_work);
    if (s->plan_gt != NULL)
        memcpy(gta, s->plan_gt, (size_t)m * sizeof(double));
    else
        memset(gta, 0, (size_t)m * sizeof(double));
    for (k = 0; k < s->n_offset; ++k) {
        ga[s->offset_row[k]] -= s->offset[k];
        gta[s->offset_row[k]] = -s->offset_rate[k];
    }
    if (s->kept) {
        for (k = 0; k < s->m; ++k) {
            g[k] = ga[s->kept[k]];
            gt[k] = gta[s->kept[k]];
        }
        for (k = 0; k < s->n_G_take; ++k) G[k] = s->G_all[s->G_take[k]];
    }
}

TERMS_API void system_forces(const void *ctx, const double *q, const double *v, double *F)
{
    const system_terms_t *s = (const system_terms_t *)ctx;
    int k, j;
    memcpy(F, s->F0, (size_t)s->n * sizeof(double));
    for (k = 0; k < s->n_bodies; ++k) {
        const int a = s->body_start[k];
        s->body_fn[k](s->body_params[k], q + a, v + a, s->scratch);
        for (j = 0; j < s->body_size[k]; ++j)
            F[a + j] += s->scratch[j];
    }
    for (k = 0; k < s->n_elements; ++k) {
        const int *cols = s->elem_cols + s->elem_first[k], size = s->elem_size[k];
        for (j = 0; j < size; ++j) {
            s->elem_q[j] = q[cols[j]];
            s->elem_v[j] = v[cols[j]];
        }
        s->elem_fn[k](s->elem_params[k], s->elem_q, s->elem_v, s->elem_f);
        for (j = 0; j < size; ++j)
            F[cols[j]] += s->elem_f[j];
    }
}

/* The unscaled blocks of the Newton matrix at (q, v, lam): K = -dF/dq + d(G^T lam)/dq
   (n x n), C = -dF/dv (n x n), H = d(G v)/dq (m x n), dense row-major or a sparse
   pattern's values (the context's), overwritten (nH: the values over all rows, before
   the kept ones are taken); the constraint curvature terms only if
   geometric is not 0 (M is constant here). */
TERMS_API void system_jacobian(const void *ctx, const double *q, const double *v, const double *lam,
                     int geometric, double *K, double *C, double *H)
{
    const system_terms_t *s = (const system_terms_t *)ctx;
    const int n = s->n;
    int k, e;
    double *Hw = s->kept ? s->H_all : H;
    const double *lw = lam;
    memset(K, 0, (size_t)s->nK * sizeof(double));
    memset(C, 0, (size_t)s->nC * sizeof(double));
    memset(Hw, 0, (size_t)s->nH * sizeof(double));
    for (k = 0; k < s->n_bodies; ++k) {
        const int a = s->body_start[k], b = s->body_size[k];
        if (s->body_K_at == NULL) {
            s->body_tangent[k](s->body_params[k], q + a, v + a, K + (size_t)a * n + a,
                               C + (size_t)a * n + a, n);
            continue;
        }
        memset(s->block_K, 0, (size_t)b * b * sizeof(double));
        memset(s->block_C, 0, (size_t)b * b * sizeof(double));
        s->body_tangent[k](s->body_params[k], q + a, v + a, s->block_K, s->block_C, b);
        for (e = s->body_first[k]; e < s->body_first[k] + s->body_nnz[k]; ++e) {
            K[s->body_K_at[e]] += s->block_K[s->body_entry[e]];
            C[s->body_C_at[e]] += s->block_C[s->body_entry[e]];
        }
    }
    for (k = 0; k < s->n_elements; ++k) {
        const int *cols = s->elem_cols + s->elem_first[k], b = s->elem_size[k];
        int i, j;
        for (j = 0; j < b; ++j) {
            s->elem_q[j] = q[cols[j]];
            s->elem_v[j] = v[cols[j]];
        }
        memset(s->elem_K, 0, (size_t)b * b * sizeof(double));
        memset(s->elem_C, 0, (size_t)b * b * sizeof(double));
        s->elem_tangent[k](s->elem_params[k], s->elem_q, s->elem_v, s->elem_K, s->elem_C, b);
        for (i = 0; i < b; ++i)
            for (j = 0; j < b; ++j) {
                const int at = i * b + j;
                if (s->elem_K_at == NULL) {
                    K[(size_t)cols[i] * n + cols[j]] += s->elem_K[at];
                    C[(size_t)cols[i] * n + cols[j]] += s->elem_C[at];
                } else {
                    K[s->elem_K_at[s->elem_block[k] + at]] += s->elem_K[at];
                    C[s->elem_C_at[s->elem_block[k] + at]] += s->elem_C[at];
                }
            }
    }
    if (s->kept) {
        memset(s->lam_all, 0, (size_t)s->m_all * sizeof(double));
        for (k = 0; k < s->m; ++k) s->lam_all[s->kept[k]] = lam[k];
        lw = s->lam_all;
    }
    if (geometric && s->m > 0) {
        s->plan(s->plan_data, q, v, s->g_scratch, s->gam, s->G_scratch, s->plan_work);
        s->geometric(s->geometric_data, q, v, lw, K, Hw);
    }
    if (s->kept)
        for (k = 0; k < s->n_H_take; ++k) H[k] = s->H_all[s->H_take[k]];
}

/* The scaled Newton residual of the implicit integrators' sparse path at the iterate
   (dq, lam~, mu) (mbdcore.dae.index3, module docstring), for a context with sparse G
   (its pattern G_indptr, G_indices) and the constant M in CSR:

     q = q_ref + dq,  w = dq - G^T mu (GGL; dq at index 3),  v = v_ref + c_v w,
     x = x_ref + w,   r = [M x + G^T lam~ - F(q, v)/c_a;  g;  (G v + g_t)/c_v (GGL)]

   Outputs q, v, x, w (n each), the values of G, and r (n + m, or n + 2 m with GGL).
   After the solve's prepare. */
TERMS_API void system_residual_sparse(const void *ctx, const double *q_ref,
                                      const double *v_ref, const double *x_ref,
                                      const double *dq, const double *lam, const double *mu,
                                      double cv, double ca, int ggl, double *q, double *v,
                                      double *x, double *w, double *G, double *r)
{
    const system_terms_t *s = (const system_terms_t *)ctx;
    const int n = s->n, m = s->m;
    double *r1 = r, *rg = r + n, *rv = r + n + m, *gt = ggl ? rv : NULL;
    int i, k;
    for (i = 0; i < n; ++i) q[i] = q_ref[i] + dq[i];
    /* g into r's second block, g_t into the third (scaled below) or the F scratch */
    system_constraints(ctx, q, rg, G, gt != NULL ? gt : s->F_scratch);
    memcpy(w, dq, (size_t)n * sizeof(double));
    memset(r1, 0, (size_t)n * sizeof(double));
    for (i = 0; i < m; ++i)
        for (k = s->G_indptr[i]; k < s->G_indptr[i + 1]; ++k) {
            if (ggl) w[s->G_indices[k]] -= G[k] * mu[i];
            r1[s->G_indices[k]] += G[k] * lam[i];
        }
    for (i = 0; i < n; ++i) {
        v[i] = v_ref[i] + cv * w[i];
        x[i] = x_ref[i] + w[i];
    }
    system_forces(ctx, q, v, s->F_scratch);
    for (i = 0; i < n; ++i) {
        double mx = 0.0;
        for (k = s->M_indptr[i]; k < s->M_indptr[i + 1]; ++k)
            mx += s->M_data[k] * x[s->M_indices[k]];
        r1[i] += mx - s->F_scratch[i] / ca;
    }
    if (ggl)
        for (i = 0; i < m; ++i) {
            double gv = rv[i];           /* g_t */
            for (k = s->G_indptr[i]; k < s->G_indptr[i + 1]; ++k)
                gv += G[k] * v[s->G_indices[k]];
            rv[i] = gv / cv;
        }
}
