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
} system_terms_t;

TERMS_API void system_constraints(const void *ctx, const double *q, double *g, double *G, double *gt)
{
    const system_terms_t *s = (const system_terms_t *)ctx;
    int k;
    if (s->m > 0)
        s->plan(s->plan_data, q, s->zeros, g, s->gam, G, s->plan_work);
    memset(gt, 0, (size_t)s->m * sizeof(double));
    for (k = 0; k < s->n_offset; ++k) {
        g[s->offset_row[k]] -= s->offset[k];
        gt[s->offset_row[k]] = -s->offset_rate[k];
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
   pattern's values (the context's), overwritten; the constraint curvature terms only if
   geometric is not 0 (M is constant here). */
TERMS_API void system_jacobian(const void *ctx, const double *q, const double *v, const double *lam,
                     int geometric, double *K, double *C, double *H)
{
    const system_terms_t *s = (const system_terms_t *)ctx;
    const int n = s->n;
    int k, e;
    memset(K, 0, (size_t)s->nK * sizeof(double));
    memset(C, 0, (size_t)s->nC * sizeof(double));
    memset(H, 0, (size_t)s->nH * sizeof(double));
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
    if (geometric && s->m > 0) {
        s->plan(s->plan_data, q, v, s->g_scratch, s->gam, s->G_scratch, s->plan_work);
        s->geometric(s->geometric_data, q, v, lam, K, H);
    }
}
