/*
 * The fixed-step methods of mbdcore.integrators in C99, for models whose equations are C:
 * the kernels' own stepping loops (fs_advance: one call per communication step from
 * Python) and the C-source FMUs include this header.  RK4 and Gill are summed exactly as
 * the Python steppers sum them (RK4: the tableau stepper's loop; Gill:
 * mbdcore.integrators.runge_kutta.Gill), so a C step and a Python step of the same method
 * give the same numbers.  Treanor's fitted stages are written here only: the Python
 * stepper (runge_kutta.Treanor) calls them through fixed_step.c between its right-hand
 * side evaluations, so it too takes the steps fs_treanor_step takes.
 *
 * rhs(ctx, x, dx) returns 0, or nonzero when it cannot evaluate (the step then stops and
 * reports it).  No allocation: the caller passes scratch space of 5 m doubles for RK4
 * and Gill, FS_TREANOR_ROWS m for Treanor, FS_WORK_PER_STATE m for fs_advance.
 */
#ifndef FLEXCOSIM_FIXED_STEP_H
#define FLEXCOSIM_FIXED_STEP_H

#include <math.h>
#include <string.h>

typedef int (*fs_rhs)(void *ctx, const double *x, double *dx);

#if defined(__GNUC__)
#define FS_MAYBE_UNUSED __attribute__((unused))
#else
#define FS_MAYBE_UNUSED
#endif

/* One classical RK4 step of h [s] of x (m entries) in place; 0 or the rhs's failure.
   first: f(x), the first stage, where the caller has it (fs_advance_auto), else NULL. */
FS_MAYBE_UNUSED static int fs_rk4_step(fs_rhs rhs, void *ctx, double *x, int m, double h,
                                       const double *first, double *scratch) {
    double *k0 = scratch, *k1 = scratch + m, *k2 = scratch + 2 * m, *k3 = scratch + 3 * m;
    double *yi = scratch + 4 * m;
    int i, status;
    if (first) memcpy(k0, first, sizeof(double) * m);
    else if ((status = rhs(ctx, x, k0))) return status;
    for (i = 0; i < m; i++) yi[i] = x[i] + (h * 0.5) * k0[i];
    if ((status = rhs(ctx, yi, k1))) return status;
    for (i = 0; i < m; i++) yi[i] = x[i] + (h * 0.5) * k1[i];
    if ((status = rhs(ctx, yi, k2))) return status;
    for (i = 0; i < m; i++) yi[i] = x[i] + h * k2[i];
    if ((status = rhs(ctx, yi, k3))) return status;
    for (i = 0; i < m; i++) {
        double inc = 0.0;
        inc = inc + (1.0 / 6.0) * k0[i];
        inc = inc + (2.0 / 6.0) * k1[i];
        inc = inc + (2.0 / 6.0) * k2[i];
        inc = inc + (1.0 / 6.0) * k3[i];
        x[i] = x[i] + h * inc;
    }
    return 0;
}

/* One Runge-Kutta-Gill step (Gill 1951) with its round-off register q carried; first as
   fs_rk4_step's. */
FS_MAYBE_UNUSED static int fs_gill_step(fs_rhs rhs, void *ctx, double *x, double *q, int m, double h,
                                        const double *first, double *scratch) {
    static const double R = 0.70710678118654757;   /* sqrt(1/2) */
    const double a[4] = {0.5, 1 - R, 1 + R, 1.0 / 6.0}, b[4] = {2.0, 1.0, 1.0, 2.0},
                 c[4] = {0.5, 1 - R, 1 + R, 0.5};
    int i, j, status;
    for (j = 0; j < 4; j++) {
        if (j == 0 && first) memcpy(scratch, first, sizeof(double) * m);
        else if ((status = rhs(ctx, x, scratch))) return status;
        for (i = 0; i < m; i++) {
            double k = h * scratch[i];
            double y_new = x[i] + a[j] * (k - b[j] * q[i]);
            double r = y_new - x[i];
            x[i] = y_new;
            q[i] = q[i] + 3.0 * r - c[j] * k;
        }
    }
    return 0;
}

/* ---- Treanor's exponentially fitted method (Treanor 1966; docs/benchmarks.md §8.1) ----
 *
 * One step works on a table of stages, FS_TREANOR_ROWS rows of m: w1 = y, w2 = w1 + h/2 q1,
 * w3 = w1 + h/2 q2, w4, q_k = f(w_k), the fitted rates p [1/s] and the new y.  Per
 * component, where p > 0,
 *
 *     w4 = w1 + h [q2 + 2 r3 (q3 - q2)]
 *     dy = h { q1 r2 + [-3 Q1 + 2 Q2 + 2 Q3 - Q4] r3 + 4 [Q1 - Q2 - Q3 + Q4] r4 }
 *
 * with Q_k = q_k + p w_k (the forcing g = f + p y at the stages) and r_m of z = p h
 * (fs_exp_fit); where p = 0 the step is classical RK4.  For y' = -p y + g(t) with g
 * quadratic in t the step is exact.  The rows are named by the FS_T* indices; Python
 * names them in mbdcore.integrators.runge_kutta.TREANOR_STAGES. */
enum { FS_TW1, FS_TW2, FS_TW3, FS_TW4, FS_TQ1, FS_TQ2, FS_TQ3, FS_TQ4, FS_TP, FS_TY,
       FS_TREANOR_ROWS };

/* Treanor's r2, r3, r4 for z = p h >= 0: r2 = (1 - e^-z)/z, r3 = (1 - r2)/z,
   r4 = (1/2 - r3)/z.  The closed forms cancel catastrophically for small z, where the
   series sum_k (-z)^k/(k+m)! is used (12 terms: error below 0.1^12/12! for z < 0.1). */
FS_MAYBE_UNUSED static void fs_exp_fit(double z, double *r) {
    if (z < 0.1) {
        double term = 1.0, f1 = 1.0, f2 = 2.0, f3 = 6.0;   /* (k+1)!, (k+2)!, (k+3)! at k = 0 */
        int k;
        r[0] = r[1] = r[2] = 0.0;
        for (k = 0; k < 12; k++) {
            r[0] += term / f1;
            r[1] += term / f2;
            r[2] += term / f3;
            term *= -z;
            f1 *= k + 2;
            f2 *= k + 3;
            f3 *= k + 4;
        }
        return;
    }
    r[0] = -expm1(-z) / z;
    r[1] = (1.0 - r[0]) / z;
    r[2] = (0.5 - r[1]) / z;
}

/* The fitted decay rates p from the two stages at t + h/2: Treanor's
   p_i = -(q3_i - q2_i)/(w3_i - w2_i), set to 0 where it is not positive, and capped by
   rho = |q3 - q2| / |w3 - w2| (2-norms over all components).

   Why the cap: q3 - q2 = J (w3 - w2) + O(h^4), so the stage ratio is the diagonal J_ii
   only if the other components do not feed component i.  Where f_i is nearly constant
   along the motion but depends on other components (the rigid crank's angular velocity
   under a constant torque), w3_i - w2_i is O(h^3) while the coupled terms are O(h^2):
   the ratio grows like 1/h, p h stays O(1) however small h is, and the method converged
   with order 2 (p h ~ 4 at every step of the crank at h = 1 ms).  rho is |J d| / |d| +
   O(h^2) for d = w3 - w2, at most the 2-norm of J, so the cap keeps every p_i bounded
   independently of h (the condition for order 4: see fs_treanor_fourth_point).  For one
   component rho = |p| (no change); where a stiff component dominates the stage
   differences, as its own decay makes it do, rho is about its rate.  The cap is this
   project's, not Treanor's (1966). */
FS_MAYBE_UNUSED static void fs_treanor_rates(double *s, int m) {
    const double *w2 = s + FS_TW2 * m, *w3 = s + FS_TW3 * m, *q2 = s + FS_TQ2 * m,
                 *q3 = s + FS_TQ3 * m;
    double *p = s + FS_TP * m, nw = 0.0, nq = 0.0, rho;
    int i;
    for (i = 0; i < m; i++) {
        nw += (w3[i] - w2[i]) * (w3[i] - w2[i]);
        nq += (q3[i] - q2[i]) * (q3[i] - q2[i]);
    }
    rho = nw > 0.0 ? sqrt(nq / nw) : 0.0;
    for (i = 0; i < m; i++) {
        const double dw = w3[i] - w2[i];
        p[i] = 0.0;
        if (dw != 0.0) {
            const double pi = -(q3[i] - q2[i]) / dw;
            if (pi > 0.0) p[i] = pi < rho ? pi : rho;
        }
    }
}

/* The fourth stage point w4 for the rates p: w1 + h [q2 + 2 r3(p h) (q3 - q2)].

   Why this form: the two stages before it are explicit Euler half-steps that know
   nothing of p, and with them the fitted step is fourth order (for bounded p) only if w4
   is RK4's point w1 + h q3 up to O(h^4) (expansion of the local error with the
   non-commuting L = -diag(p) and Jacobian J).  Here w4 - (w1 + h q3) =
   h (2 r3 - 1)(q3 - q2) = O(p h^4), and at p = 0 (r3 = 1/2) it is RK4's point.  The form
   used before, w1 + h [2 r3 (q3 - q1) + r2 (q1 - q2) + q2], is RK4's point plus
   p h^2 (q2 - q1)/6 = O(p h^3); that left the local error -h^4 K L J f / 72 (K = J - L;
   p f' (f' + p) f h^4 / 72 for one component), which vanishes only where p = -J exactly,
   so the method was third order on coupled systems.  The weight 2 r3 -> 2/(p h) keeps
   the stiff components of w4 from growing like (p h)^3, as RK4's w1 + h q3 does (for
   y' = -p y, w4 -> (1 - p h/2) w1 as p h grows). */
FS_MAYBE_UNUSED static void fs_treanor_fourth_point(double *s, int m, double h) {
    const double *w1 = s + FS_TW1 * m, *q2 = s + FS_TQ2 * m, *q3 = s + FS_TQ3 * m,
                 *p = s + FS_TP * m;
    double *w4 = s + FS_TW4 * m, r[3];
    int i;
    for (i = 0; i < m; i++) {
        if (p[i] > 0.0) {
            fs_exp_fit(p[i] * h, r);
            w4[i] = w1[i] + h * (q2[i] + 2.0 * r[1] * (q3[i] - q2[i]));
        } else {
            w4[i] = w1[i] + h * q3[i];
        }
    }
}

/* The new y = w1 + dy from the four stages and the rates. */
FS_MAYBE_UNUSED static void fs_treanor_finish(double *s, int m, double h) {
    const double *w1 = s + FS_TW1 * m, *w2 = s + FS_TW2 * m, *w3 = s + FS_TW3 * m,
                 *w4 = s + FS_TW4 * m, *q1 = s + FS_TQ1 * m, *q2 = s + FS_TQ2 * m,
                 *q3 = s + FS_TQ3 * m, *q4 = s + FS_TQ4 * m, *p = s + FS_TP * m;
    double *y = s + FS_TY * m, r[3];
    int i;
    for (i = 0; i < m; i++) {
        double dy;
        if (p[i] > 0.0) {
            const double a1 = q1[i] + p[i] * w1[i], a2 = q2[i] + p[i] * w2[i],
                         a3 = q3[i] + p[i] * w3[i], a4 = q4[i] + p[i] * w4[i];
            fs_exp_fit(p[i] * h, r);
            dy = h * (q1[i] * r[0] + (-3.0 * a1 + 2.0 * a2 + 2.0 * a3 - a4) * r[1]
                      + 4.0 * (a1 - a2 - a3 + a4) * r[2]);
        } else {
            dy = (h / 6.0) * (q1[i] + 2.0 * (q2[i] + q3[i]) + q4[i]);
        }
        y[i] = w1[i] + dy;
    }
}

/* One Treanor step of h [s] of x (m entries) in place over the stage table s
   (FS_TREANOR_ROWS m doubles); 0 or the rhs's failure; first as fs_rk4_step's. */
FS_MAYBE_UNUSED static int fs_treanor_step(fs_rhs rhs, void *ctx, double *x, int m, double h,
                                           const double *first, double *s) {
    double *w1 = s + FS_TW1 * m, *w2 = s + FS_TW2 * m, *w3 = s + FS_TW3 * m,
           *w4 = s + FS_TW4 * m, *q1 = s + FS_TQ1 * m, *q2 = s + FS_TQ2 * m,
           *q3 = s + FS_TQ3 * m, *q4 = s + FS_TQ4 * m;
    int i, status;
    memcpy(w1, x, sizeof(double) * m);
    if (first) memcpy(q1, first, sizeof(double) * m);
    else if ((status = rhs(ctx, w1, q1))) return status;
    for (i = 0; i < m; i++) w2[i] = w1[i] + (0.5 * h) * q1[i];
    if ((status = rhs(ctx, w2, q2))) return status;
    for (i = 0; i < m; i++) w3[i] = w1[i] + (0.5 * h) * q2[i];
    if ((status = rhs(ctx, w3, q3))) return status;
    fs_treanor_rates(s, m);
    fs_treanor_fourth_point(s, m, h);
    if ((status = rhs(ctx, w4, q4))) return status;
    fs_treanor_finish(s, m, h);
    memcpy(x, s + FS_TY * m, sizeof(double) * m);
    return 0;
}

/* Scratch doubles per state entry of fs_advance: its copies of x and q, then the largest
   step's scratch (Treanor's stage table). */
#define FS_WORK_PER_STATE (2 + FS_TREANOR_ROWS)

/* n steps of h [s] of y (m entries) in place with RK4 (method 0), Gill (1, its register r
   carried) or Treanor (2); 0 or the rhs's failure.  first: f(y), the first stage of the
   first step, or NULL (each method's first stage is f at the step's start).  scratch:
   FS_TREANOR_ROWS m doubles. */
FS_MAYBE_UNUSED static int fs_steps(fs_rhs rhs, void *ctx, double *y, double *r, int m, double h,
                                    int n, int method, const double *first, double *scratch) {
    int s, status;
    for (s = 0; s < n; s++) {
        const double *f0 = s == 0 ? first : NULL;
        status = method == 1   ? fs_gill_step(rhs, ctx, y, r, m, h, f0, scratch)
                 : method == 2 ? fs_treanor_step(rhs, ctx, y, m, h, f0, scratch)
                               : fs_rk4_step(rhs, ctx, y, m, h, f0, scratch);
        if (status) return status;
    }
    return 0;
}

/* Whether all m entries of y are finite. */
FS_MAYBE_UNUSED static int fs_finite(const double *y, int m) {
    int i;
    for (i = 0; i < m; i++) if (!isfinite(y[i])) return 0;
    return 1;
}

/* n steps of h [s] of x (m entries) with RK4 (method 0), Gill (1, its register q carried;
   q is left alone by the others) or Treanor (2), all or nothing: a kernel's advance, which
   Python calls once per communication step (mbdcore.integrators.runge_kutta.CSteppedKernel).
   x and q change only when every step succeeded and the state is finite; returns 0, the
   rhs's failure, or 1 for a non-finite state.  first: f(x) where the caller has it
   (fs_steps), else NULL.  work: FS_WORK_PER_STATE m doubles. */
FS_MAYBE_UNUSED static int fs_advance(fs_rhs rhs, void *ctx, double *x, double *q, int m, double h,
                                      int n, int method, const double *first, double *work) {
    double *y = work, *r = work + m;
    int status;
    memcpy(y, x, sizeof(double) * m);
    memcpy(r, q, sizeof(double) * m);
    if ((status = fs_steps(rhs, ctx, y, r, m, h, n, method, first, work + 2 * m)))
        return status;
    if (!fs_finite(y, m)) return 1;
    memcpy(x, y, sizeof(double) * m);
    memcpy(q, r, sizeof(double) * m);
    return 0;
}

/* ---- substeps = 0, "auto": step doubling (mbdcore.dae.ode_block.OdeBlock._controlled_advance) ----
 *
 * From the same start, n and 2n substeps give x_n and x_2n (fs_advance each); where
 * |x_2n - x_n| <= atol + rtol max(|x_2n|, |x_start|) in every state the result is x_2n
 * (and Gill's register of the 2n run), else n doubles; a difference still too large at
 * 2n >= FS_AUTO_MAX_SUBSTEPS fails the step.  *n holds where the doubling starts (1 at
 * the start of a run, then the value this function leaves: n, or n/2 where the scaled
 * difference was at most 0.5 / 2^order).  The numbers and decisions are the Python
 * block's exactly, so the C FMU and the Python block take the same substeps and give the
 * same states.  Every try starts at x, so the first stage of every method, f(x), is
 * evaluated once and handed to each try (one right-hand side less per try than each
 * try evaluating it; the same numbers).  Returns 0; fs_advance's failure (x, q, *n
 * unchanged); or FS_TOLERANCE_MISSED with the scaled difference in *error and the
 * substeps of the last try in *tried (x, q, *n unchanged).  work:
 * FS_AUTO_WORK_PER_STATE m doubles. */
#define FS_AUTO_MAX_SUBSTEPS 4096
#define FS_AUTO_WORK_PER_STATE (5 + FS_WORK_PER_STATE)
#define FS_TOLERANCE_MISSED (-1)

FS_MAYBE_UNUSED static int fs_advance_auto(fs_rhs rhs, void *ctx, double *x, double *q, int m,
                                           double h, int method, int order, double rtol,
                                           double atol, int *n_start, double *error,
                                           int *tried, double *work) {
    double *xc = work, *qc = work + m, *xf = work + 2 * m, *qf = work + 3 * m,
           *f0 = work + 4 * m, *scratch = work + 5 * m;
    int n = *n_start, i, status;
    double worst = 0.0;
    if ((status = rhs(ctx, x, f0))) return status;
    memcpy(xc, x, sizeof(double) * m);
    memcpy(qc, q, sizeof(double) * m);
    if ((status = fs_advance(rhs, ctx, xc, qc, m, h / n, n, method, f0, scratch)))
        return status;
    for (;;) {
        memcpy(xf, x, sizeof(double) * m);
        memcpy(qf, q, sizeof(double) * m);
        if ((status = fs_advance(rhs, ctx, xf, qf, m, h / (2 * n), 2 * n, method, f0,
                                 scratch)))
            return status;
        worst = 0.0;
        for (i = 0; i < m; i++) {
            const double scale = atol + rtol * fmax(fabs(xf[i]), fabs(x[i]));
            const double e = fabs(xf[i] - xc[i]) / scale;
            if (!(e <= worst)) worst = e;        /* NaN stays (and is not <= 1) */
        }
        if (worst <= 1.0) break;
        if (2 * n >= FS_AUTO_MAX_SUBSTEPS) {
            *error = worst;
            *tried = 2 * n;
            return FS_TOLERANCE_MISSED;
        }
        memcpy(xc, xf, sizeof(double) * m);
        n *= 2;
    }
    memcpy(x, xf, sizeof(double) * m);
    memcpy(q, qf, sizeof(double) * m);
    *error = worst;
    *tried = 2 * n;
    *n_start = (worst <= 0.5 / ldexp(1.0, order) && n > 1) ? n / 2 : n;
    return 0;
}

/* ---- inputs a C loop samples: piecewise polynomials (mbdcore.integrators.PiecewiseInput) ----
 *
 * A table of S signals over P pieces, each a polynomial of C coefficients (degree C - 1):
 *
 *     [S, P, C, knots[0..P-1], coef[(p S + s) C + j]]
 *
 * Piece p holds from knots[p] (included) to knots[p+1] (excluded), the last one for ever;
 * its signal s is sum_j coef[p][s][j] (t - knots[p])^j.  Before knots[0] every signal
 * keeps its value at knots[0].  Constants, steps, ramps, sampled tables with zero-order
 * or linear hold and quintic trajectories are such tables; Python builds and checks them
 * (increasing finite knots, finite coefficients) and evaluates them with the same
 * operations in the same order, so both give the same bits. */
#define FS_PW_HEAD 3
/* At most this many signals per table (a C loop keeps them on its stack). */
#define FS_PW_MAX_SIGNALS 16

/* The length of a well-formed table, or 0 if its head is not one (or the table would
   pass 2e9 doubles, beyond a 32-bit long). */
FS_MAYBE_UNUSED static long fs_piecewise_length(const double *pw) {
    const double s = pw[0], p = pw[1], c = pw[2];
    if (!(s >= 1 && s <= FS_PW_MAX_SIGNALS && c >= 1 && c <= 64 && p >= 1
          && p * (1.0 + s * c) <= 2e9)            /* in range before any cast */
        || s != (long)s || p != (long)p || c != (long)c)
        return 0;
    return FS_PW_HEAD + (long)p + (long)p * (long)s * (long)c;
}

/* The signals at t [s] into u (S values).  piece: where the search starts (the piece of
   the previous sample: a loop marching in time finds the next piece in O(1)); returns the
   piece of t, for the next call. */
FS_MAYBE_UNUSED static int fs_piecewise_sample(const double *pw, double t, int piece, double *u) {
    const int ns = (int)pw[0], np = (int)pw[1], nc = (int)pw[2];
    const double *knots = pw + FS_PW_HEAD, *coef;
    double tau;
    int s, j;
    if (piece < 0 || piece >= np) piece = 0;
    while (piece > 0 && t < knots[piece]) piece--;
    while (piece + 1 < np && t >= knots[piece + 1]) piece++;
    tau = t - knots[piece];
    if (tau < 0.0) tau = 0.0;                 /* before the first knot: its value there */
    coef = knots + np + (long)piece * ns * nc;
    for (s = 0; s < ns; s++) {
        const double *c = coef + s * nc;
        double v = c[nc - 1];
        for (j = nc - 2; j >= 0; j--) {
            const double scaled = v * tau;    /* two statements: no fused multiply-add, */
            v = scaled + c[j];                /* so C and Python round alike */
        }
        u[s] = v;
    }
    return piece;
}

/* ---- a whole run in one call: n_steps steps with the inputs sampled and held ----
 *
 * hold(ctx, u) puts the S sampled inputs where the kernel's rhs reads them. */
typedef void (*fs_hold)(void *ctx, const double *u);

/* Why fs_run stopped: every step taken, a non-finite state, the rhs failed, a bad table. */
enum { FS_RUN_DONE = 0, FS_RUN_NONFINITE = 1, FS_RUN_RHS_FAILED = 2, FS_RUN_BAD_INPUTS = 3 };

/* Scratch doubles per state entry of fs_run (the state before the step, Gill's register
   before it, the steps' scratch). */
#define FS_RUN_WORK_PER_STATE FS_WORK_PER_STATE

/* n_steps steps [t_k, t_k + h], t_k = t0 + k h [s], of x (m entries), each with the
   inputs of table pw sampled at t_k and held (hold) over its substeps steps of h /
   substeps of RK4 (method 0), Gill (1, register q carried) or Treanor (2): the loop of
   mbdcore.dae.integrate_held, whose Python loop does the same per step (fs_advance), so
   both give the same bits.  x at t0 is row 0 of record; the state after step k (k = 1 ..
   n_steps) is a row where k is a multiple of record_every, and so is the last step's
   (record: 1 + n_steps / record_every + 1 rows of m at most).  A step whose rhs fails or
   whose state is not finite is not taken: x and q hold the state after the last step
   taken, *done how many were taken (the failed step ends at t0 + (*done + 1) h).
   Returns FS_RUN_DONE, FS_RUN_NONFINITE, FS_RUN_RHS_FAILED or FS_RUN_BAD_INPUTS (more
   than FS_PW_MAX_SIGNALS signals, a malformed head, substeps or record_every below 1;
   nothing done).  work: FS_RUN_WORK_PER_STATE m doubles.  No allocation. */
FS_MAYBE_UNUSED static int fs_run(fs_rhs rhs, fs_hold hold, void *ctx, const double *pw, double *x,
                                  double *q, int m, double t0, double h, int substeps,
                                  int n_steps, int method, int record_every, double *record,
                                  int *done, double *work) {
    double u[FS_PW_MAX_SIGNALS], *y = work, *r = work + m;
    const double hs = h / substeps;
    int k, piece = 0, rows = 1;
    *done = 0;
    if (!fs_piecewise_length(pw) || substeps < 1 || record_every < 1) return FS_RUN_BAD_INPUTS;
    memcpy(record, x, sizeof(double) * m);
    for (k = 0; k < n_steps; k++) {
        piece = fs_piecewise_sample(pw, t0 + h * (double)k, piece, u);
        hold(ctx, u);
        memcpy(y, x, sizeof(double) * m);
        memcpy(r, q, sizeof(double) * m);
        if (fs_steps(rhs, ctx, y, r, m, hs, substeps, method, NULL, work + 2 * m))
            return FS_RUN_RHS_FAILED;
        if (!fs_finite(y, m)) return FS_RUN_NONFINITE;
        memcpy(x, y, sizeof(double) * m);
        memcpy(q, r, sizeof(double) * m);
        *done = k + 1;
        if ((k + 1) % record_every == 0 || k + 1 == n_steps)
            memcpy(record + (long)(rows++) * m, x, sizeof(double) * m);
    }
    return FS_RUN_DONE;
}

#endif
