/*
 * The sampled PID of controllers/laws/pid.py (anti-windup, derivative filter, output
 * limits, setpoint weights) in plain C99: one implementation, called by PIDController
 * through ctypes and compiled into its C-source FMU.  The law and its discretisation are
 * in the docstring of pid.py.
 *
 * Parameters p = (kp, ki, kd, tf, b, c, u_min, u_max, anti_windup, tt) with anti_windup
 * 0 back-calculation, 1 clamping, 2 none, and tt the tracking time constant as given
 * (0: the default); state z = (integral I, filter state xf); inputs u = (r, y, u_ff).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef LAWS_API
#define LAWS_API
#endif

enum { PID_KP, PID_KI, PID_KD, PID_TF, PID_B, PID_C, PID_UMIN, PID_UMAX, PID_AW, PID_TT };

/* The tracking time constant used [s]: tt if given, else Astrom & Hagglund's rule
   sqrt(Ti Td) with D, Ti without (Ti = kp / ki), 1 without an integral. */
LAWS_API double pid_tracking_time(const double *p) {
    double kp = p[PID_KP], ki = p[PID_KI], kd = p[PID_KD], ti;
    if (p[PID_TT] > 0.0) return p[PID_TT];
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
    if (!(p[PID_UMIN] < p[PID_UMAX])) {
        repr_real(a, sizeof a, p[PID_UMIN]);
        repr_real(b, sizeof b, p[PID_UMAX]);
        snprintf(msg, n, "parameters 'u_min' = %s and 'u_max' = %s: u_min must be below u_max",
                 a, b);
        return 1;
    }
    if (p[PID_KD] != 0.0 && !(p[PID_TF] > 0.0)) {
        repr_real(a, sizeof a, p[PID_TF]);
        repr_real(b, sizeof b, p[PID_KD]);
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
    *ed = p[PID_C] * r - y;
    if (p[PID_KD] != 0.0) d = p[PID_KD] * (*ed - z[1]) / p[PID_TF];
    *v = p[PID_KP] * (p[PID_B] * r - y) + z[0] + d + u[2];
}

static double clip(double v, double lo, double hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* The output u, within [u_min, u_max]. */
LAWS_API double pid_output(const double *p, const double *z, const double *u) {
    double e, ed, v;
    pid_terms(p, z, u, &e, &ed, &v);
    return clip(v, p[PID_UMIN], p[PID_UMAX]);
}

/* Advance the state z over a sample of h [s] with the inputs held. */
LAWS_API void pid_update(const double *p, double *z, const double *u, double h) {
    double e, ed, v, out, ki = p[PID_KI];
    int mode = (int)p[PID_AW];
    pid_terms(p, z, u, &e, &ed, &v);
    out = clip(v, p[PID_UMIN], p[PID_UMAX]);
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
    if (p[PID_TF] > 0.0) {
        double a = exp(-h / p[PID_TF]);
        z[1] = a * z[1] + (1.0 - a) * ed;
    } else {
        z[1] = ed;
    }
}
