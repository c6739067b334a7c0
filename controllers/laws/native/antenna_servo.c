/*
 * The cascaded servo of an antenna pointing axis (controllers/laws/antenna_servo.py:
 * position PI with setpoint weight and rate feedforward, rate PI on the tachometers,
 * Coulomb friction feedforward, conditional-integration anti-windup) and its pointing
 * reference, in plain C99: one implementation, called by AntennaServoController and
 * PointingReference through ctypes and compiled into their C-source FMUs.  The law is
 * described in the docstring of antenna_servo.py.
 *
 * Parameters p = (kp_rate, ki_rate, kp_pos, ki_pos, beta, feedforward, rate_limit,
 * current_limit, ratio, n_motors, friction_current, friction_rate); state z = (z_pos
 * [rad/s], z_rate [A]); inputs u = (reference_angle, reference_rate, axis_angle, speed1,
 * speed2).
 */
#include <math.h>

#ifndef LAWS_API
#define LAWS_API
#endif

enum { SERVO_KP_RATE, SERVO_KI_RATE, SERVO_KP_POS, SERVO_KI_POS, SERVO_BETA, SERVO_FF,
       SERVO_RATE_LIMIT, SERVO_CURRENT_LIMIT, SERVO_RATIO, SERVO_N_MOTORS,
       SERVO_FRICTION_CURRENT, SERVO_FRICTION_RATE, SERVO_N_PARAMS };

/* Python's min(max(v, lo), hi). */
static double servo_clip(double v, double lo, double hi) {
    double m = lo > v ? lo : v;
    return hi < m ? hi : m;
}

typedef struct { double e_pos, w_raw, w_cmd, e_rate, i_raw, i_cmd; } ServoTerms;

static void servo_terms(const double *p, const double *z, const double *u, ServoTerms *s) {
    const int n = p[SERVO_N_MOTORS] >= 2.0 ? 2 : 1;
    double w_meas = u[3];
    s->e_pos = u[0] - u[2];
    s->w_raw = p[SERVO_FF] * u[1] + p[SERVO_KP_POS] * (p[SERVO_BETA] * u[0] - u[2]) + z[0];
    s->w_cmd = servo_clip(s->w_raw, -p[SERVO_RATE_LIMIT], p[SERVO_RATE_LIMIT]);
    if (n == 2) w_meas = w_meas + u[4];
    w_meas = w_meas / n / p[SERVO_RATIO];           /* mean motor speed, axis side */
    s->e_rate = s->w_cmd - w_meas;
    s->i_raw = p[SERVO_KP_RATE] * s->e_rate + z[1]
               + p[SERVO_FRICTION_CURRENT] * tanh(s->w_cmd / p[SERVO_FRICTION_RATE]);
    s->i_cmd = servo_clip(s->i_raw, -p[SERVO_CURRENT_LIMIT], p[SERVO_CURRENT_LIMIT]);
}

LAWS_API int servo_n_params(void) { return SERVO_N_PARAMS; }

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
    dz = h * p[SERVO_KI_POS] * s.e_pos;
    if (!(s.w_raw != s.w_cmd && dz * s.w_raw > 0.0)) z[0] += dz;
    dz = h * p[SERVO_KI_RATE] * s.e_rate;
    if (!(s.i_raw != s.i_cmd && dz * s.i_raw > 0.0)) z[1] += dz;
}

/* The pointing reference at time t [s]: a step of p[0] [rad] at p[1] [s] plus a ramp of
   p[2] [rad/s] from p[3] [s]; out = (angle [rad], rate [rad/s]). */
LAWS_API void pointing_reference(const double *p, double t, double *out) {
    double ramp = t - p[3];
    if (0.0 > ramp) ramp = 0.0;
    out[0] = (t >= p[1] ? p[0] : 0.0) + p[2] * ramp;
    out[1] = t >= p[3] ? p[2] : 0.0;
}
