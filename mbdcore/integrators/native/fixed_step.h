/*
 * The fixed-step methods of mbdcore.integrators in C99, for models whose equations are C:
 * the arm's kernel (one call per communication step from Python) and the C-source FMUs
 * include this header.  The stages are summed exactly as the Python steppers sum them
 * (RK4: the tableau stepper's loop; Gill: mbdcore.integrators.runge_kutta.Gill), so a C
 * step and a Python step of the same method give the same numbers.
 *
 * rhs(ctx, x, dx) returns 0, or nonzero when it cannot evaluate (the step then stops and
 * reports it).  No allocation: the caller passes scratch space of 5 m doubles (7 m for
 * fs_advance).
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

/* One classical RK4 step of h [s] of x (m entries) in place; 0 or the rhs's failure. */
FS_MAYBE_UNUSED static int fs_rk4_step(fs_rhs rhs, void *ctx, double *x, int m, double h, double *scratch) {
    double *k0 = scratch, *k1 = scratch + m, *k2 = scratch + 2 * m, *k3 = scratch + 3 * m;
    double *yi = scratch + 4 * m;
    int i, status;
    if ((status = rhs(ctx, x, k0))) return status;
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

/* One Runge-Kutta-Gill step (Gill 1951) with its round-off register q carried. */
FS_MAYBE_UNUSED static int fs_gill_step(fs_rhs rhs, void *ctx, double *x, double *q, int m, double h,
                        double *scratch) {
    static const double R = 0.70710678118654757;   /* sqrt(1/2) */
    const double a[4] = {0.5, 1 - R, 1 + R, 1.0 / 6.0}, b[4] = {2.0, 1.0, 1.0, 2.0},
                 c[4] = {0.5, 1 - R, 1 + R, 0.5};
    int i, j, status;
    for (j = 0; j < 4; j++) {
        if ((status = rhs(ctx, x, scratch))) return status;
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

/* n steps of h [s] of x (m entries) with RK4 (method 0) or Gill (1, its register q carried;
   q is left alone by RK4), all or nothing: a kernel's advance, which Python calls once per
   communication step (mbdcore.integrators.runge_kutta.CSteppedKernel).  x and q change
   only when every step succeeded and the state is finite; returns 0, the rhs's failure,
   or 1 for a non-finite state.  work: 7 m doubles. */
FS_MAYBE_UNUSED static int fs_advance(fs_rhs rhs, void *ctx, double *x, double *q, int m, double h,
                                      int n, int method, double *work) {
    double *y = work, *r = work + m, *scratch = work + 2 * m;
    int s, i, status;
    memcpy(y, x, sizeof(double) * m);
    memcpy(r, q, sizeof(double) * m);
    for (s = 0; s < n; s++) {
        status = method == 1 ? fs_gill_step(rhs, ctx, y, r, m, h, scratch)
                             : fs_rk4_step(rhs, ctx, y, m, h, scratch);
        if (status) return status;
    }
    for (i = 0; i < m; i++) if (!isfinite(y[i])) return 1;
    memcpy(x, y, sizeof(double) * m);
    memcpy(q, r, sizeof(double) * m);
    return 0;
}

#endif
