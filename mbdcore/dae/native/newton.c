/*
 * Newton iterations of one implicit stage of the index-3 / GGL integrators
 * (mbdcore.dae.index3) with kept LU factors, in C: the loop of Index3Integrator._newton
 * for a problem that gives its residual terms as compiled functions (constraint_fn, force_fn), so an
 * iteration costs the terms and two triangular solves instead of tens of microseconds
 * of Python.  The Python loop stays the reference and keeps every decision about the
 * iteration matrix: this function returns at the first iteration after which the
 * Python loop would do anything but go on (converged, slow or no contraction, kept
 * factors that need more iterations than fresh ones took, the iteration limit, a
 * non-finite residual or correction), with the quantities the Python loop needs.
 *
 * Scaled unknowns as in index3.py: dq = q - q_ref, x = q''/c_a = x_ref + w,
 * lam_s = lambda/c_a, mu (GGL), w = dq - G^T mu (GGL) or dq (index 3),
 * v = v_ref + c_v w; residual [M x + G^T lam_s - F/c_a ; g ; (G v + g_t)/c_v (GGL)].
 */
#include <math.h>
#include <string.h>

#include "table_layout.h"

/* marks what Python and other kernels call (mbdcore.cbuild binds it) */
#ifndef NEWTON_API
#define NEWTON_API
#endif

/* the problem's compiled terms: constraint rows g, their Jacobian G (m x n, row-major)
   and rate g_t at q; applied forces F at (q, v) */
typedef void (*constraint_fn)(const void *ctx, const double *q, double *g, double *G,
                              double *gt);
typedef void (*force_fn)(const void *ctx, const double *q, const double *v, double *F);

enum { CONVERGED = 0, EVENT = 1, LIMIT = 2, BAD_RESIDUAL = 3, BAD_STEP = 4, RESIDUAL = 5 };

/* The problem and the iteration's settings (index3.py fills the struct by name through
   this declaration): n coordinates, m constraints, ggl 1 for the GGL form (N = n + m
   + ggl m unknowns); the compiled terms and their context; M (n x n, row-major,
   constant); lu the N x N LAPACK getrf factors, column-major (NULL: the residual's
   terms only (G, w, v), no step), piv their 0-based row interchanges; the reference
   state and the scaling; tol, theta_refresh, modified (1: modified Newton), kept
   (factors kept from an earlier solve), its_fresh (iterations fresh factors took), the
   iteration limit; work 5 n + m n + 3 m + 2 N doubles. */
#define NEWTON_LAYOUT(X)                                                                   \
    X(INT, n, 1) X(INT, m, 1) X(INT, ggl, 1)                                               \
    X(FN, constraints, constraint_fn) X(FN, forces, force_fn) X(ADDRESS, terms_ctx, 1)     \
    X(ARRAY, M, n * n) X(ARRAY, lu, (n + m + ggl * m) * (n + m + ggl * m))                 \
    X(INTS, piv, n + m + ggl * m)                                                          \
    X(ARRAY, q_ref, n) X(ARRAY, v_ref, n) X(ARRAY, x_ref, n)                               \
    X(REAL, cv, 1) X(REAL, ca, 1) X(REAL, tol, 1) X(REAL, theta_refresh, 1)                \
    X(INT, modified, 1) X(INT, kept, 1) X(INT, its_fresh, 1) X(INT, max_iterations, 1)     \
    X(WORK, work, 5 * n + m * n + 3 * m + 2 * (n + m + ggl * m))

typedef struct {
    NEWTON_LAYOUT(TABLE_MEMBER)
} newton_t;

/* the state carried between the Python loop and this one: in, the index of the next
   iteration; out, of the last; out, the iterations made here; the increments' norms and
   the contraction rate (nu_prev, theta < 0: none) */
#define NEWTON_STATE_LAYOUT(X)                                                             \
    X(INT, it, 1) X(INT, done, 1) X(REAL, nu, 1) X(REAL, nu_prev, 1) X(REAL, theta, 1)

typedef struct {
    NEWTON_STATE_LAYOUT(TABLE_MEMBER)
} newton_state_t;

static double max_abs(const double *x, int n)
{
    double a = 0.0;
    int i;
    for (i = 0; i < n; ++i) {
        double b = fabs(x[i]);
        if (b > a) a = b;
    }
    return a;
}

/* x := A^-1 x with the getrf factors (column-major, unit lower L, pivots 0-based) */
static void lu_solve(int N, const double *lu, const int *piv, double *x)
{
    int i, j;
    for (i = 0; i < N; ++i) {
        int p = piv[i];
        if (p != i) { double t = x[i]; x[i] = x[p]; x[p] = t; }
    }
    for (j = 0; j < N; ++j) {
        double xj = x[j];
        if (xj != 0.0)
            for (i = j + 1; i < N; ++i) x[i] -= lu[(size_t)j * N + i] * xj;
    }
    for (j = N - 1; j >= 0; --j) {
        double xj = (x[j] /= lu[(size_t)j * N + j]);
        if (xj != 0.0)
            for (i = 0; i < j; ++i) x[i] -= lu[(size_t)j * N + i] * xj;
    }
}

/* dq (n), lam_s (m), mu (m if GGL) updated in place; G (m x n) and w (n), v (n) of the
   last iteration's residual returned for the caller's bookkeeping */
NEWTON_API int newton_iterate(const newton_t *s, newton_state_t *st, double *dq, double *lam_s,
                   double *mu, double *G, double *w, double *v)
{
    const int n = s->n, m = s->m, k = s->ggl ? 2 * m : m, N = n + k;
    double *q = s->work, *x = q + n, *F = x + n, *dw = F + n, *r = dw + n;
    double *g = r + N, *gt = g + m, *step = gt + m;
    const double eps = 2.220446049250313e-16;
    int i, j;
    (void)step;
    for (;;) {
        const int it = st->it;
        double q_scale, v_scale, tol_q, tol_w, nu, theta;
        for (i = 0; i < n; ++i) q[i] = s->q_ref[i] + dq[i];
        s->constraints(s->terms_ctx, q, g, G, gt);
        for (i = 0; i < n; ++i) w[i] = dq[i];
        if (s->ggl)
            for (j = 0; j < m; ++j) {
                const double *Gj = G + (size_t)j * n, mj = mu[j];
                if (mj != 0.0)
                    for (i = 0; i < n; ++i) w[i] -= Gj[i] * mj;
            }
        for (i = 0; i < n; ++i) {
            v[i] = s->v_ref[i] + s->cv * w[i];
            x[i] = s->x_ref[i] + w[i];
        }
        s->forces(s->terms_ctx, q, v, F);
        /* residual */
        for (i = 0; i < n; ++i) {
            const double *Mi = s->M + (size_t)i * n;
            double a = 0.0;
            for (j = 0; j < n; ++j) a += Mi[j] * x[j];
            r[i] = a - F[i] / s->ca;
        }
        for (j = 0; j < m; ++j) {
            const double *Gj = G + (size_t)j * n, lj = lam_s[j];
            double gv = 0.0;
            for (i = 0; i < n; ++i) {
                r[i] += Gj[i] * lj;
                gv += Gj[i] * v[i];
            }
            r[n + j] = g[j];
            if (s->ggl) r[n + m + j] = (gv + gt[j]) / s->cv;
        }
        {
            double sum = 0.0;
            for (i = 0; i < N; ++i) sum += r[i];
            if (!isfinite(sum)) return BAD_RESIDUAL;
        }
        if (s->lu == NULL) return RESIDUAL;
        for (i = 0; i < N; ++i) r[i] = -r[i];
        lu_solve(N, s->lu, s->piv, r);            /* r is now the Newton correction */
        st->done += 1;
        {
            double sum = 0.0;
            for (i = 0; i < N; ++i) sum += r[i];
            if (!isfinite(sum)) return BAD_STEP;
        }
        for (i = 0; i < n; ++i) { dq[i] += r[i]; dw[i] = r[i]; }
        for (j = 0; j < m; ++j) lam_s[j] += r[n + j];
        if (s->ggl)
            for (j = 0; j < m; ++j) {
                const double *Gj = G + (size_t)j * n, sj = r[n + m + j];
                mu[j] += sj;
                if (sj != 0.0)
                    for (i = 0; i < n; ++i) dw[i] -= Gj[i] * sj;
            }
        q_scale = fmax(1.0, max_abs(q, n));
        v_scale = fmax(1.0, max_abs(v, n));
        tol_q = s->tol * q_scale;
        tol_w = fmax(s->tol * v_scale / s->cv, 16.0 * eps * q_scale);
        nu = fmax(max_abs(r, n) / tol_q, max_abs(dw, n) / tol_w);
        if (!isfinite(nu)) { st->nu = nu; return BAD_STEP; }
        theta = (st->nu_prev < 0.0 || st->nu_prev == 0.0) ? -1.0 : nu / st->nu_prev;
        st->nu = nu;
        st->theta = theta;
        if (nu <= 0.1 || (theta >= 0.0 && theta < 1.0 && theta / (1.0 - theta) * nu <= 1.0))
            return CONVERGED;
        if (theta >= 1.0 || (s->modified && theta > s->theta_refresh))
            return EVENT;
        if (s->kept && it + 1 >= s->its_fresh)
            return EVENT;
        if (it + 1 >= s->max_iterations)
            return LIMIT;
        st->nu_prev = nu;
        st->it = it + 1;
    }
}
