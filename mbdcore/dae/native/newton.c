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
   iteration limit; work 5 n + m n + 3 m + 2 N doubles.  sparse: NULL (the dense path
   above), or the sparse_newton_t below: then terms_ctx is a context of the terms that
   writes G (and K, C, H) as the values of CSR patterns fixed per topology, M and lu
   are not used (the factors are the sparse_newton_t's), and every G a function here
   takes or gives is such values. */
#define NEWTON_LAYOUT(X)                                                                   \
    X(INT, n, 1) X(INT, m, 1) X(INT, ggl, 1)                                               \
    X(FN, constraints, constraint_fn) X(FN, forces, force_fn) X(ADDRESS, terms_ctx, 1)     \
    X(ARRAY, M, n * n) X(ARRAY, lu, (n + m + ggl * m) * (n + m + ggl * m))                 \
    X(INTS, piv, n + m + ggl * m)                                                          \
    X(ARRAY, q_ref, n) X(ARRAY, v_ref, n) X(ARRAY, x_ref, n)                               \
    X(REAL, cv, 1) X(REAL, ca, 1) X(REAL, tol, 1) X(REAL, theta_refresh, 1)                \
    X(INT, modified, 1) X(INT, kept, 1) X(INT, its_fresh, 1) X(INT, max_iterations, 1)     \
    X(WORK, work, 5 * n + m * n + 3 * m + 2 * (n + m + ggl * m)) X(ADDRESS, sparse, 1)

typedef struct {
    NEWTON_LAYOUT(TABLE_MEMBER)
} newton_t;

/* ---------------------------------------------------------------------------------
 * The sparse path (newton_t.sparse): the Newton matrix assembled into a CSC pattern
 * fixed once per topology and factored by sparse_lu.c (through its functions'
 * pointers, as the terms are called), its fill-reducing ordering and a reference pivot
 * order with the patterns of L and U computed once, before the steps
 * (mbdcore.dae.sparse_step), so that a factorisation is a refactorisation on that
 * order: no search, no allocation, and the same factors for the same matrix whatever
 * was factored before (an FMU's saved state continues bit for bit).  A kept pivot that
 * fails the threshold test is replaced by a fresh factorisation for that matrix only.
 * --------------------------------------------------------------------------------- */

/* system_terms.c's system_residual_sparse: the scaled residual with G as CSR values */
typedef void (*sparse_residual_fn)(const void *ctx, const double *q_ref,
                                   const double *v_ref, const double *x_ref,
                                   const double *dq, const double *lam, const double *mu,
                                   double cv, double ca, int ggl, double *q, double *v,
                                   double *x, double *w, double *G, double *r);
/* sparse_lu.c's slu_factor, slu_refactor, slu_solve */
typedef int (*slu_factor_fn)(int n, const int *Ap, const int *Ai, const double *Ax,
                             const int *Q, double tol, int *Lp, int *Li, double *Lx,
                             int lroom, int *Up, int *Ui, double *Ux, int uroom,
                             double *Udiag, int *prow, int *iwork, double *x, int *info);
typedef int (*slu_refactor_fn)(int n, const int *Ap, const int *Ai, const double *Ax,
                               const int *Q, double tol, const int *Lp, const int *Li,
                               double *Lx, const int *Up, const int *Ui, double *Ux,
                               double *Udiag, const int *prow, double *x, int *info);
typedef void (*slu_solve_fn)(int n, const int *Q, const int *Lp, const int *Li,
                             const double *Lx, const int *Up, const int *Ui,
                             const double *Ux, const double *Udiag, const int *prow,
                             double *b, int nrhs, double *work);

/* One sparse matrix of the step: N x N, its CSC pattern (Ap, Ai, nnz entries) and
   fill-reducing order Q; its values made as Ax[term_at[t]] += term_w[t] a b with a the
   scaled block value a = scale(term_a) values[term_a] and b likewise for term_b, or 1
   where term_b < 0 (the blocks' values: sparse_newton_t.values, in segments M, C, K, G,
   H); the reference pivot order and patterns of L (ref_lnz entries) and U (ref_unz),
   room lroom, uroom for a fresh factorisation's; fresh[0] 1 while the factors in use
   are a fresh factorisation's (Lp ... prow), 0 the reference's. */
#define SPARSE_MATRIX_LAYOUT(X)                                                            \
    X(INT, N, 1) X(INT, nnz, 1) X(INTS, Ap, N + 1) X(INTS, Ai, nnz) X(INTS, Q, N)          \
    X(INT, n_terms, 1) X(INTS, term_at, n_terms) X(INTS, term_a, n_terms)                  \
    X(INTS, term_b, n_terms) X(ARRAY, term_w, n_terms)                                     \
    X(INT, ref_lnz, 1) X(INT, ref_unz, 1) X(INT, lroom, 1) X(INT, uroom, 1)                \
    X(INTS, ref_Lp, N + 1) X(INTS, ref_Li, ref_lnz) X(INTS, ref_Up, N + 1)                 \
    X(INTS, ref_Ui, ref_unz) X(INTS, ref_prow, N)                                          \
    X(WORK, Ax, nnz) X(WORK, Lx, lroom) X(WORK, Ux, uroom) X(WORK, Udiag, N)               \
    X(IWORK, Lp, N + 1) X(IWORK, Li, lroom) X(IWORK, Up, N + 1) X(IWORK, Ui, uroom)        \
    X(IWORK, prow, N) X(IWORK, iwork, 6 * N) X(IWORK, info, 3) X(IWORK, fresh, 1)          \
    X(WORK, x, N) X(WORK, y, N)

typedef struct {
    SPARSE_MATRIX_LAYOUT(TABLE_MEMBER)
} sparse_matrix_t;

/* The sparse path of a newton_t: its sparse residual, sparse_lu.c's functions and pivot
   threshold tol; values: the blocks' values M (constant), C, K, G, H (nM ... nH of
   them, the patterns of the terms' sparse context) with the CSR patterns of G and H;
   step: the Newton matrix of alpha_step, start: [[M, G^T], [G, 0]] of alpha_start. */
#define SPARSE_NEWTON_LAYOUT(X)                                                            \
    X(INT, n, 1) X(INT, m, 1) X(INT, ggl, 1) X(FN, residual, sparse_residual_fn)           \
    X(FN, factor, slu_factor_fn) X(FN, refactor, slu_refactor_fn) X(FN, solve, slu_solve_fn) \
    X(REAL, tol, 1)                                                                        \
    X(INT, nM, 1) X(INT, nC, 1) X(INT, nK, 1) X(INT, nG, 1) X(INT, nH, 1)                  \
    X(INTS, G_indptr, m + 1) X(INTS, G_indices, nG)                                        \
    X(INTS, H_indptr, m + 1) X(INTS, H_indices, nH)                                        \
    X(WORK, values, nM + nC + nK + nG + nH)                                                \
    X(ADDRESS, step, 1) X(ADDRESS, start, 1)

typedef struct {
    SPARSE_NEWTON_LAYOUT(TABLE_MEMBER)
} sparse_newton_t;

/* the blocks' segments in sparse_newton_t.values */
enum { SEG_M = 0, SEG_C = 1, SEG_K = 2, SEG_G = 3, SEG_H = 4, N_SEG = 5 };

static double *segment(const sparse_newton_t *sp, int which)
{
    const int size[N_SEG] = {sp->nM, sp->nC, sp->nK, sp->nG, sp->nH};
    double *at = sp->values;
    int k;
    for (k = 0; k < which; ++k) at += size[k];
    return at;
}

/* A's values from the blocks' (module's sparse section), segment k scaled by
   scale[k] */
static void sparse_assemble(const sparse_newton_t *sp, const sparse_matrix_t *A,
                            const double *scale)
{
    const int end[N_SEG] = {sp->nM, sp->nM + sp->nC, sp->nM + sp->nC + sp->nK,
                            sp->nM + sp->nC + sp->nK + sp->nG,
                            sp->nM + sp->nC + sp->nK + sp->nG + sp->nH};
    const double *val = sp->values;
    int t;
    memset(A->Ax, 0, (size_t)A->nnz * sizeof(double));
    for (t = 0; t < A->n_terms; ++t) {
        const int a = A->term_a[t], b = A->term_b[t];
        int ka = 0, kb = 0;
        double x;
        while (a >= end[ka]) ++ka;
        x = A->term_w[t] * scale[ka] * val[a];
        if (b >= 0) {
            while (b >= end[kb]) ++kb;
            x *= scale[kb] * val[b];
        }
        A->Ax[A->term_at[t]] += x;
    }
}

/* the test of the dense path: a pivot at most 1e-14 of the largest is singular */
static int pivots_singular(int N, const double *Udiag)
{
    double dmax = 0.0, dmin = HUGE_VAL;
    int k;
    for (k = 0; k < N; ++k) {
        const double d = fabs(Udiag[k]);
        if (d > dmax) dmax = d;
        if (d < dmin) dmin = d;
    }
    return N > 0 && dmin <= 1e-14 * dmax;
}

/* A assembled and factored: refactored on the reference pivot order, or afresh where a
   kept pivot fails the threshold test there; 1 if A is singular or not finite */
static int sparse_factor(const sparse_newton_t *sp, const sparse_matrix_t *A,
                         const double *scale)
{
    int code;
    sparse_assemble(sp, A, scale);
    code = sp->refactor(A->N, A->Ap, A->Ai, A->Ax, A->Q, sp->tol, A->ref_Lp, A->ref_Li,
                        A->Lx, A->ref_Up, A->ref_Ui, A->Ux, A->Udiag, A->ref_prow, A->x,
                        A->info);
    A->fresh[0] = 0;
    if (code == 0 && !pivots_singular(A->N, A->Udiag)) return 0;
    if (code == 2) return 1;                          /* SLU_NONFINITE */
    code = sp->factor(A->N, A->Ap, A->Ai, A->Ax, A->Q, sp->tol, A->Lp, A->Li, A->Lx,
                      A->lroom, A->Up, A->Ui, A->Ux, A->uroom, A->Udiag, A->prow,
                      A->iwork, A->x, A->info);
    A->fresh[0] = 1;
    return code != 0 || pivots_singular(A->N, A->Udiag);
}

/* b := A^-1 b with the factors in use */
static void sparse_solve(const sparse_newton_t *sp, const sparse_matrix_t *A, double *b)
{
    const int f = A->fresh[0];
    sp->solve(A->N, A->Q, f ? A->Lp : A->ref_Lp, f ? A->Li : A->ref_Li, A->Lx,
              f ? A->Up : A->ref_Up, f ? A->Ui : A->ref_Ui, A->Ux, A->Udiag,
              f ? A->prow : A->ref_prow, b, 1, A->y);
}

/* out += alpha G^T y: G dense (m x n, row-major) or, on the sparse path, CSR values */
static void add_GT(const newton_t *s, const double *G, const double *y, double alpha,
                   double *out)
{
    const int n = s->n, m = s->m;
    int i, j, k;
    if (s->sparse != NULL) {
        const sparse_newton_t *sp = (const sparse_newton_t *)s->sparse;
        for (j = 0; j < m; ++j)
            for (k = sp->G_indptr[j]; k < sp->G_indptr[j + 1]; ++k)
                out[sp->G_indices[k]] += alpha * G[k] * y[j];
        return;
    }
    for (j = 0; j < m; ++j) {
        const double *Gj = G + (size_t)j * n, yj = alpha * y[j];
        if (yj != 0.0)
            for (i = 0; i < n; ++i) out[i] += Gj[i] * yj;
    }
}

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

/* The residual of the dense path at the iterate into s->work (q, x, F, r, g, g_t in
   the order newton_iterate reads them), with G, w, v */
static void dense_residual(const newton_t *s, const double *dq, const double *lam_s,
                           const double *mu, double *G, double *w, double *v)
{
    const int n = s->n, m = s->m, N = n + (s->ggl ? 2 * m : m);
    double *q = s->work, *x = q + n, *F = x + n, *r = F + 2 * n, *g = r + N, *gt = g + m;
    int i, j;
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
}

/* dq (n), lam_s (m), mu (m if GGL) updated in place; G (m x n) and w (n), v (n) of the
   last iteration's residual returned for the caller's bookkeeping */
NEWTON_API int newton_iterate(const newton_t *s, newton_state_t *st, double *dq, double *lam_s,
                   double *mu, double *G, double *w, double *v)
{
    const int n = s->n, m = s->m, k = s->ggl ? 2 * m : m, N = n + k;
    double *q = s->work, *x = q + n, *dw = x + 2 * n, *r = dw + n;   /* F between */
    const double eps = 2.220446049250313e-16;
    int i, j;
    for (;;) {
        const int it = st->it;
        double q_scale, v_scale, tol_q, tol_w, nu, theta;
        if (s->sparse != NULL)         /* the same residual with G, M sparse, one call */
            ((const sparse_newton_t *)s->sparse)->residual(
                s->terms_ctx, s->q_ref, s->v_ref, s->x_ref, dq, lam_s, mu, s->cv, s->ca,
                s->ggl, q, v, x, w, G, r);
        else
            dense_residual(s, dq, lam_s, mu, G, w, v);
        {
            double sum = 0.0;
            for (i = 0; i < N; ++i) sum += r[i];
            if (!isfinite(sum)) return BAD_RESIDUAL;
        }
        if (s->lu == NULL) return RESIDUAL;
        for (i = 0; i < N; ++i) r[i] = -r[i];
        if (s->sparse != NULL)                     /* r is now the Newton correction */
            sparse_solve((const sparse_newton_t *)s->sparse, (const sparse_matrix_t *)
                         ((const sparse_newton_t *)s->sparse)->step, r);
        else
            lu_solve(N, s->lu, s->piv, r);
        st->done += 1;
        {
            double sum = 0.0;
            for (i = 0; i < N; ++i) sum += r[i];
            if (!isfinite(sum)) return BAD_STEP;
        }
        for (i = 0; i < n; ++i) { dq[i] += r[i]; dw[i] = r[i]; }
        for (j = 0; j < m; ++j) lam_s[j] += r[n + j];
        if (s->ggl) {
            for (j = 0; j < m; ++j) mu[j] += r[n + m + j];
            add_GT(s, G, r + n + m, -1.0, dw);
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

/* ---------------------------------------------------------------------------------
 * One whole step of generalized-alpha (Arnold-Bruls form; HHT and Newmark as its
 * parameters) in C, for a problem with compiled residual terms and compiled Newton
 * matrix blocks: the predictor, the Newton iterations above (newton_iterate) with the
 * matrix built, assembled and factored here, and the update of the history, as
 * GeneralizedAlphaScheme._step of index3.py.  The matrix policy is simpler than the
 * Python loop's (which stays the reference): the blocks are built and factored at the
 * first iteration of every step and again at an iterate where the contraction is
 * slower than theta_refresh; a solve that diverges on fresh blocks, reaches the
 * iteration limit or meets a non-finite residual, correction or singular matrix fails
 * (the history is then left as it was: every output is written only on success).
 * Nothing is allocated: the struct's work arrays and the caller's piv.
 * --------------------------------------------------------------------------------- */

/* the blocks of the Newton matrix at (q, v, lam) (system_terms.c's system_jacobian):
   K = -dF/dq + d(G^T lam)/dq, C = -dF/dv (n x n), H = d(G v)/dq (m x n), dense
   row-major, the constraint curvature terms only if geometric */
typedef void (*jacobian_fn)(const void *ctx, const double *q, const double *v,
                            const double *lam, int geometric, double *K, double *C,
                            double *H);

/* The scheme and its scratch: n, m, ggl as in the newton_t it steps with (checked);
   alpha_m, alpha_f, beta, gamma the scheme's parameters; the blocks' function
   (called with the newton_t's terms_ctx) and whether it adds the curvature terms; K, C,
   H the blocks, lu the factors (column-major), work 7 n + 4 m + m n scratch; keep 1:
   the factors are kept across steps while the iterations contract on them (the
   caller's guess then holds where they were made, alpha_step), factored: where the
   factors in memory were made. */
#define ALPHA_STEP_LAYOUT(X)                                                               \
    X(INT, n, 1) X(INT, m, 1) X(INT, ggl, 1)                                               \
    X(REAL, alpha_m, 1) X(REAL, alpha_f, 1) X(REAL, beta, 1) X(REAL, gamma, 1)             \
    X(FN, jacobian, jacobian_fn) X(INT, geometric, 1)                                      \
    X(WORK, K, n * n) X(WORK, C, n * n) X(WORK, H, m * n)                                  \
    X(WORK, lu, (n + m + ggl * m) * (n + m + ggl * m))                                     \
    X(WORK, work, 7 * n + 4 * m + m * n) X(INT, keep, 1) X(WORK, factored, 1 + 2 * n + m)

typedef struct {
    ALPHA_STEP_LAYOUT(TABLE_MEMBER)
} alpha_step_t;

/* the outcome of alpha_step: 0 a step taken, else why not */
enum { STEP_OK = 0, STEP_DIVERGED = 1, STEP_LIMIT = 2, STEP_BAD_RESIDUAL = 3,
       STEP_BAD_CORRECTION = 4, STEP_SINGULAR = 5, STEP_BAD_SETUP = 6 };

/* what alpha_step reports (report[ALPHA_REPORT_SIZE]) */
enum { REPORT_ITERATIONS = 0, REPORT_FACTORIZATIONS = 1, REPORT_NU = 2,
       ALPHA_REPORT_SIZE = 3 };

/* LU factors with partial pivoting of the N x N column-major A in place (LAPACK's
   getf2: the first largest pivot of each column; piv 0-based); 1 if A is singular or
   not finite (a pivot below 1e-14 of the largest, the test index3.py applies to
   getrf's factors) */
static int lu_factor(int N, double *A, int *piv)
{
    double dmax = 0.0, dmin = HUGE_VAL;
    int i, j, k;
    for (k = 0; k < N; ++k) {
        double *ck = A + (size_t)k * N, best = -1.0, pivot;
        int p = k;
        for (i = k; i < N; ++i)
            if (fabs(ck[i]) > best) { best = fabs(ck[i]); p = i; }
        piv[k] = p;
        if (!isfinite(best)) return 1;
        if (p != k)
            for (j = 0; j < N; ++j) {
                double *cj = A + (size_t)j * N, t = cj[k];
                cj[k] = cj[p];
                cj[p] = t;
            }
        pivot = ck[k];
        if (pivot == 0.0) return 1;
        for (i = k + 1; i < N; ++i) ck[i] /= pivot;
        for (j = k + 1; j < N; ++j) {
            double *cj = A + (size_t)j * N, f = cj[k];
            if (f != 0.0)
                for (i = k + 1; i < N; ++i) cj[i] -= ck[i] * f;
        }
        if (fabs(pivot) > dmax) dmax = fabs(pivot);
        if (fabs(pivot) < dmin) dmin = fabs(pivot);
    }
    return N > 0 && dmin <= 1e-14 * dmax;
}

/* The scaled iteration matrix (index3.py, Index3Integrator._assemble) into p->lu,
   column-major, from the blocks K, C, H at scaling (cv, ca) and the iterate's G:
   S = M + (cv C + K)/ca, D = M + (cv/ca) C;
   [[S, G^T, -D G^T], [G, 0, 0], [G + H/cv, 0, -G G^T]] (the first two blocks at index 3) */
static void assemble_matrix(const newton_t *s, const alpha_step_t *p, const double *G,
                            double cv, double ca)
{
    const int n = s->n, m = s->m, N = n + (s->ggl ? 2 * m : m);
    double *J = p->lu;
    int i, j, k;
    memset(J, 0, (size_t)N * N * sizeof(double));
    for (i = 0; i < n; ++i)
        for (j = 0; j < n; ++j) {
            const size_t ij = (size_t)i * n + j;
            const double D = s->M[ij] + (cv / ca) * p->C[ij];
            J[(size_t)j * N + i] = D + (1.0 / ca) * p->K[ij];
        }
    for (k = 0; k < m; ++k)
        for (i = 0; i < n; ++i) {
            J[(size_t)(n + k) * N + i] = G[(size_t)k * n + i];    /* G^T */
            J[(size_t)i * N + n + k] = G[(size_t)k * n + i];      /* G */
        }
    if (!s->ggl) return;
    for (k = 0; k < m; ++k) {
        const double *Gk = G + (size_t)k * n;
        for (i = 0; i < n; ++i) {
            double dg = 0.0;                                   /* (D G^T)[i, k] */
            for (j = 0; j < n; ++j)
                dg += (s->M[(size_t)i * n + j] + (cv / ca) * p->C[(size_t)i * n + j]) * Gk[j];
            J[(size_t)(n + m + k) * N + i] = -dg;
            J[(size_t)i * N + n + m + k] = Gk[i] + p->H[(size_t)k * n + i] / cv;
        }
        for (j = 0; j < m; ++j) {
            const double *Gj = G + (size_t)j * n;
            double gg = 0.0;
            for (i = 0; i < n; ++i) gg += Gk[i] * Gj[i];
            J[(size_t)(n + m + j) * N + n + m + k] = -gg;
        }
    }
}

/* One step of h [s] from (q, v) with the history (a, qdd, lam): on success (0) q, v
   are the state at t + h, a, qdd, lam the new history and guess (dq, mu of this
   solve, then the h they were made with; zeros: none) the next solve's starting guess,
   as index3.py keeps it; otherwise none of them is changed.  s: the Newton problem, its
   terms prepared for t + h by the caller; p: the scheme; piv n + m + ggl m ints;
   report (ALPHA_REPORT_SIZE): iterations, factorizations and the last increment's norm
   in units of the tolerance, also on failure. */
/* The Newton matrix at (q, v, lam) [the blocks' state] for the step's scaling (cv, ca),
   with the constraints' G at q already where the path keeps it (dense G, or the G
   segment), assembled and factored into the path's factors; 1 if singular. */
static int build_matrix(const newton_t *s, const alpha_step_t *p, const double *q,
                        const double *v, const double *lam, const double *G, double cv,
                        double ca, int *piv)
{
    const sparse_newton_t *sp = (const sparse_newton_t *)s->sparse;
    if (sp != NULL) {
        /* S = M + (cv C + K)/ca, D G^T, G + H/cv, G G^T: the segments' scales */
        const double scale[N_SEG] = {1.0, cv / ca, 1.0 / ca, 1.0, 1.0 / cv};
        p->jacobian(s->terms_ctx, q, v, lam, p->geometric, segment(sp, SEG_K),
                    segment(sp, SEG_C), segment(sp, SEG_H));
        return sparse_factor(sp, (const sparse_matrix_t *)sp->step, scale);
    }
    p->jacobian(s->terms_ctx, q, v, lam, p->geometric, p->K, p->C, p->H);
    assemble_matrix(s, p, G, cv, ca);
    return lu_factor(s->n + (s->ggl ? 2 * s->m : s->m), p->lu, piv);
}

/* Where the factors in memory were made (p->factored) and where the state says the
   kept ones were (basis): [h, q (n), v (n), lambda (m)], h = 0 none.  0: no kept
   factors for a step of h; 1: those in memory are they; else they are made again at
   the basis (a state set, another instance), the same factors bit for bit; -1 if that
   fails. */
static int kept_factors(const newton_t *s, const alpha_step_t *p, const double *basis,
                        double h, double cv, double ca, double *G, int *piv)
{
    const int n = s->n, m = s->m, size = 1 + 2 * n + m;
    double *g = s->work + 4 * n + n + (s->ggl ? 2 * m : m), *gt = g + m;
    const sparse_newton_t *sp = (const sparse_newton_t *)s->sparse;
    if (!p->keep || basis[0] != h) return 0;
    if (memcmp(basis, p->factored, (size_t)size * sizeof(double)) == 0) return 1;
    if (m > 0) s->constraints(s->terms_ctx, basis + 1, g, sp != NULL ? segment(sp, SEG_G) : G, gt);
    if (build_matrix(s, p, basis + 1, basis + 1 + n, basis + 1 + 2 * n, G, cv, ca, piv)) {
        p->factored[0] = 0.0;
        return -1;
    }
    memcpy(p->factored, basis, (size_t)size * sizeof(double));
    return 1;
}

/* One step of h [s] from (q, v) with the history (a, qdd, lam): on success (0) q, v
   are the state at t + h, a, qdd, lam the new history and guess (dq, mu of this
   solve, then the h they were made with; zeros: none) the next solve's starting guess,
   as index3.py keeps it, followed where the scheme keeps factors across steps
   (p->keep) by the point they were made at (kept_factors); otherwise none of them is
   changed.  s: the Newton problem, its terms prepared for t + h by the caller; p: the
   scheme; piv n + m + ggl m ints; report (ALPHA_REPORT_SIZE): iterations,
   factorizations and the last increment's norm in units of the tolerance, also on
   failure.  With kept factors a solve that fails on them is made again from the start
   on fresh ones. */
NEWTON_API int alpha_step(const newton_t *s, const alpha_step_t *p, double h, double *q,
                          double *v, double *a, double *qdd, double *lam, double *guess,
                          int *piv, double *report)
{
    const int n = s->n, m = s->m, k_mu = s->ggl ? m : 0;
    const double am = p->alpha_m, af = p->alpha_f, b = p->beta, g = p->gamma;
    double cv, ca, *basis = guess + n + k_mu + 1;
    double *q_ref = p->work, *v_ref = q_ref + n, *x_ref = v_ref + n, *a_pred = x_ref + n;
    double *dq = a_pred + n, *w = dq + n, *vi = w + n, *lam_s = vi + n, *mu = lam_s + m;
    double *lam_i = mu + m, *G = lam_i + m;
    const sparse_newton_t *sp = (const sparse_newton_t *)s->sparse;
    newton_t local = *s;
    newton_state_t st;
    int i, j, code, build, kept, attempt, fresh, polished, rebased = 0, status = STEP_OK;
    report[REPORT_ITERATIONS] = report[REPORT_FACTORIZATIONS] = 0.0;
    report[REPORT_NU] = 0.0;
    if (p->n != n || p->m != m || p->ggl != s->ggl || !(h > 0.0) || !isfinite(h) ||
        (sp != NULL && (sp->n != n || sp->m != m || sp->ggl != s->ggl)))
        return STEP_BAD_SETUP;
    if (sp != NULL) G = segment(sp, SEG_G);       /* G's CSR values */
    cv = g / (b * h);
    ca = (1.0 - am) / ((1.0 - af) * b * h * h);
    for (i = 0; i < n; ++i) {
        a_pred[i] = (qdd[i] - am * a[i]) / (1.0 - am);
        q_ref[i] = q[i] + h * v[i] + h * h * ((0.5 - b) * a[i] + b * a_pred[i]);
        v_ref[i] = v[i] + h * ((1.0 - g) * a[i] + g * a_pred[i]);
        x_ref[i] = qdd[i] / ca;
    }
    local.q_ref = q_ref;
    local.v_ref = v_ref;
    local.x_ref = x_ref;
    local.cv = cv;
    local.ca = ca;
    local.modified = 1;
    local.kept = 0;
    local.its_fresh = 0;
    local.piv = piv;
    kept = kept_factors(s, p, basis, h, cv, ca, G, piv);
    if (kept < 0) return STEP_SINGULAR;
    /* attempt 0 on the kept factors, attempt 1 (or the only one) on fresh ones */
    for (attempt = kept ? 0 : 1; attempt < 2; ++attempt) {
        const int same = guess[n + k_mu] == h;      /* the last solve's (dq, mu) if made */
        for (i = 0; i < n; ++i) dq[i] = same ? guess[i] : 0.0;   /* with this h */
        for (j = 0; j < m; ++j) {
            lam_s[j] = lam[j] / ca;
            mu[j] = same && j < k_mu ? guess[n + j] : 0.0;
        }
        local.lu = attempt == 0 ? (sp != NULL ? sp->values : p->lu) : NULL;
        st.it = 0;
        st.done = 0;
        st.nu = 0.0;
        st.nu_prev = -1.0;
        st.theta = -1.0;
        status = STEP_OK;
        build = fresh = attempt == 1;
        polished = 0;
        for (;;) {
            if (build) {
                /* the blocks at this iterate (its G, w, v from the residual's terms), the
                   matrix assembled and factored; a new contraction estimate */
                local.lu = NULL;
                if (newton_iterate(&local, &st, dq, lam_s, mu, G, w, vi) != RESIDUAL) {
                    status = STEP_BAD_RESIDUAL;
                    break;
                }
                for (j = 0; j < m; ++j) lam_i[j] = lam_s[j] * ca;
                report[REPORT_FACTORIZATIONS] += 1.0;
                /* newton_iterate left the iterate's q = q_ref + dq at the start of its
                   work */
                p->factored[0] = 0.0;
                if (build_matrix(s, p, s->work, vi, lam_i, G, cv, ca, piv)) {
                    status = STEP_SINGULAR;
                    break;
                }
                if (p->keep) {
                    p->factored[0] = h;
                    memcpy(p->factored + 1, s->work, (size_t)n * sizeof(double));
                    memcpy(p->factored + 1 + n, vi, (size_t)n * sizeof(double));
                    memcpy(p->factored + 1 + 2 * n, lam_i, (size_t)m * sizeof(double));
                    rebased = 1;
                }
                local.lu = sp != NULL ? sp->values : p->lu;  /* not NULL: it solves */
                st.nu_prev = -1.0;
                build = 0;
                fresh = 1;
            }
            st.done = 0;
            code = newton_iterate(&local, &st, dq, lam_s, mu, G, w, vi);
            report[REPORT_ITERATIONS] += st.done;
            report[REPORT_NU] = st.nu;
            if (code == CONVERGED && attempt == 0 && !fresh && !polished) {
                /* converged on factors of an earlier step, whose contraction is slower
                   than fresh ones': one iteration more, so that the solve is as close
                   to the solution as full Newton's at the same tolerance */
                polished = 1;
                continue;
            }
            if (code == CONVERGED) break;
            if (code == BAD_RESIDUAL) { status = STEP_BAD_RESIDUAL; break; }
            if (code == BAD_STEP) { status = STEP_BAD_CORRECTION; break; }
            if (code == LIMIT) { status = STEP_LIMIT; break; }
            /* EVENT: contraction slower than theta_refresh, or none */
            if (st.theta >= 1.0 && st.nu > 1.0) { status = STEP_DIVERGED; break; }
            if (st.it + 1 >= s->max_iterations) { status = STEP_LIMIT; break; }
            st.it += 1;
            if (st.theta > s->theta_refresh)
                build = 1;                  /* the blocks built again at this iterate */
            else
                st.nu_prev = st.nu;
        }
        if (status == STEP_OK) break;
    }
    if (status != STEP_OK) return status;
    /* the update (GeneralizedAlphaScheme._step): w = dq - G^T mu with the last
       iterate's G (GGL), as the Python loop forms it */
    for (i = 0; i < n; ++i) w[i] = dq[i];
    if (k_mu) add_GT(s, G, mu, -1.0, w);
    for (i = 0; i < n; ++i) {
        q[i] = q_ref[i] + dq[i];
        v[i] = v_ref[i] + cv * w[i];
        a[i] = a_pred[i] + w[i] / (b * h * h);
        qdd[i] = qdd[i] + ca * w[i];
        guess[i] = dq[i];
    }
    for (j = 0; j < m; ++j) lam[j] = lam_s[j] * ca;
    for (j = 0; j < k_mu; ++j) guess[n + j] = mu[j];
    guess[n + k_mu] = h;
    if (rebased) memcpy(basis, p->factored, (size_t)(1 + 2 * n + m) * sizeof(double));
    return STEP_OK;
}

/* The history after alpha_start (x: q'' then lambda): no starting guess, no kept
   factors (those in memory may have been overwritten) */
static void start_history(const newton_t *s, const alpha_step_t *p, const double *x,
                          double *a, double *qdd, double *lam, double *guess)
{
    const int n = s->n, m = s->m, k_mu = s->ggl ? m : 0;
    int i, j;
    for (i = 0; i < n; ++i) {
        qdd[i] = x[i];
        a[i] = x[i];
        guess[i] = 0.0;
    }
    for (j = 0; j < m; ++j) lam[j] = x[n + j];
    for (j = 0; j < k_mu; ++j) guess[n + j] = 0.0;
    guess[n + k_mu] = 0.0;
    if (p->keep) {
        guess[n + k_mu + 1] = 0.0;
        p->factored[0] = 0.0;
    }
}

/* alpha_start on the sparse path: the same system, assembled into the start matrix's
   pattern and factored by sparse_lu.c */
static int sparse_start(const newton_t *s, const alpha_step_t *p,
                        const sparse_newton_t *sp, const double *q, const double *v,
                        const double *gamma_t, double *a, double *qdd, double *lam,
                        double *guess)
{
    const int n = s->n, m = s->m, N = n + m;
    const sparse_matrix_t *A = (const sparse_matrix_t *)sp->start;
    const double scale[N_SEG] = {1.0, 1.0, 1.0, 1.0, 1.0};
    double *x = p->work, *g = x + N, *gt = g + m, *zero = gt + m, *H = segment(sp, SEG_H);
    int i, j, k;
    s->forces(s->terms_ctx, q, v, x);
    if (m > 0) {
        s->constraints(s->terms_ctx, q, g, segment(sp, SEG_G), gt);
        for (j = 0; j < m; ++j) zero[j] = 0.0;
        p->jacobian(s->terms_ctx, q, v, zero, 1, segment(sp, SEG_K), segment(sp, SEG_C), H);
    }
    for (j = 0; j < m; ++j) {
        double hv = 0.0;
        for (k = sp->H_indptr[j]; k < sp->H_indptr[j + 1]; ++k)
            hv += H[k] * v[sp->H_indices[k]];
        x[n + j] = -hv + (gamma_t != NULL ? gamma_t[j] : 0.0);
    }
    {
        double sum = 0.0;
        for (i = 0; i < N; ++i) sum += x[i];
        if (!isfinite(sum)) return STEP_BAD_RESIDUAL;
    }
    if (sparse_factor(sp, A, scale)) return STEP_SINGULAR;
    sparse_solve(sp, A, x);
    for (i = 0; i < N; ++i)
        if (!isfinite(x[i])) return STEP_BAD_RESIDUAL;
    start_history(s, p, x, a, qdd, lam, guess);
    return STEP_OK;
}

/* The history at the start of a run or after a jump of the forces (index3.py's
   consistent_accelerations): q'' and lambda from [[M, G^T], [G, 0]] [q''; lambda] =
   [F; gamma] at (q, v), a = q'', no starting guess.  gamma = -d(G v)/dq v + gamma_t,
   gamma_t (m; NULL: zeros) the rows' own time terms -2 G_t v - g_tt (a driving
   constraint g = sum c theta - f(t): f''(t)), the terms prepared for the time.  0, or
   STEP_SINGULAR (the matrix is singular: redundant constraints) or STEP_BAD_RESIDUAL (a
   non-finite term), the history then unchanged. */
NEWTON_API int alpha_start(const newton_t *s, const alpha_step_t *p, const double *q,
                           const double *v, const double *gamma_t, double *a, double *qdd,
                           double *lam, double *guess, int *piv)
{
    const int n = s->n, m = s->m, N = n + m;
    double *x = p->work, *g = x + N, *gt = g + m, *zero = gt + m, *G = p->work + 7 * n + 4 * m;
    double *A = p->lu;
    const sparse_newton_t *sp = (const sparse_newton_t *)s->sparse;
    int i, j, k;
    if (p->n != n || p->m != m || p->ggl != s->ggl) return STEP_BAD_SETUP;
    if (sp != NULL)
        return sparse_start(s, p, sp, q, v, gamma_t, a, qdd, lam, guess);
    s->forces(s->terms_ctx, q, v, x);
    if (m > 0) {
        s->constraints(s->terms_ctx, q, g, G, gt);
        for (j = 0; j < m; ++j) zero[j] = 0.0;
        p->jacobian(s->terms_ctx, q, v, zero, 1, p->K, p->C, p->H);
    }
    for (j = 0; j < m; ++j) {
        double hv = 0.0;
        for (i = 0; i < n; ++i) hv += p->H[(size_t)j * n + i] * v[i];
        x[n + j] = -hv + (gamma_t != NULL ? gamma_t[j] : 0.0);
    }
    memset(A, 0, (size_t)N * N * sizeof(double));
    for (i = 0; i < n; ++i)
        for (j = 0; j < n; ++j) A[(size_t)j * N + i] = s->M[(size_t)i * n + j];
    for (k = 0; k < m; ++k)
        for (i = 0; i < n; ++i) {
            A[(size_t)(n + k) * N + i] = G[(size_t)k * n + i];
            A[(size_t)i * N + n + k] = G[(size_t)k * n + i];
        }
    {
        double sum = 0.0;
        for (i = 0; i < N; ++i) sum += x[i];
        if (!isfinite(sum)) return STEP_BAD_RESIDUAL;
    }
    if (lu_factor(N, A, piv)) return STEP_SINGULAR;
    lu_solve(N, A, piv, x);
    for (i = 0; i < N; ++i)
        if (!isfinite(x[i])) return STEP_BAD_RESIDUAL;
    start_history(s, p, x, a, qdd, lam, guess);
    return STEP_OK;
}
