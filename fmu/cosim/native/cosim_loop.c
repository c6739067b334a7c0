/*
 * The co-simulation master's fixed-step loop over FMI 2.0 co-simulation FMUs, in C
 * (fmu/cosim/compiled_loop.py sets it up and reads the results; docs/architecture.md,
 * "fmu.cosim").  Python compiles one communication step of the master's Python loop
 * (fmu/cosim/run.py: the components' steps, then the propagation of the outputs to the
 * inputs in feedthrough order) into a program of operations, each one FMI call or one
 * group of them exactly as the Python loop makes them (SET: the fmi2Set<Type> calls of
 * one input setter, STEP: fmi2DoStep, READ: the fmi2Get<Type> calls of a component's
 * outputs), and this file runs that program for a chunk of steps, recording the rows
 * the Python loop records.  It calls the FMUs through the function pointers fmpy
 * resolved, with the values the Python loop passes, in its order: the results are the
 * Python loop's, bit for bit.
 *
 * Everything unusual is left to the Python loop, the one implementation of the rules:
 * at a value the Python loop would refuse (an input that is not finite, outside its
 * declared range, or not a C int where an Integer; an output not finite or outside its
 * range), a call returning more than fmi2Warning, or an fmi2Error message logged during
 * a call (counted by log_proxy.c in the instance's route), the loop stops and reports
 * the step and the operation; a SET whose values are refused is stopped before any of
 * its calls.  Python then handles that operation as its loop does and resumes here
 * with the next one (or ends the run).  Plain C99, no allocation: the scratch arrays
 * are the caller's.
 */
#include <math.h>
#include <limits.h>
#include <string.h>

#include "table_layout.h"

#ifndef LOOP_API
#define LOOP_API
#endif

/* the fmi2 types this loop passes (fmi2TypesPlatform.h): the calls fmpy resolved */
typedef int (*loop_do_step_fn)(void *instance, double t, double h, int no_set_prior);
typedef int (*loop_set_real_fn)(void *instance, const unsigned int *vr, size_t n,
                                const double *values);
typedef int (*loop_set_int_fn)(void *instance, const unsigned int *vr, size_t n,
                               const int *values);
typedef int (*loop_get_real_fn)(void *instance, const unsigned int *vr, size_t n,
                                double *values);
typedef int (*loop_get_int_fn)(void *instance, const unsigned int *vr, size_t n, int *values);

/* One FMU instance of the loop: fmpy's component pointer and functions, and the route
   of its logger (LogRoute of log_proxy.c), whose count of error messages is watched. */
#define LOOP_FMU_LAYOUT(X)                                                                  \
    X(ADDRESS, instance, 1) X(ADDRESS, log_errors, 1)                                       \
    X(FN, do_step, loop_do_step_fn)                                                         \
    X(FN, set_real, loop_set_real_fn) X(FN, set_integer, loop_set_int_fn)                   \
    X(FN, set_boolean, loop_set_int_fn)                                                     \
    X(FN, get_real, loop_get_real_fn) X(FN, get_integer, loop_get_int_fn)                   \
    X(FN, get_boolean, loop_get_int_fn)

typedef struct {
    LOOP_FMU_LAYOUT(TABLE_MEMBER)
} LoopFmu;

/* The program of one communication step (compiled_loop.py writes it): ops[j] is where
   operation j starts in code; the first n_step_ops step the components, the others
   propagate the outputs.  lo/hi are the declared ranges the operations refer to. */
#define LOOP_PLAN_LAYOUT(X)                                                                 \
    X(INT, n_fmus, 1) X(ADDRESS, fmus, 1)                                                   \
    X(INT, n_out, 1) X(INT, n_in, 1) X(INT, gauss_seidel, 1)                                \
    X(REAL, t0, 1) X(REAL, h, 1) X(REAL, n_steps, 1)                                        \
    X(INT, n_ops, 1) X(INT, n_step_ops, 1) X(INTS, ops, n_ops)                              \
    X(INT, n_code, 1) X(INTS, code, n_code)                                                 \
    X(INT, n_ranges, 1) X(ARRAY, lo, n_ranges) X(ARRAY, hi, n_ranges)

typedef struct {
    LOOP_PLAN_LAYOUT(TABLE_MEMBER)
} LoopPlan;

/* operations: SET fmu propagating n_groups, per group (kind, m, vr[m], src[m], dst[m],
   range[m]): the values y[src] set (and written to u[dst] first where dst >= 0, as the
   propagation does); STEP fmu; READ fmu n_values n_groups, per group (kind, m, vr[m],
   pos[m], range[m]), then n_writes (pos, y index) pairs */
enum { LOOP_SET = 1, LOOP_STEP = 2, LOOP_READ = 3 };
/* value kinds: the fmi2 type a group is read or written as */
enum { LOOP_REAL = 0, LOOP_INTEGER = 1, LOOP_BOOLEAN = 2 };
/* why the loop stopped (report[2]); the FMI status of the call is report[3] */
enum { LOOP_DONE = 0, LOOP_VALUE = 1, LOOP_STATUS = 2, LOOP_LOGGED = 3 };

#define LOOP_FMI_WARNING 1

static int errors_logged(const LoopFmu *f) {
    return f->log_errors ? *(const int *)f->log_errors : 0;
}

/* a value the Python loop refuses: not finite, outside [lo, hi] (range r >= 0) */
static int refused(const LoopPlan *p, int r, double v) {
    return !isfinite(v) || (r >= 0 && !(p->lo[r] <= v && v <= p->hi[r]));
}

/* the SET at code c: checked first, then one call per group; 0, or why it stopped */
static int run_set(const LoopPlan *p, const int *c, const double *y, double *u,
                   double *values, int *ints, int skip, int *status) {
    const LoopFmu *f = (const LoopFmu *)p->fmus + c[1];
    const int propagating = c[2], n_groups = c[3];
    const int *g = c + 4;
    int k, i, before;
    if (propagating && c[1] == skip) return LOOP_DONE;   /* a terminated FMU takes no input */
    for (k = 0; k < n_groups; ++k) {
        const int kind = g[0], m = g[1];
        const int *src = g + 2 + m, *rng = g + 2 + 3 * m;
        for (i = 0; i < m; ++i) {
            const double v = y[src[i]];
            if (refused(p, rng[i], v)) return LOOP_VALUE;
            /* Python rounds half to even (round()), as nearbyint in the default mode */
            if (kind != LOOP_REAL && !(nearbyint(v) >= INT_MIN && nearbyint(v) <= INT_MAX))
                return LOOP_VALUE;
        }
        g += 2 + 4 * m;
    }
    g = c + 4;
    for (k = 0; k < n_groups; ++k) {
        const int kind = g[0], m = g[1];
        const unsigned int *vr = (const unsigned int *)(g + 2);
        const int *src = g + 2 + m, *dst = g + 2 + 2 * m;
        if (propagating)
            for (i = 0; i < m; ++i)
                if (dst[i] >= 0) u[dst[i]] = y[src[i]];
        before = errors_logged(f);
        if (kind == LOOP_REAL) {
            for (i = 0; i < m; ++i) values[i] = y[src[i]];
            *status = f->set_real((void *)f->instance, vr, (size_t)m, values);
        } else {
            for (i = 0; i < m; ++i) ints[i] = (int)nearbyint(y[src[i]]);
            *status = (kind == LOOP_INTEGER ? f->set_integer : f->set_boolean)(
                (void *)f->instance, vr, (size_t)m, ints);
        }
        if (*status > LOOP_FMI_WARNING) return LOOP_STATUS;
        if (errors_logged(f) != before) return LOOP_LOGGED;
        g += 2 + 4 * m;
    }
    return LOOP_DONE;
}

/* the READ at code c: the get calls, then the values checked and written to y */
static int run_read(const LoopPlan *p, const int *c, double *y, double *values, int *ints,
                    int *status) {
    const LoopFmu *f = (const LoopFmu *)p->fmus + c[1];
    const int n_groups = c[3];
    const int *g = c + 4;
    int k, i, before = errors_logged(f), bad = 0;
    for (k = 0; k < n_groups; ++k) {
        const int kind = g[0], m = g[1];
        const unsigned int *vr = (const unsigned int *)(g + 2);
        const int *pos = g + 2 + m, *rng = g + 2 + 2 * m;
        double *out = values + c[2];          /* the group's values, then placed */
        if (kind == LOOP_REAL) {
            *status = f->get_real((void *)f->instance, vr, (size_t)m, out);
        } else {
            *status = (kind == LOOP_INTEGER ? f->get_integer : f->get_boolean)(
                (void *)f->instance, vr, (size_t)m, ints);
            for (i = 0; i < m; ++i) out[i] = (double)ints[i];
        }
        if (*status > LOOP_FMI_WARNING) return LOOP_STATUS;
        for (i = 0; i < m; ++i) {
            values[pos[i]] = out[i];
            bad |= refused(p, rng[i], out[i]);
        }
        g += 2 + 3 * m;
    }
    if (errors_logged(f) != before) return LOOP_LOGGED;
    if (bad) return LOOP_VALUE;
    for (k = 0; k < g[0]; ++k) y[g[2 + 2 * k]] = values[g[1 + 2 * k]];
    return LOOP_DONE;
}

/* Steps k0 .. k_end - 1 of the plan, the first from operation op0 (0: the whole step;
   more: the rest of a step Python handled up to there); the propagation does not set
   the inputs of FMU `skip` (-1: none).  A row (t, y, u) is written to rows after step
   k when (k + 1) is a multiple of record_every or the last step (record_every 0: no
   row).  y_at_t receives y at the start of each step (Gauss-Seidel).  values and ints
   are scratch arrays of the plan's largest operation (twice its outputs for values).
   Returns 0 when step k_end - 1 is done, 1 when an operation stopped the loop;
   report = [next step or step stopped in, operation, reason, FMI status, rows written]. */
LOOP_API int cosim_loop_run(const void *plan, double *y, double *u, double *y_at_t,
                            double *rows, double *values, int *ints, double k0,
                            double k_end, int op0, int skip, int record_every,
                            double *report) {
    const LoopPlan *p = (const LoopPlan *)plan;
    const int *code = p->code;
    const int ncol = 1 + p->n_out + p->n_in;
    double k;
    int j, written = 0, status = 0, why = LOOP_DONE;
    for (k = k0; k < k_end; k += 1.0) {
        /* t_k = t0 + k h as the Python loop computes it (k exact below 2**53) */
        const double t = p->t0 + k * p->h, t_next = p->t0 + (k + 1.0) * p->h;
        j = (k == k0) ? op0 : 0;
        if (j == 0 && p->gauss_seidel)
            memcpy(y_at_t, y, sizeof(double) * (size_t)p->n_out);
        for (; j < p->n_ops; ++j) {
            const int *c = code + p->ops[j];
            const LoopFmu *f = (const LoopFmu *)p->fmus + c[1];
            int before;
            switch (c[0]) {
            case LOOP_SET:
                why = run_set(p, c, y, u, values, ints, skip, &status);
                break;
            case LOOP_STEP:
                before = errors_logged(f);
                status = f->do_step((void *)f->instance, t, p->h, 1);
                why = status > LOOP_FMI_WARNING ? LOOP_STATUS
                      : errors_logged(f) != before ? LOOP_LOGGED : LOOP_DONE;
                break;
            default:
                why = run_read(p, c, y, values, ints, &status);
                break;
            }
            if (why != LOOP_DONE) break;
        }
        if (why != LOOP_DONE) break;
        if (record_every > 0 && (fmod(k + 1.0, (double)record_every) == 0.0
                                 || k + 1.0 == p->n_steps)) {
            double *row = rows + (size_t)written * (size_t)ncol;
            row[0] = t_next;
            memcpy(row + 1, y, sizeof(double) * (size_t)p->n_out);
            memcpy(row + 1 + p->n_out, u, sizeof(double) * (size_t)p->n_in);
            ++written;
        }
    }
    report[0] = k;
    report[1] = why == LOOP_DONE ? 0.0 : (double)j;
    report[2] = why;
    report[3] = status;
    report[4] = written;
    return why != LOOP_DONE;
}
