/*
 * The DC drive of mbdcore.models.drive in plain C99: the motor's and the gear train's
 * physics, the drive's right-hand side (motors, PI current amplifiers, gear trains to
 * one load axis) and its fixed-step stepping.  This file is the drive's one
 * implementation: the engine elements (DCMotorBody, GearTrain), the block (DCMotorBlock)
 * and the pointing axis (antenna_axis.c) call it, from Python through ctypes
 * (mbdcore.native) and compiled into the C-source FMUs.  The equations are in the
 * module docstring of drive.py.
 *
 * The parameters come in one packed vector pk, DRIVE_LAYOUT below (drive.py: pack_drive,
 * by name through the same declaration).  The drive state of motor k is x[4k..4k+3] = (phi_k [rad],
 * w_k [rad/s], i_k [A], z_k [V s]: the current-loop integrator).  At most
 * DRIVE_MAX_MOTORS motors.  No allocation.
 */
#include <math.h>
#include <string.h>

#include "fixed_step.h"
#include "table_layout.h"

#ifndef DRIVE_API
#define DRIVE_API
#endif

#define DRIVE_MAX_MOTORS 2
#define DRIVE_MAX_STATES (4 * DRIVE_MAX_MOTORS)

/* The drive's parameters pk: the block's motor and gear parameters by their names
   (drive.py), the counter-torque bias [A], then the current loop's PI gains kp_i [V/A]
   and ki_i [V/(A s)], which drive_pack computes (they come last). */
#define DRIVE_LAYOUT(X)                                                                    \
    X(REAL, resistance, 1) X(REAL, inductance, 1) X(REAL, torque_constant, 1)              \
    X(REAL, emf_constant, 1) X(REAL, rotor_inertia, 1) X(REAL, viscous_friction, 1)        \
    X(REAL, coulomb_friction, 1) X(REAL, friction_speed, 1) X(REAL, current_limit, 1)      \
    X(REAL, voltage_limit, 1) X(REAL, ratio, 1) X(REAL, gear_stiffness, 1)                 \
    X(REAL, gear_damping, 1) X(REAL, backlash, 1) X(REAL, backlash_smoothing, 1)           \
    X(REAL, bias_current, 1) X(REAL, kp_i, 1) X(REAL, ki_i, 1)

/* pk's indices, DRIVE_resistance, ..., from the layout */
#define DRIVE_INDEX(kind, name, size) TABLE_INDEX_##kind(DRIVE_##name)
enum { DRIVE_LAYOUT(DRIVE_INDEX) DRIVE_N_PACKED };

/* Python's min(max(v, lo), hi), the same result for every v (NaN passes through). */
static double drive_clip(double v, double lo, double hi) {
    double m = lo > v ? lo : v;
    return hi < m ? hi : m;
}

/* b w + Tc tanh(w / w_c) [N m]: viscous and smoothed Coulomb friction. */
DRIVE_API double drive_friction_torque(double speed, double viscous, double coulomb,
                                       double speed_scale) {
    return viscous * speed + coulomb * tanh(speed / speed_scale);
}

static double drive_softplus(double x) {
    return (0.0 > x ? 0.0 : x) + log1p(exp(-fabs(x)));
}

/* Backlash dead zone of half width `half_width`, corners rounded by softplus over
   `smoothing`; x itself when half_width = 0. */
DRIVE_API double drive_dead_zone(double x, double half_width, double smoothing) {
    double e = smoothing;
    if (half_width == 0.0) return x;
    return e * (drive_softplus((x - half_width) / e) - drive_softplus((-x - half_width) / e));
}

/* drive_dead_zone over n values (arrays of x, half widths and smoothings). */
DRIVE_API void drive_dead_zones(const double *x, const double *half_width,
                                const double *smoothing, double *y, long n) {
    long k;
    for (k = 0; k < n; k++) y[k] = drive_dead_zone(x[k], half_width[k], smoothing[k]);
}

/* The motor's own generalised forces: out[0] torque on the rotor Kt i - b w - Tc tanh(w/w_c)
   [N m], out[1] armature voltage balance -R i - Ke w [V] (supply voltage and gear torque
   come on top). */
DRIVE_API void drive_motor_forces(double speed, double current, double torque_constant,
                                  double emf_constant, double resistance, double viscous,
                                  double coulomb, double speed_scale, double *out) {
    out[0] = torque_constant * current
             - drive_friction_torque(speed, viscous, coulomb, speed_scale);
    out[1] = -resistance * current - emf_constant * speed;
}

/* Torque of a gear train on its load [N m] from the load-side twist [rad] and twist rate
   [rad/s]: k dz(d) + c d'. */
DRIVE_API double drive_gear_torque(double twist, double twist_rate, double stiffness,
                                   double damping, double backlash, double smoothing) {
    return stiffness * drive_dead_zone(twist, backlash, smoothing) + damping * twist_rate;
}

/* d dz/dx of drive_dead_zone: the logistic of each softplus' argument summed; 1 when
   half_width = 0. */
DRIVE_API double drive_dead_zone_slope(double x, double half_width, double smoothing) {
    double e = smoothing;
    if (half_width == 0.0) return 1.0;
    return 1.0 / (1.0 + exp(-(x - half_width) / e)) + 1.0 / (1.0 + exp((x + half_width) / e));
}

/* The gear law's parameters, declared once (drive.py's gear_law packs them by name):
   stiffness [N m/rad], damping [N m s/rad], backlash half width [rad], smoothing [rad];
   their indices GEAR_stiffness, ... from the layout. */
#define GEAR_LAW_LAYOUT(X)                                                                 \
    X(REAL, stiffness, 1) X(REAL, damping, 1) X(REAL, backlash, 1) X(REAL, smoothing, 1)
#define GEAR_LAW_INDEX(kind, name, size) TABLE_INDEX_##kind(GEAR_##name)
enum { GEAR_LAW_LAYOUT(GEAR_LAW_INDEX) GEAR_N_PARAMETERS };

/* The gear law as a force law of the engine's measure elements (force_law_fn of
   mbdcore/multibody/native/system_terms.c, the twist as the measure): p of
   GEAR_LAW_LAYOUT; out = (T, dT/dd, dT/dd'). */
DRIVE_API void drive_gear_law(const double *p, double twist, double twist_rate,
                              double *out) {
    out[0] = drive_gear_torque(twist, twist_rate, p[GEAR_stiffness], p[GEAR_damping],
                               p[GEAR_backlash], p[GEAR_smoothing]);
    out[1] = p[GEAR_stiffness] * drive_dead_zone_slope(twist, p[GEAR_backlash],
                                                       p[GEAR_smoothing]);
    out[2] = p[GEAR_damping];
}

/* A DC motor body's parameters, declared once (DCMotorBody packs them by name): Kt
   [N m/A], Ke [V s/rad], R [ohm], b [N m s/rad], Tc [N m], w_c [rad/s] as
   drive_motor_forces takes them; their indices MOTOR_torque_constant, ... */
#define MOTOR_BODY_LAYOUT(X)                                                               \
    X(REAL, torque_constant, 1) X(REAL, emf_constant, 1) X(REAL, resistance, 1)            \
    X(REAL, viscous_friction, 1) X(REAL, coulomb_friction, 1) X(REAL, friction_speed, 1)
#define MOTOR_BODY_INDEX(kind, name, size) TABLE_INDEX_##kind(MOTOR_##name)
enum { MOTOR_BODY_LAYOUT(MOTOR_BODY_INDEX) MOTOR_N_PARAMETERS };

/* Its forces through the one signature of a body's compiled force kernel (body_force_fn
   of system_terms.c): q = (phi, charge), v = (w, i), params of MOTOR_BODY_LAYOUT. */
DRIVE_API void drive_motor_body_forces(const void *params, const double *q,
                                       const double *v, double *f) {
    const double *p = (const double *)params;
    (void)q;
    drive_motor_forces(v[0], v[1], p[MOTOR_torque_constant], p[MOTOR_emf_constant],
                       p[MOTOR_resistance], p[MOTOR_viscous_friction],
                       p[MOTOR_coulomb_friction], p[MOTOR_friction_speed], f);
}

/* Its tangents (body_tangent_fn): -df/dv added into C, leading dimension ld (no q). */
DRIVE_API void drive_motor_body_tangent(const void *params, const double *q,
                                        const double *v, double *K, double *C, int ld) {
    const double *p = (const double *)params;
    const double w_c = p[MOTOR_friction_speed];
    const double x = fabs(v[0]) / w_c, ch = cosh(x < 350.0 ? x : 350.0);
    (void)q;
    (void)K;
    C[0] += p[MOTOR_viscous_friction] + p[MOTOR_coulomb_friction] / w_c / (ch * ch);
    C[1] -= p[MOTOR_torque_constant];
    C[ld] += p[MOTOR_emf_constant];
    C[ld + 1] += p[MOTOR_resistance];
}

/* PI gains of a current loop whose zero cancels R/L: out = (kp = L w_c [V/A],
   ki = R w_c [V/(A s)]). */
DRIVE_API void drive_current_loop_gains(double resistance, double inductance,
                                        double bandwidth, double *out) {
    out[0] = inductance * bandwidth;
    out[1] = resistance * bandwidth;
}

/* The packed parameters pk (DRIVE_N_PACKED) from the block's motor and gear parameters
   and bias current (`given`, the fields of DRIVE_LAYOUT before the gains) and the
   current loop's bandwidth [rad/s]: what a C FMU's model_setup fills its work array
   with. */
DRIVE_API void drive_pack(const double *given, double bandwidth, double *pk) {
    int k;
    for (k = 0; k < DRIVE_kp_i; k++) pk[k] = given[k];
    drive_current_loop_gains(pk[DRIVE_resistance], pk[DRIVE_inductance], bandwidth,
                             pk + DRIVE_kp_i);
}

/* The drive's derivatives dx (4 n_motors), the gear torques on the load tg (n_motors)
   [N m] and the armature voltages volts (n_motors) [V], the load at angle theta [rad]
   and rate omega [rad/s].  Voltage mode: u is the voltage [V].  Current mode: u is the
   current command [A] of the PI amplifier (motor k: +-bias, clipped to the current
   limit), its voltage clipped to the supply with conditional integration.  locked: the
   rotors held.  tg and volts may be NULL.  Returns 0, or 1 for a bad n_motors. */
DRIVE_API int drive_rhs(const double *pk, const double *x, double u, double theta,
                        double omega, int n_motors, int current_mode, int locked, double *dx,
                        double *tg, double *volts) {
    const double n = pk[DRIVE_ratio], jm = pk[DRIVE_rotor_inertia], ind = pk[DRIVE_inductance];
    int k;
    if (n_motors < 1 || n_motors > DRIVE_MAX_MOTORS) return 1;
    for (k = 0; k < n_motors; k++) {
        const double phi = x[4 * k], w = x[4 * k + 1], i = x[4 * k + 2], z = x[4 * k + 3];
        double v, dz = 0.0, gear, f[2];
        if (current_mode) {
            const double sign = k == 0 ? 1.0 : -1.0;
            const double iref = drive_clip(u + sign * pk[DRIVE_bias_current],
                                           -pk[DRIVE_current_limit], pk[DRIVE_current_limit]);
            const double err = iref - i;
            const double v_raw = pk[DRIVE_kp_i] * err + z;
            v = drive_clip(v_raw, -pk[DRIVE_voltage_limit], pk[DRIVE_voltage_limit]);
            dz = pk[DRIVE_ki_i] * err;
            if (v != v_raw && dz * v_raw > 0.0) dz = 0.0;
        } else {
            v = drive_clip(u, -pk[DRIVE_voltage_limit], pk[DRIVE_voltage_limit]);
        }
        gear = drive_gear_torque(phi / n - theta, w / n - omega, pk[DRIVE_gear_stiffness],
                                 pk[DRIVE_gear_damping], pk[DRIVE_backlash],
                                 pk[DRIVE_backlash_smoothing]);
        drive_motor_forces(w, i, pk[DRIVE_torque_constant], pk[DRIVE_emf_constant],
                           pk[DRIVE_resistance], pk[DRIVE_viscous_friction],
                           pk[DRIVE_coulomb_friction], pk[DRIVE_friction_speed], f);
        if (locked) {
            dx[4 * k] = 0.0;
            dx[4 * k + 1] = 0.0;
        } else {
            dx[4 * k] = w;
            dx[4 * k + 1] = (f[0] - gear / n) / jm;
        }
        dx[4 * k + 2] = (v + f[1]) / ind;
        dx[4 * k + 3] = dz;
        if (tg) tg[k] = gear;
        if (volts) volts[k] = v;
    }
    return 0;
}

/* The drive block's outputs, declared once (drive.py names them from this list): per
   motor k the current [A], speed [rad/s], angle [rad], electromagnetic torque Kt i [N m]
   and gear torque [N m] (zeros for a motor not fitted), then the axis torque [N m]. */
#define DRIVE_OUTPUT_LAYOUT(X)                                                             \
    X(REAL, current1, 1) X(REAL, speed1, 1) X(REAL, angle1, 1) X(REAL, torque1, 1)         \
    X(REAL, gear_torque1, 1)                                                               \
    X(REAL, current2, 1) X(REAL, speed2, 1) X(REAL, angle2, 1) X(REAL, torque2, 1)         \
    X(REAL, gear_torque2, 1)                                                               \
    X(REAL, axis_torque, 1)
/* their indices, DRIVE_OUT_current1, ..., from the layout */
#define DRIVE_OUTPUT_INDEX(kind, name, size) TABLE_INDEX_##kind(DRIVE_OUT_##name)
enum { DRIVE_OUTPUT_LAYOUT(DRIVE_OUTPUT_INDEX) DRIVE_N_OUTPUTS };
/* five outputs per motor and the axis torque: a list of another count does not compile */
typedef char drive_outputs_per_motor[DRIVE_N_OUTPUTS == 5 * DRIVE_MAX_MOTORS + 1 ? 1 : -1];

/* The outputs y (DRIVE_N_OUTPUTS values) from the drive's state and inputs. */
DRIVE_API int drive_outputs(const double *pk, const double *x, double u, double theta,
                            double omega, int n_motors, int current_mode, int locked,
                            double *y) {
    /* each motor's outputs by name */
    static const int current[DRIVE_MAX_MOTORS] = {DRIVE_OUT_current1, DRIVE_OUT_current2};
    static const int speed[DRIVE_MAX_MOTORS] = {DRIVE_OUT_speed1, DRIVE_OUT_speed2};
    static const int angle[DRIVE_MAX_MOTORS] = {DRIVE_OUT_angle1, DRIVE_OUT_angle2};
    static const int torque[DRIVE_MAX_MOTORS] = {DRIVE_OUT_torque1, DRIVE_OUT_torque2};
    static const int gear[DRIVE_MAX_MOTORS] = {DRIVE_OUT_gear_torque1, DRIVE_OUT_gear_torque2};
    double dx[DRIVE_MAX_STATES], tg[DRIVE_MAX_MOTORS], total = 0.0;
    int k;
    if (drive_rhs(pk, x, u, theta, omega, n_motors, current_mode, locked, dx, tg, NULL))
        return 1;
    for (k = 0; k < DRIVE_MAX_MOTORS; k++) {
        const int fitted = k < n_motors;
        y[current[k]] = fitted ? x[4 * k + 2] : 0.0;
        y[speed[k]] = fitted ? x[4 * k + 1] : 0.0;
        y[angle[k]] = fitted ? x[4 * k] : 0.0;
        y[torque[k]] = fitted ? pk[DRIVE_torque_constant] * x[4 * k + 2] : 0.0;
        y[gear[k]] = fitted ? tg[k] : 0.0;
        if (fitted) total += tg[k];
    }
    y[DRIVE_OUT_axis_torque] = total;
    return 0;
}

typedef struct {
    const double *pk;
    double u, theta, omega;
    int n_motors, current_mode, locked;
} DriveInputs;

static int drive_rhs_held(void *ctx, const double *x, double *dx) {
    const DriveInputs *in = (const DriveInputs *)ctx;
    return drive_rhs(in->pk, x, in->u, in->theta, in->omega, in->n_motors, in->current_mode,
                     in->locked, dx, NULL, NULL);
}

/* n steps of h [s] with the inputs held: method 0 classical RK4, 1 Runge-Kutta-Gill with
   its round-off register gq carried, 2 Treanor (fixed_step.h); first: f(x) or NULL
   (fs_advance).  Returns 0, or 1 for a bad n_motors
   or a non-finite state (x and gq are then unchanged). */
DRIVE_API int drive_advance(const double *pk, double *x, double *gq, double u, double theta,
                            double omega, int n_motors, int current_mode, int locked,
                            double h, int n, int method, const double *first) {
    double work[FS_WORK_PER_STATE * DRIVE_MAX_STATES];
    DriveInputs in;
    if (n_motors < 1 || n_motors > DRIVE_MAX_MOTORS) return 1;
    in.pk = pk; in.u = u; in.theta = theta; in.omega = omega;
    in.n_motors = n_motors; in.current_mode = current_mode; in.locked = locked;
    return fs_advance(drive_rhs_held, &in, x, gq, 4 * n_motors, h, n, method, first,
                      work) != 0;
}

static void drive_hold(void *ctx, const double *u) {
    DriveInputs *in = (DriveInputs *)ctx;
    in->u = u[0]; in->theta = u[1]; in->omega = u[2];
}

/* A whole run in one call (fs_run in fixed_step.h) with the command, the load angle
   [rad] and rate [rad/s] of the piecewise table `inputs` sampled at each step's start and
   held; fs_run's status (FS_RUN_BAD_INPUTS also for a bad n_motors or a table of other
   than three signals) and the steps taken in *done. */
DRIVE_API int drive_run(const double *pk, const double *inputs, double *x, double *gq,
                        int n_motors, int current_mode, int locked, double t0, double h,
                        int substeps, int n_steps, int method, int record_every,
                        double *record, int *done) {
    double work[FS_RUN_WORK_PER_STATE * DRIVE_MAX_STATES];
    DriveInputs in;
    *done = 0;
    if (n_motors < 1 || n_motors > DRIVE_MAX_MOTORS || inputs[0] != 3.0) return FS_RUN_BAD_INPUTS;
    in.pk = pk; in.u = 0.0; in.theta = 0.0; in.omega = 0.0;
    in.n_motors = n_motors; in.current_mode = current_mode; in.locked = locked;
    return fs_run(drive_rhs_held, drive_hold, &in, inputs, x, gq, 4 * n_motors, t0, h,
                  substeps, n_steps, method, record_every, record, done, work);
}
