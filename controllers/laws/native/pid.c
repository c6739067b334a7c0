/*
 * The sampled PID of controllers/laws/pid.py (anti-windup, derivative filter, output
 * limits, setpoint weights) in plain C99: one implementation, called by PIDController
 * through ctypes and compiled into its C-source FMU.  The law and its discretisation are
 * in the docstring of pid.py.
 *
 * Parameters p, PID_LAYOUT below (pid.py packs them by name through the same
 * declaration): the block's parameters by their names, anti_windup 0 back-calculation,
 * 1 clamping, 2 none, and tt the tracking time constant as given (0: the default);
 * state z = (integral I, filter state xf); inputs u = (r, y, u_ff).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table_layout.h"

#ifndef LAWS_API
#define LAWS_API
#endif

#define PID_LAYOUT(X)                                                                      \
    X(REAL, kp, 1) X(REAL, ki, 1) X(REAL, kd, 1) X(REAL, tf, 1) X(REAL, b, 1) X(REAL, c, 1) \
    X(REAL, u_min, 1) X(REAL, u_max, 1) X(INT, anti_windup, 1) X(REAL, tt, 1)
/* p's indices, PID_kp, ..., from the layout */
#define PID_INDEX(kind, name, size) TABLE_INDEX_##kind(PID_##name)
enum { PID_LAYOUT(PID_INDEX) PID_N_PARAMS };

/* The tracking time constant used [s]: tt if given, else Astrom & Hagglund's rule
   sqrt(Ti Td) with D, Ti without (Ti = kp / ki), 1 without an integral. */
LAWS_API double pid_tracking_time(const double *p) {
    double kp = p[PID_kp], ki = p[PID_ki], kd = p[PID_kd], ti;
    if (p[PID_tt] > 0.0) return p[PID_tt];
    if (ki == 0.0) return 1.0;
    ti = kp != 0.0 ? fabs(kp / ki) : 1.0 / fabs(ki);
    return (kd != 0.0 && kp != 0.0) ? sqrt(ti * fabs(kd / kp)) : ti;
}

/* x as Python's repr writes a float: the shortest digits that read back exactly, and a
   ".0" on a whole number (so that messages read the same from Python and from C). */
static void repr_real(char *out, size_t n, double x) {
    int digits;
    for (digits = 1; digits <= 17; digits++) {
        snprintf(out, n, "%.*g", digits, x);
        if (strtod(out, NULL) == x) break;
    }
    if (isfinite(x) && !strpbrk(out, ".e") && strlen(out) + 2 < n) strcat(out, ".0");
}

/* 0 if the parameters go together, else 1 with a message naming them. */
LAWS_API int pid_check(const double *p, char *msg, size_t n) {
    char a[32], b[32];
    if (!(p[PID_u_min] < p[PID_u_max])) {
        repr_real(a, sizeof a, p[PID_u_min]);
        repr_real(b, sizeof b, p[PID_u_max]);
        snprintf(msg, n, "parameters 'u_min' = %s and 'u_max' = %s: u_min must be below u_max",
                 a, b);
        return 1;
    }
    if (p[PID_kd] != 0.0 && !(p[PID_tf] > 0.0)) {
        repr_real(a, sizeof a, p[PID_tf]);
        repr_real(b, sizeof b, p[PID_kd]);
        snprintf(msg, n, "parameter 'tf' = %s: a derivative gain (kd = %s) needs a filter "
                 "time constant tf > 0 [s]", a, b);
        return 1;
    }
    return 0;
}

/* Integral error e, derivative error ed and unlimited output v now. */
static void pid_terms(const double *p, const double *z, const double *u, double *e, double *ed,
                      double *v) {
    double r = u[0], y = u[1], d = 0.0;
    *e = r - y;
    *ed = p[PID_c] * r - y;
    if (p[PID_kd] != 0.0) d = p[PID_kd] * (*ed - z[1]) / p[PID_tf];
    *v = p[PID_kp] * (p[PID_b] * r - y) + z[0] + d + u[2];
}

static double clip(double v, double lo, double hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* The output u, within [u_min, u_max]. */
LAWS_API double pid_output(const double *p, const double *z, const double *u) {
    double e, ed, v;
    pid_terms(p, z, u, &e, &ed, &v);
    return clip(v, p[PID_u_min], p[PID_u_max]);
}

/* Advance the state z over a sample of h [s] with the inputs held. */
LAWS_API void pid_update(const double *p, double *z, const double *u, double h) {
    double e, ed, v, out, ki = p[PID_ki];
    int mode = (int)p[PID_anti_windup];
    pid_terms(p, z, u, &e, &ed, &v);
    out = clip(v, p[PID_u_min], p[PID_u_max]);
    if (out == v || mode == 2) {
        z[0] += h * ki * e;
    } else if (mode == 1) {
        if (ki * e * (v - out) < 0.0) z[0] += h * ki * e;   /* pulls back out of the limit */
    } else {
        /* I' = ki e + (u - (v - I) - I) / tt, exact over the step with e, u, v - I held */
        double tt = pid_tracking_time(p);
        double target = ki * e * tt + out - (v - z[0]);
        z[0] = target + (z[0] - target) * exp(-h / tt);
    }
    if (p[PID_tf] > 0.0) {
        double a = exp(-h / p[PID_tf]);
        z[1] = a * z[1] + (1.0 - a) * ed;
    } else {
        z[1] = ed;
    }
}
