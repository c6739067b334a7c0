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
#include <string.h>

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
} system_terms_t;

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
