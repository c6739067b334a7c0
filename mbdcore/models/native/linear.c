/*
 * The linear time-invariant plant of mbdcore.models.linear in plain C99:
 * x' = A x + B u, y = C x + D u, with its fixed-step stepping.  This file is the plant's
 * one implementation: LinearSystemBlock calls it from Python through ctypes
 * (mbdcore.native), and its C-source FMU (flexcosim export-c statespace) compiles it in.
 *
 * Everything numeric comes in one table `tab`, LINEAR_LAYOUT below (linear.py:
 * linear_table, by name through the same declaration): n states, m inputs, p outputs,
 * then A (n x n), B (n x m), C (p x n), D (p x m), each row-major.
 *
 * Any size: no allocation, the caller passes scratch space (linear_advance).
 */
#include "fixed_step.h"
#include "table_layout.h"

#ifndef LINEAR_API
#define LINEAR_API
#endif

#define LINEAR_LAYOUT(X)                                                                   \
    X(INT, n, 1) X(INT, m, 1) X(INT, p, 1)                                                 \
    X(ARRAY, A, n * n) X(ARRAY, B, n * m) X(ARRAY, C, p * n) X(ARRAY, D, p * m)

typedef struct {
    LINEAR_LAYOUT(TABLE_MEMBER)
} Linear;

TABLE_READER(LINEAR_LAYOUT, Linear, linear_read_table)

/* Read the table; returns its length in doubles, or 0 if it is not a valid table (the
   sizes must be whole and n >= 1: a plant without a state is no ODE). */
static long linear_unpack(const double *tab, Linear *s) {
    long length = linear_read_table(tab, s);
    return length && s->n >= 1 && s->m >= 0 && s->p >= 0 ? length : 0;
}

/* rows (r x k) times v plus cols (r x l) times w into out (r).  Each row is summed from
   its first column on, the first product then the second (one fixed order, so the
   block and its FMU agree to the last bit); four rows at a time, whose sums are
   independent, so that the additions overlap instead of waiting on one another (the
   sum of a row alone is bound by the latency of the addition: 4x slower at n = 48). */
static void linear_affine(const double *rows, const double *v, int k, const double *cols,
                          const double *w, int l, int r, double *out) {
    int i = 0, j;
    for (; i + 4 <= r; i += 4) {
        const double *r0 = rows + i * k, *r1 = r0 + k, *r2 = r1 + k, *r3 = r2 + k;
        const double *c0 = cols + i * l, *c1 = c0 + l, *c2 = c1 + l, *c3 = c2 + l;
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        for (j = 0; j < k; j++) {
            s0 += r0[j] * v[j]; s1 += r1[j] * v[j]; s2 += r2[j] * v[j]; s3 += r3[j] * v[j];
        }
        for (j = 0; j < l; j++) {
            s0 += c0[j] * w[j]; s1 += c1[j] * w[j]; s2 += c2[j] * w[j]; s3 += c3[j] * w[j];
        }
        out[i] = s0; out[i + 1] = s1; out[i + 2] = s2; out[i + 3] = s3;
    }
    for (; i < r; i++) {
        double s = 0.0;
        for (j = 0; j < k; j++) s += rows[i * k + j] * v[j];
        for (j = 0; j < l; j++) s += cols[i * l + j] * w[j];
        out[i] = s;
    }
}

/* ---- the API (Python through ctypes, the C FMU through model.c) ---- */

/* The table's length in doubles, or 0 for a table that is not one. */
LINEAR_API long linear_table_length(const double *tab) {
    Linear s;
    return linear_unpack(tab, &s);
}

/* The scratch linear_advance needs, in doubles (0 for a bad table). */
LINEAR_API long linear_work_size(const double *tab) {
    Linear s;
    return linear_unpack(tab, &s) ? (long)FS_WORK_PER_STATE * s.n : 0;
}

/* dx = A x + B u: 0, or 1 for a bad table. */
LINEAR_API int linear_rhs(const double *tab, const double *x, const double *u, double *dx) {
    Linear s;
    if (!linear_unpack(tab, &s)) return 1;
    linear_affine(s.A, x, s.n, s.B, u, s.m, s.n, dx);
    return 0;
}

/* y = C x + D u: 0, or 1 for a bad table. */
LINEAR_API int linear_outputs(const double *tab, const double *x, const double *u, double *y) {
    Linear s;
    if (!linear_unpack(tab, &s)) return 1;
    linear_affine(s.C, x, s.n, s.D, u, s.m, s.p, y);
    return 0;
}

typedef struct { const double *tab, *u; } LinearInputs;

static int linear_rhs_held(void *ctx, const double *x, double *dx) {
    const LinearInputs *in = (const LinearInputs *)ctx;
    return linear_rhs(in->tab, x, in->u, dx);
}

/* n steps of h [s] with u held: method 0 classical RK4, 1 Runge-Kutta-Gill with its
   round-off register gq carried, 2 Treanor (fixed_step.h, as mbdcore's steppers); first: f(x) or NULL (fs_advance).  work:
   linear_work_size(tab) doubles of scratch.  Returns 0, or 1 for a bad table or a
   non-finite state (x and gq are then unchanged). */
LINEAR_API int linear_advance(const double *tab, double *x, double *gq, const double *u,
                              double h, int n, int method, const double *first,
                              double *work) {
    LinearInputs in;
    Linear s;
    if (!linear_unpack(tab, &s)) return 1;
    in.tab = tab; in.u = u;
    return fs_advance(linear_rhs_held, &in, x, gq, s.n, h, n, method, first, work) != 0;
}

static void linear_hold(void *ctx, const double *u) {
    ((LinearInputs *)ctx)->u = u;       /* fs_run's samples, alive for the whole run */
}

/* A whole run in one call (fs_run in fixed_step.h) with u of the piecewise table `inputs`
   (one signal per input) sampled at each step's start and held; work:
   linear_work_size(tab) doubles.  fs_run's status (FS_RUN_BAD_INPUTS also for a bad
   table or a table whose signals are not the plant's inputs) and the steps taken in
   *done. */
LINEAR_API int linear_run(const double *tab, const double *inputs, double *x, double *gq,
                          double t0, double h, int substeps, int n_steps, int method,
                          int record_every, double *record, int *done, double *work) {
    LinearInputs in;
    Linear s;
    *done = 0;
    if (!linear_unpack(tab, &s) || inputs[0] != (double)s.m) return FS_RUN_BAD_INPUTS;
    in.tab = tab; in.u = NULL;
    return fs_run(linear_rhs_held, linear_hold, &in, inputs, x, gq, s.n, t0, h, substeps,
                  n_steps, method, record_every, record, done, work);
}
