/*
 * The pointing axis of mbdcore.models.antenna (PointingAxisBlock) in plain C99: the
 * structure's linear modal model coupled through the gear trains to the drive of
 * drive.c (compiled before this file, in the same unit), its outputs and its
 * fixed-step stepping.  Python calls it through ctypes; the C-source FMU compiles it in.
 *
 * The structure comes as one table `tab`, AXIS_LAYOUT below (antenna.py: axis_table, by
 * name through the same declaration), from AntennaStructure.matrices(): ns, the size of
 * the structure state (eta, eta'), then A (ns x ns), B (ns x 2: axis torque, wind),
 * C (4 x ns: axis angle, axis rate, pointing angle, dish tip deflection), row-major.
 *
 * State x = (structure x_s (ns), drive (4 n_motors, drive.c)); the drive's load angle and
 * rate are the rows C[0] and C[1] of x_s, its gear torques drive the structure through
 * B[:, 0].  No allocation; ns <= AXIS_MAX_STRUCTURE.
 */
#include <math.h>
#include <string.h>

#include "fixed_step.h"
#include "table_layout.h"

#ifndef AXIS_API
#define AXIS_API
#endif

#define AXIS_MAX_STRUCTURE 64
#define AXIS_MAX_STATES (AXIS_MAX_STRUCTURE + DRIVE_MAX_STATES)

#define AXIS_LAYOUT(X) X(INT, ns, 1) X(ARRAY, A, ns * ns) X(ARRAY, B, ns * 2) X(ARRAY, C, 4 * ns)

typedef struct {
    AXIS_LAYOUT(TABLE_MEMBER)
} Axis;

TABLE_READER(AXIS_LAYOUT, Axis, axis_read_table)

/* Read the table; returns its length in doubles, or 0 if it is not a valid table. */
static long axis_unpack(const double *tab, Axis *a) {
    long length = axis_read_table(tab, a);
    return length && a->ns >= 2 && a->ns <= AXIS_MAX_STRUCTURE ? length : 0;
}

AXIS_API long axis_table_length(const double *tab) {
    Axis a;
    return axis_unpack(tab, &a);
}

static double axis_row(const double *row, const double *xs, int ns) {
    double s = 0.0;
    int j;
    for (j = 0; j < ns; j++) s += row[j] * xs[j];
    return s;
}

/* The derivatives dx of the whole axis and the gear torques tg (n_motors; may be NULL)
   with the drive command u (voltage [V] or current command [A]) and the wind torque
   [N m] held.  Returns 0, or 1 for a bad table or n_motors. */
AXIS_API int axis_rhs(const double *tab, const double *pk, const double *x, double u,
                      double wind, int n_motors, int current_mode, double *dx, double *tg) {
    Axis a;
    double torques[DRIVE_MAX_MOTORS], total = 0.0, theta, omega;
    int i, j, k;
    if (!axis_unpack(tab, &a)) return 1;
    theta = axis_row(a.C, x, a.ns);
    omega = axis_row(a.C + a.ns, x, a.ns);
    if (drive_rhs(pk, x + a.ns, u, theta, omega, n_motors, current_mode, 0, dx + a.ns,
                  torques, NULL)) return 1;
    for (k = 0; k < n_motors; k++) {
        total += torques[k];
        if (tg) tg[k] = torques[k];
    }
    for (i = 0; i < a.ns; i++) {
        double s = 0.0;
        for (j = 0; j < a.ns; j++) s += a.A[i * a.ns + j] * x[j];
        dx[i] = s + a.B[2 * i] * total + a.B[2 * i + 1] * wind;
    }
    return 0;
}

/* The block's outputs, declared once (antenna.py names them from this list): axis angle
   [rad], axis rate [rad/s], pointing angle [rad], pointing error = reference - pointing
   angle [rad], dish tip deflection [m], per motor the current [A] and speed [rad/s]
   (zeros for a motor not fitted), axis torque [N m] (the gear torques at the present
   inputs). */
#define AXIS_OUTPUT_LAYOUT(X)                                                              \
    X(REAL, axis_angle, 1) X(REAL, axis_rate, 1) X(REAL, pointing_angle, 1)                \
    X(REAL, pointing_error, 1) X(REAL, dish_deflection, 1)                                 \
    X(REAL, current1, 1) X(REAL, speed1, 1) X(REAL, current2, 1) X(REAL, speed2, 1)        \
    X(REAL, axis_torque, 1)
/* their indices, AXIS_OUT_axis_angle, ..., from the layout */
#define AXIS_OUTPUT_INDEX(kind, name, size) TABLE_INDEX_##kind(AXIS_OUT_##name)
enum { AXIS_OUTPUT_LAYOUT(AXIS_OUTPUT_INDEX) AXIS_N_OUTPUTS };
/* five of the structure, two per motor and the axis torque: a list of another count
   does not compile */
typedef char axis_outputs_per_motor[AXIS_N_OUTPUTS == 5 + 2 * DRIVE_MAX_MOTORS + 1 ? 1 : -1];

/* The outputs y (AXIS_N_OUTPUTS values) at state x and the inputs. */
AXIS_API int axis_outputs(const double *tab, const double *pk, const double *x, double u,
                          double wind, double reference, int n_motors, int current_mode,
                          double *y) {
    /* each motor's outputs by name */
    static const int current[DRIVE_MAX_MOTORS] = {AXIS_OUT_current1, AXIS_OUT_current2};
    static const int speed[DRIVE_MAX_MOTORS] = {AXIS_OUT_speed1, AXIS_OUT_speed2};
    Axis a;
    double dx[AXIS_MAX_STATES], tg[DRIVE_MAX_MOTORS], total = 0.0;
    int k;
    if (axis_rhs(tab, pk, x, u, wind, n_motors, current_mode, dx, tg)) return 1;
    axis_unpack(tab, &a);
    y[AXIS_OUT_axis_angle] = axis_row(a.C, x, a.ns);
    y[AXIS_OUT_axis_rate] = axis_row(a.C + a.ns, x, a.ns);
    y[AXIS_OUT_pointing_angle] = axis_row(a.C + 2 * a.ns, x, a.ns);
    y[AXIS_OUT_pointing_error] = reference - y[AXIS_OUT_pointing_angle];
    y[AXIS_OUT_dish_deflection] = axis_row(a.C + 3 * a.ns, x, a.ns);
    for (k = 0; k < DRIVE_MAX_MOTORS; k++) {
        y[current[k]] = k < n_motors ? x[a.ns + 4 * k + 2] : 0.0;
        y[speed[k]] = k < n_motors ? x[a.ns + 4 * k + 1] : 0.0;
        if (k < n_motors) total += tg[k];
    }
    y[AXIS_OUT_axis_torque] = total;
    return 0;
}

typedef struct {
    const double *tab, *pk;
    double u, wind;
    int n_motors, current_mode;
} AxisInputs;

static int axis_rhs_held(void *ctx, const double *x, double *dx) {
    const AxisInputs *in = (const AxisInputs *)ctx;
    return axis_rhs(in->tab, in->pk, x, in->u, in->wind, in->n_motors, in->current_mode, dx,
                    NULL);
}

/* n steps of h [s] with the inputs held: method 0 classical RK4, 1 Runge-Kutta-Gill with
   its round-off register gq carried, 2 Treanor (fixed_step.h); first: f(x) or NULL
   (fs_advance).  Returns 0, or 1 for a bad table or
   n_motors or a non-finite state (x and gq are then unchanged). */
AXIS_API int axis_advance(const double *tab, const double *pk, double *x, double *gq,
                          double u, double wind, int n_motors, int current_mode, double h,
                          int n, int method, const double *first) {
    double work[FS_WORK_PER_STATE * AXIS_MAX_STATES];
    AxisInputs in;
    Axis a;
    if (!axis_unpack(tab, &a) || n_motors < 1 || n_motors > DRIVE_MAX_MOTORS) return 1;
    in.tab = tab; in.pk = pk; in.u = u; in.wind = wind;
    in.n_motors = n_motors; in.current_mode = current_mode;
    return fs_advance(axis_rhs_held, &in, x, gq, a.ns + 4 * n_motors, h, n, method, first,
                      work) != 0;
}

static void axis_hold(void *ctx, const double *u) {
    AxisInputs *in = (AxisInputs *)ctx;
    in->u = u[0]; in->wind = u[1];
}

/* A whole run in one call (fs_run in fixed_step.h) with the drive command and the wind
   torque [N m] of the piecewise table `inputs` sampled at each step's start and held;
   fs_run's status (FS_RUN_BAD_INPUTS also for a bad table or n_motors or a table of other
   than two signals) and the steps taken in *done. */
AXIS_API int axis_run(const double *tab, const double *pk, const double *inputs, double *x,
                      double *gq, int n_motors, int current_mode, double t0, double h,
                      int substeps, int n_steps, int method, int record_every, double *record,
                      int *done) {
    double work[FS_RUN_WORK_PER_STATE * AXIS_MAX_STATES];
    AxisInputs in;
    Axis a;
    *done = 0;
    if (!axis_unpack(tab, &a) || n_motors < 1 || n_motors > DRIVE_MAX_MOTORS
        || inputs[0] != 2.0)
        return FS_RUN_BAD_INPUTS;
    in.tab = tab; in.pk = pk; in.u = 0.0; in.wind = 0.0;
    in.n_motors = n_motors; in.current_mode = current_mode;
    return fs_run(axis_rhs_held, axis_hold, &in, inputs, x, gq, a.ns + 4 * n_motors, t0, h,
                  substeps, n_steps, method, record_every, record, done, work);
}
