/*
 * The cascaded servo of an antenna pointing axis (controllers/laws/antenna_servo.py:
 * position PI with setpoint weight and rate feedforward, rate PI on the tachometers,
 * Coulomb friction feedforward, conditional-integration anti-windup) and its pointing
 * reference, in plain C99: one implementation, called by AntennaServoController and
 * PointingReference through ctypes and compiled into their C-source FMUs.  The law is
 * described in the docstring of antenna_servo.py.
 *
 * Parameters p, SERVO_LAYOUT below (antenna_servo.py packs them by name through the
 * same declaration): the servo's parameters by their names; state z = (z_pos [rad/s],
 * z_rate [A]); inputs u = (reference_angle, reference_rate, axis_angle, speed1, speed2).
 * The reference's parameters: POINTING_LAYOUT.
 */
#include <math.h>

#include "table_layout.h"

#ifndef LAWS_API
#define LAWS_API
#endif

#define SERVO_LAYOUT(X)                                                                    \
    X(REAL, kp_rate, 1) X(REAL, ki_rate, 1) X(REAL, kp_pos, 1) X(REAL, ki_pos, 1)          \
    X(REAL, beta, 1) X(REAL, feedforward, 1) X(REAL, rate_limit, 1)                        \
    X(REAL, current_limit, 1) X(REAL, ratio, 1) X(INT, n_motors, 1)                        \
    X(REAL, friction_current, 1) X(REAL, friction_rate, 1)
/* p's indices, SERVO_kp_rate, ..., from the layout */
#define SERVO_INDEX(kind, name, size) TABLE_INDEX_##kind(SERVO_##name)
enum { SERVO_LAYOUT(SERVO_INDEX) SERVO_N_PARAMS };

/* The pointing reference: a step of `step` [rad] at step_time [s] plus a ramp of `rate`
   [rad/s] from ramp_time [s]. */
#define POINTING_LAYOUT(X) X(REAL, step, 1) X(REAL, step_time, 1) X(REAL, rate, 1) X(REAL, ramp_time, 1)
#define POINTING_INDEX(kind, name, size) TABLE_INDEX_##kind(POINTING_##name)
enum { POINTING_LAYOUT(POINTING_INDEX) POINTING_N_PARAMS };

/* Python's min(max(v, lo), hi). */
static double servo_clip(double v, double lo, double hi) {
    double m = lo > v ? lo : v;
    return hi < m ? hi : m;
}

typedef struct { double e_pos, w_raw, w_cmd, e_rate, i_raw, i_cmd; } ServoTerms;

static void servo_terms(const double *p, const double *z, const double *u, ServoTerms *s) {
    const int n = p[SERVO_n_motors] >= 2.0 ? 2 : 1;
    double w_meas = u[3];
    s->e_pos = u[0] - u[2];
    s->w_raw = p[SERVO_feedforward] * u[1] + p[SERVO_kp_pos] * (p[SERVO_beta] * u[0] - u[2])
               + z[0];
    s->w_cmd = servo_clip(s->w_raw, -p[SERVO_rate_limit], p[SERVO_rate_limit]);
    if (n == 2) w_meas = w_meas + u[4];
    w_meas = w_meas / n / p[SERVO_ratio];           /* mean motor speed, axis side */
    s->e_rate = s->w_cmd - w_meas;
    s->i_raw = p[SERVO_kp_rate] * s->e_rate + z[1]
               + p[SERVO_friction_current] * tanh(s->w_cmd / p[SERVO_friction_rate]);
    s->i_cmd = servo_clip(s->i_raw, -p[SERVO_current_limit], p[SERVO_current_limit]);
}

/* The outputs: out[0] current command [A], out[1] axis rate command [rad/s]. */
LAWS_API void servo_outputs(const double *p, const double *z, const double *u, double *out) {
    ServoTerms s;
    servo_terms(p, z, u, &s);
    out[0] = s.i_cmd;
    out[1] = s.w_cmd;
}

/* The integrators over one step of h [s] (forward Euler, inputs of the step's start),
   each stopped while its loop saturates in the direction it would push. */
LAWS_API void servo_update(const double *p, double *z, const double *u, double h) {
    ServoTerms s;
    double dz;
    servo_terms(p, z, u, &s);
    dz = h * p[SERVO_ki_pos] * s.e_pos;
    if (!(s.w_raw != s.w_cmd && dz * s.w_raw > 0.0)) z[0] += dz;
    dz = h * p[SERVO_ki_rate] * s.e_rate;
    if (!(s.i_raw != s.i_cmd && dz * s.i_raw > 0.0)) z[1] += dz;
}

/* The pointing reference of p (POINTING_LAYOUT) at time t [s]: out = (angle [rad],
   rate [rad/s]). */
LAWS_API void pointing_reference(const double *p, double t, double *out) {
    double ramp = t - p[POINTING_ramp_time];
    if (0.0 > ramp) ramp = 0.0;
    out[0] = (t >= p[POINTING_step_time] ? p[POINTING_step] : 0.0) + p[POINTING_rate] * ramp;
    out[1] = t >= p[POINTING_ramp_time] ? p[POINTING_rate] : 0.0;
}
