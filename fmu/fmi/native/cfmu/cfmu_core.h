/*
 * flexcosim C-source FMU: everything of the co-simulation interface that does not depend
 * on the FMI version -- the instance and its phases, value checks, stepping, saved
 * states, the numbers of the export -- included once by each version's front end
 * (fmi2_cs.c: FMI 2.0; fmi3_cs.c: FMI 3.0), which translates its calls into these.
 * Plain C99 and libm; memory is taken only when an instance is made and when a state is
 * saved, through the front end's cf_host_alloc.
 *
 * Behaviour (as the project's Python FMUs):
 *  - a parameter is set before initialization mode is left only; a value that is not
 *    finite, outside its range or not one of its choices is refused with an error status
 *    and a log message naming the variable and the accepted values; the old value stays;
 *  - an input that is not finite or outside its range is refused the same way;
 *  - a step integrates the continuous state with RK4 or Gill (fixed_step.h, "method",
 *    "substeps" steps per communication step; substeps = 0, "auto": n and 2n substeps
 *    with n doubled until their difference meets "rtol" and "atol", at most 4096, as the
 *    Python block: fs_advance_auto) and advances the discrete state; a step that gives a
 *    non-finite state, misses the tolerance of "auto", or an output that is not finite or
 *    outside its declared range, is undone (the whole state: continuous, discrete --
 *    estimators, filters, integrators --, Gill's register, time) and discarded with a
 *    message naming the variable and its value;
 *  - after a discarded step, `terminated` says whether the model can go on (0: a retry
 *    with a smaller step may succeed; 1: the model is at its hard limit, or the host
 *    retried the very step just discarded, which a deterministic model discards again)
 *    and d.time where it is;
 *  - the communication point is checked exactly (communication_point_ok): the FMU keeps
 *    its time as the double sum of the accepted t + h and a step count;
 *  - when the model leaves the range where it is accurate (model_validity), a warning is
 *    logged once per run (the step stands);
 *  - the whole state (time, values, continuous and discrete state) is saved and
 *    serialized as bytes with a header and an FNV-1a 64 checksum; a state read back is
 *    checked field by field (state_bad: ranges, finiteness, the derived numbers w against
 *    the parameters, its outputs) before it is used;
 *  - built with FLEXCOSIM_DATA_FROM_RESOURCES, the numbers of the export (GUID, start
 *    values and ranges, tables) are read at the first instantiation from
 *    resources/model_data.bin and checked field by field (load_model_data); a later
 *    instantiation of the same loaded binary must bring the same numbers.
 * Error messages reach the logger whatever loggingOn says.
 *
 * The front end defines, before including this file, CF_HOST_FIELDS (its members of the
 * instance: the host's callbacks) and CF_TERMINATED_NAME (what its host reads to learn
 * that the model cannot go on, named in discard messages); after it, it defines
 *   static void cf_host_log(Instance *c, int status, const char *category, const char *text);
 *   static void *cf_host_alloc(Instance *c, size_t size);   (zeroed memory, or NULL)
 *   static void cf_host_free(Instance *c, void *p);
 */
#ifndef FLEXCOSIM_CFMU_CORE_H
#define FLEXCOSIM_CFMU_CORE_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flexcosim_model.h"
#ifdef FLEXCOSIM_DATA_FROM_RESOURCES
#include "fmi_resources.h"   /* where resources/model_data.bin is */
#endif
#include "fixed_step.h"    /* RK4 and Gill, as mbdcore.integrators sums them */

#ifndef CF_HOST_FIELDS
#error "the FMI front end defines CF_HOST_FIELDS before including cfmu_core.h"
#endif
/* how the front end tells a host that the model cannot go on (fmi2Terminated) */
#ifndef CF_TERMINATED_NAME
#define CF_TERMINATED_NAME "terminated"
#endif

/* The statuses of a call, numbered as fmi2Status and fmi3Status number them. */
enum { CF_OK = 0, CF_WARNING = 1, CF_DISCARD = 2, CF_ERROR = 3 };

/* Whether the model can be exchanged as equations (Model Exchange: the host's solver
   integrates model_derivatives): a continuous state only, no discrete state or sample
   time. */
#if N_X > 0 && N_Z == 0 && !defined(SAMPLE_TIME)
#define CF_MODEL_EXCHANGE 1
#else
#define CF_MODEL_EXCHANGE 0
#endif

/* The tolerances of substeps = 0, "auto" (model_config.h names them where the model has
   them; a model_config.h written before "auto" came to C has no such lines). */
#ifndef VR_RTOL
#define VR_RTOL -1
#endif
#ifndef VR_ATOL
#define VR_ATOL -1
#endif

typedef enum { ST_INSTANTIATED, ST_INITIALIZATION, ST_STEPPING, ST_TERMINATED, ST_ERROR } Phase;

typedef struct {
    ModelData d;
    Phase phase;
    int logging_on;
    int range_warned;      /* model_validity has been reported in this run */
    int model_exchange;    /* made for Model Exchange: the host integrates (cf_me_*) */
    int outputs_current;   /* d.r's outputs are those of d as it is now (a co-simulation
                              step's check or a getter computed them since the last change
                              of d): a getter need not run model_outputs again */
    int terminated;        /* after the last discarded step: the model cannot go on */
    int has_discarded;     /* discarded_from and discarded_h hold the last discarded step */
    double discarded_h;
    ModelData discarded_from;   /* the state (inputs included) the last discarded step began at */
    char name[128];
    CF_HOST_FIELDS
} Instance;

/* A serialized state: StateHeader | ModelData | FNV-1a 64 of the bytes before it.  The
   magic changes with the layout ("FCS2": the checksum and the step count; "FCS3":
   auto_substeps): a state of an older layout is refused by its magic, not misread. */
#define STATE_MAGIC 0x33534346u   /* "FCS3" */
typedef struct {
    unsigned magic;
    unsigned size;
    char guid[64];
} StateHeader;

/* What a saved state is (fmi2GetFMUstate, fmi3GetFMUState): the data between a magic and a checksum, so that a
   pointer that is not one of ours, or memory overwritten since, is refused. */
#define SAVED_MAGIC 0x53534346u   /* "FCSS" */
typedef struct {
    unsigned magic;
    unsigned size;
    ModelData d;
    unsigned long long checksum;
} SavedState;

static unsigned long long fnv1a(const unsigned char *p, size_t n) {
    unsigned long long h = 14695981039346656037ULL;
    size_t i;
    for (i = 0; i < n; ++i) { h ^= p[i]; h *= 1099511628211ULL; }
    return h;
}

/* the front end's (see the head of this file) */
static void cf_host_log(Instance *c, int status, const char *category, const char *text);
static void *cf_host_alloc(Instance *c, size_t size);
static void cf_host_free(Instance *c, void *p);

/* ---------------------------------------------------------------- logging ---------- */
static void logv_(Instance *c, int status, const char *category, const char *fmt, va_list args) {
    char text[1024];
    if (!c) return;
    if (status == CF_OK && !c->logging_on) return;
    vsnprintf(text, sizeof text, fmt, args);
    cf_host_log(c, status, category, text);
}

static void logf_(Instance *c, int status, const char *category, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    logv_(c, status, category, fmt, args);
    va_end(args);
}

/* Log an error (whatever loggingOn says) and return CF_ERROR. */
static int fail(Instance *c, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    logv_(c, CF_ERROR, "logStatusError", fmt, args);
    va_end(args);
    return CF_ERROR;
}

/* ---------------------------------------------------------------- values ----------- */
static void set_defaults(ModelData *d) {
    int k;
    memset(d, 0, sizeof *d);
    d->auto_substeps = 1;
    for (k = 0; k < N_VARS; k++) {
        double start = MODEL_NUMBERS[k][NUM_START];
        if (VARS[k].type == VAR_REAL) d->r[k] = start;
        else if (VARS[k].type == VAR_INTEGER) d->i[k] = (int)start;
        else d->s[k] = (int)start;
    }
}

/* x in the fewest significant digits that read back exactly (0.9, not
   0.90000000000000002): messages show the numbers the user typed. */
static const char *shortest(char *out, size_t n, double x) {
    int digits;
    if (isfinite(x) && fabs(x) < 1e15 && x == floor(x)) {   /* 100000, not 1e+05 */
        snprintf(out, n, "%.0f", x);
        return out;
    }
    for (digits = 1; digits <= 17; digits++) {
        snprintf(out, n, "%.*g", digits, x);
        if (!isfinite(x) || strtod(out, NULL) == x) break;
    }
    return out;
}

static void range_text(const VarInfo *v, char *out, size_t n) {
    char lo[40] = "-inf", hi[40] = "inf";
    if (v->has_min) shortest(lo, sizeof lo, MODEL_NUMBERS[v - VARS][NUM_MIN]);
    if (v->has_max) shortest(hi, sizeof hi, MODEL_NUMBERS[v - VARS][NUM_MAX]);
    snprintf(out, n, "%s%s, %s]%s%s", (v->has_min && !v->exclusive_min) ? "[" : "(", lo, hi,
             v->unit && v->unit[0] ? " " : "", v->unit ? v->unit : "");
}

static int in_range(const VarInfo *v, double value) {
    if (!isfinite(value)) return 0;
    double lo = MODEL_NUMBERS[v - VARS][NUM_MIN], hi = MODEL_NUMBERS[v - VARS][NUM_MAX];
    if (v->has_min && (v->exclusive_min ? value <= lo : value < lo)) return 0;
    if (v->has_max && value > hi) return 0;
    return 1;
}

/* May a variable of this causality be set now? */
static int check_settable(Instance *c, const VarInfo *v) {
    if (v->causality == VAR_OUTPUT)
        return fail(c, "%s: %s is an output and cannot be set", c->name, v->name);
    if (v->causality == VAR_PARAMETER && c->phase != ST_INSTANTIATED && c->phase != ST_INITIALIZATION)
        return fail(c, "%s: parameter %s is fixed after initialization", c->name, v->name);
    if (c->phase == ST_ERROR || c->phase == ST_TERMINATED)
        return fail(c, "%s: the instance is %s", c->name,
                     c->phase == ST_ERROR ? "in error" : "terminated");
    return CF_OK;
}

static const VarInfo *lookup(Instance *c, unsigned int vr, int type, const char *what) {
    if (vr >= (unsigned int)N_VARS || VARS[vr].type != type) {
        fail(c, "%s: %s: no variable of this type has value reference %u", c->name, what, vr);
        return NULL;
    }
    return &VARS[vr];
}

/* ---------------------------------------------------------------- stepping --------- */
#if N_X > 0
static int method_is_gill(const ModelData *d) {
#if VR_METHOD >= 0
    return strcmp(VARS[VR_METHOD].choices[d->s[VR_METHOD]], "gill") == 0;
#else
    (void)d;
    return 0;
#endif
}

/* Integrator steps per communication step; 0: "auto" (fs_advance_auto) */
static int substeps(const ModelData *d) {
#if VR_SUBSTEPS >= 0
    return d->i[VR_SUBSTEPS];
#else
    (void)d;
    return 1;
#endif
}

/* rtol and atol of "auto" (substeps = 0): the model's parameters, or the Python
   block's defaults where the model has none (its substeps then cannot be 0: min 1). */
static double rtol_of(const ModelData *d) {
#if VR_RTOL >= 0
    return d->r[VR_RTOL];
#else
    (void)d;
    return 1e-6;
#endif
}

static double atol_of(const ModelData *d) {
#if VR_ATOL >= 0
    return d->r[VR_ATOL];
#else
    (void)d;
    return 1e-9;
#endif
}
#endif

#if N_X > 0
static int model_rhs(void *ctx, const double *x, double *dx) {
    model_derivatives((const ModelData *)ctx, x, dx);
    return 0;
}
#endif

static int state_finite(const ModelData *d) {
    int i;
    for (i = 0; i < N_X; i++) if (!isfinite(d->x[i])) return 0;
    for (i = 0; i < N_Z; i++) if (!isfinite(d->z[i])) return 0;
    return 1;
}

/* The outputs of d (model_outputs writes them into d): 0 when every one is finite and
   within its declared range, else 1 with the first that is not, and its value, in why.
   A state is not the whole result: a law's output can overflow from a finite state and
   finite inputs (a gain times a huge rate), and that is a failed step too. */
static int outputs_bad(ModelData *d, char *why, size_t n) {
    int k;
    model_outputs(d);
    for (k = 0; k < N_VARS; k++) {
        const VarInfo *v = &VARS[k];
        char got[32], range[160];
        if (v->causality != VAR_OUTPUT || v->type != VAR_REAL || in_range(v, d->r[k])) continue;
        shortest(got, sizeof got, d->r[k]);
        if (!isfinite(d->r[k])) {
            snprintf(why, n, "output %s = %s is not finite", v->name, got);
        } else {
            range_text(v, range, sizeof range);
            snprintf(why, n, "output %s = %s is outside its range %s", v->name, got, range);
        }
        return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------- model data ------- */
#ifdef FLEXCOSIM_DATA_FROM_RESOURCES
#ifndef FLEXCOSIM_SKELETON
#error "FLEXCOSIM_SKELETON (the digest of model.c and its wrapper) is needed"
#endif
char MODEL_GUID[GUID_SIZE];
double MODEL_NUMBERS[N_VARS][3];
double MODEL_TABLES[SIZE_OR_1(N_TABLE)];

/* resources/model_data.bin (fmu.fmi.export_c.model_data_bytes), little-endian:
   magic "FCMDATA1" | skeleton digest, 32 bytes | endianness mark 0x01020304 (uint32) |
   reserved (uint32) | GUID, 64 bytes, NUL-terminated | n_vars, n_table (uint32) |
   n_vars x (start, min, max) | n_table doubles | FNV-1a 64 of all bytes before it */
#define DATA_HEAD 120
#define DATA_SIZE (DATA_HEAD + 8 * (3 * N_VARS + N_TABLE) + 8)
static unsigned char data_bytes[DATA_SIZE + 1];
static unsigned char loaded_bytes[DATA_SIZE];
static int data_loaded = 0;

static int load_model_data(const char *resources, char *why, size_t nwhy) {
    char dir[4096], path[4200];
    FILE *f;
    size_t got, i;
    unsigned mark, counts[2];
    unsigned long long sum;
    if (!fc_resource_path(resources, dir, sizeof dir, why, nwhy)) return 0;
    snprintf(path, sizeof path, "%s/model_data.bin", dir);
    f = fopen(path, "rb");
    if (!f) {
        snprintf(why, nwhy, "cannot open %s: this binary reads its numbers from there", path);
        return 0;
    }
    got = fread(data_bytes, 1, sizeof data_bytes, f);
    fclose(f);
    if (got != DATA_SIZE) {
        snprintf(why, nwhy, "%s has %s%lu bytes; this binary's model needs %lu", path,
                 got > DATA_SIZE ? "more than " : "", (unsigned long)(got > DATA_SIZE ? DATA_SIZE : got),
                 (unsigned long)DATA_SIZE);
        return 0;
    }
    if (memcmp(data_bytes, "FCMDATA1", 8) != 0) {
        snprintf(why, nwhy, "%s is not a flexcosim model data file (magic)", path);
        return 0;
    }
    if (data_bytes[8 + 31] != 0 || strcmp((const char *)data_bytes + 8, FLEXCOSIM_SKELETON) != 0) {
        snprintf(why, nwhy, "%s is for a model of another structure than this binary's (%s)",
                 path, FLEXCOSIM_SKELETON);
        return 0;
    }
    memcpy(&mark, data_bytes + 40, 4);
    if (mark != 0x01020304u) {
        snprintf(why, nwhy, "%s was written for a machine of the other byte order", path);
        return 0;
    }
    if (data_bytes[48 + GUID_SIZE - 1] != 0) {
        snprintf(why, nwhy, "%s: the GUID field is not terminated", path);
        return 0;
    }
    memcpy(counts, data_bytes + 48 + GUID_SIZE, sizeof counts);
    if (counts[0] != (unsigned)N_VARS || counts[1] != (unsigned)N_TABLE) {
        snprintf(why, nwhy, "%s holds %u variables and %u table numbers; this binary's model "
                 "has %d and %d", path, counts[0], counts[1], N_VARS, N_TABLE);
        return 0;
    }
    memcpy(&sum, data_bytes + DATA_SIZE - 8, 8);
    if (sum != fnv1a(data_bytes, DATA_SIZE - 8)) {
        snprintf(why, nwhy, "%s is corrupt (checksum)", path);
        return 0;
    }
    for (i = 0; i < (size_t)(3 * N_VARS + N_TABLE); ++i) {
        double x;
        memcpy(&x, data_bytes + DATA_HEAD + 8 * i, 8);
        if (!isfinite(x)) {
            snprintf(why, nwhy, "%s: number %lu is not finite", path, (unsigned long)i);
            return 0;
        }
    }
    for (i = 0; i < (size_t)N_VARS; ++i) {   /* a String's start is one of its choices */
        double start;
        memcpy(&start, data_bytes + DATA_HEAD + 24 * i, 8);
        if (VARS[i].type == VAR_STRING && !(start >= 0 && start < VARS[i].n_choices
                                            && start == floor(start))) {
            snprintf(why, nwhy, "%s: the start of %s is not one of its choices", path, VARS[i].name);
            return 0;
        }
    }
    if (data_loaded) {   /* the tables are the loaded binary's: one set per binary */
        if (memcmp(loaded_bytes, data_bytes, DATA_SIZE) != 0) {
            snprintf(why, nwhy, "this binary is already running with the numbers of another "
                     "model_data.bin than %s: load the FMU from its own folder", path);
            return 0;
        }
        return 1;
    }
    memcpy(MODEL_GUID, data_bytes + 48, GUID_SIZE);
    memcpy(MODEL_NUMBERS, data_bytes + DATA_HEAD, 8 * 3 * N_VARS);
#if N_TABLE > 0
    memcpy(MODEL_TABLES, data_bytes + DATA_HEAD + 8 * 3 * N_VARS, 8 * N_TABLE);
#endif
    memcpy(loaded_bytes, data_bytes, DATA_SIZE);
    data_loaded = 1;
    return 1;
}
#endif

/* ---------------------------------------------------------------- lifecycle ------- */
/* A new instance named `name`, in the instantiated phase with the start values; the
   front end has checked the host's arguments and allocated it (zeroed). */
static void cf_init(Instance *c, const char *name, int logging_on) {
    c->logging_on = logging_on ? 1 : 0;
    snprintf(c->name, sizeof c->name, "%s", name);
    set_defaults(&c->d);
    c->phase = ST_INSTANTIATED;
}

/* The start time (FMI 2.0's fmi2SetupExperiment, FMI 3.0's fmi3EnterInitializationMode). */
static int cf_setup(Instance *c, double start, const char *what) {
    if (c->phase != ST_INSTANTIATED) return fail(c, "%s: %s only after instantiation", c->name, what);
    if (!isfinite(start)) return fail(c, "%s: start time %g is not finite", c->name, start);
    c->d.time = c->d.start_time = start;
    c->d.steps = 0;
    return CF_OK;
}

static int start_model(Instance *c) {
    char msg[512] = "";
    if (model_setup(&c->d, msg, sizeof msg)) {
        c->phase = ST_ERROR;
        return fail(c, "%s: %s", c->name, msg);
    }
    memset(c->d.gill_q, 0, sizeof c->d.gill_q);
    c->d.auto_substeps = 1;
    c->range_warned = 0;
    model_initial(&c->d);
    model_outputs(&c->d);
    c->outputs_current = 1;
    return CF_OK;
}

static int cf_enter_initialization(Instance *c, const char *what) {
    if (c->phase != ST_INSTANTIATED) return fail(c, "%s: %s out of order", c->name, what);
    c->phase = ST_INITIALIZATION;
    return CF_OK;
}

static int cf_exit_initialization(Instance *c, const char *what) {
    int status;
    if (c->phase != ST_INITIALIZATION) return fail(c, "%s: %s out of order", c->name, what);
    status = start_model(c);
    if (status == CF_OK) c->phase = ST_STEPPING;
    return status;
}

static void cf_reset(Instance *c) {
    set_defaults(&c->d);
    c->outputs_current = 0;
    c->phase = ST_INSTANTIATED;
    c->terminated = c->has_discarded = 0;
}

/* ---------------------------------------------------------------- getters ---------- */
static void refresh_outputs(Instance *c) {
    if (c->phase != ST_STEPPING && c->phase != ST_TERMINATED) return;
    if (c->outputs_current && !c->model_exchange) return;   /* computed by the step's check */
    model_outputs(&c->d);
    c->outputs_current = 1;
}

/* One Real variable's value, the outputs as refresh_outputs left them (the front ends
   refresh them once per call). */
static int cf_real_value(Instance *c, unsigned int vr, double *value, const char *what) {
    if (!lookup(c, vr, VAR_REAL, what)) return CF_ERROR;
    *value = c->d.r[vr];
    return CF_OK;
}

static int cf_get_integer(Instance *c, const unsigned int vr[], size_t n, int value[], const char *what) {
    size_t k;
    if (n && (!vr || !value)) return CF_ERROR;
    for (k = 0; k < n; k++) {
        if (!lookup(c, vr[k], VAR_INTEGER, what)) return CF_ERROR;
        value[k] = c->d.i[vr[k]];
    }
    return CF_OK;
}

static int cf_get_string(Instance *c, const unsigned int vr[], size_t n, const char *value[], const char *what) {
    size_t k;
    if (n && (!vr || !value)) return CF_ERROR;
    for (k = 0; k < n; k++) {
        const VarInfo *v = lookup(c, vr[k], VAR_STRING, what);
        if (!v) return CF_ERROR;
        value[k] = v->choices[c->d.s[vr[k]]];
    }
    return CF_OK;
}

/* a call for a type this model has no variable of: fine with no value references */
static int cf_no_variable(Instance *c, const unsigned int vr[], size_t n, const char *what) {
    if (n == 0) return CF_OK;
    return fail(c, "%s: %s: no variable of this type has value reference %u", c->name, what,
                vr ? vr[0] : 0u);
}

/* ---------------------------------------------------------------- setters ---------- */
/* Whether every value[k] may be set to Real vr[k]: the first refusal logged. */
static int cf_check_real(Instance *c, const unsigned int vr[], size_t n, const double value[], const char *what) {
    size_t k;
    char range[160];
    if (n && (!vr || !value)) return CF_ERROR;
    for (k = 0; k < n; k++) {
        const VarInfo *v = lookup(c, vr[k], VAR_REAL, what);
        if (!v || check_settable(c, v) != CF_OK) return CF_ERROR;
        if (!in_range(v, value[k])) {
            char got[32], kept[32];
            range_text(v, range, sizeof range);
            return fail(c, "%s: %s %s = %s refused: accepted %s; the value stays %s",
                         c->name, v->causality == VAR_INPUT ? "input" : "parameter", v->name,
                         shortest(got, sizeof got, value[k]), range,
                         shortest(kept, sizeof kept, c->d.r[vr[k]]));
        }
    }
    return CF_OK;
}

/* Real vr[k] = value[k], values cf_check_real accepted (all checked before any is set). */
static void cf_assign_real(Instance *c, const unsigned int vr[], size_t n, const double value[]) {
    size_t k;
    for (k = 0; k < n; k++) c->d.r[vr[k]] = value[k];
    c->outputs_current = 0;
}

static int cf_set_integer(Instance *c, const unsigned int vr[], size_t n, const int value[], const char *what) {
    size_t k;
    char range[160];
    if (n && (!vr || !value)) return CF_ERROR;
    for (k = 0; k < n; k++) {
        const VarInfo *v = lookup(c, vr[k], VAR_INTEGER, what);
        if (!v || check_settable(c, v) != CF_OK) return CF_ERROR;
        if (!in_range(v, (double)value[k])) {
            range_text(v, range, sizeof range);
            return fail(c, "%s: parameter %s = %d refused: accepted %s; the value stays %d",
                         c->name, v->name, (int)value[k], range, c->d.i[vr[k]]);
        }
    }
    for (k = 0; k < n; k++) c->d.i[vr[k]] = value[k];
    c->outputs_current = 0;
    return CF_OK;
}

static int cf_set_string(Instance *c, const unsigned int vr[], size_t n, const char *const value[], const char *what) {
    size_t k;
    int j, chosen[64];
    if (n && (!vr || !value)) return CF_ERROR;
    if (n > 64) return fail(c, "%s: %s: at most 64 values per call", c->name, what);
    for (k = 0; k < n; k++) {
        const VarInfo *v = lookup(c, vr[k], VAR_STRING, what);
        char accepted[400] = "";
        if (!v || check_settable(c, v) != CF_OK) return CF_ERROR;
        chosen[k] = -1;
        for (j = 0; j < v->n_choices; j++)
            if (value[k] && strcmp(value[k], v->choices[j]) == 0) chosen[k] = j;
        if (chosen[k] < 0) {
            for (j = 0; j < v->n_choices; j++) {
                strncat(accepted, j ? ", '" : "'", sizeof accepted - strlen(accepted) - 1);
                strncat(accepted, v->choices[j], sizeof accepted - strlen(accepted) - 1);
                strncat(accepted, "'", sizeof accepted - strlen(accepted) - 1);
            }
            return fail(c, "%s: parameter %s = '%s' refused: accepted one of %s", c->name, v->name,
                         value[k] ? value[k] : "(null)", accepted);
        }
    }
    for (k = 0; k < n; k++) c->d.s[vr[k]] = chosen[k];
    c->outputs_current = 0;
    return CF_OK;
}

/* ---------------------------------------------------------------- stepping --------- */
/* Is t the communication point the FMU is at?  Exactly, not within a tolerance: a
   relative tolerance 1e-9 (1 + |t|) is 1e-3 s at t = 1e6 s and 1000 s at 1e12 s, which
   let a host repeat a step or go back in time.  The FMU's time is the double sum of the
   steps as the host gave them (time = t + h, computed here), so a host that accumulates
   t += h (OMSimulator, our master, the FMI examples) passes exactly that value; fmpy's
   simulate_fmu passes t_n = start + n*dt and h = t_{n+1} - t_n, and t_n + h == t_{n+1}
   because that difference is exact (Sterbenz), as libcosim's to_double_duration does by
   construction.  A host that computes its grid as start + n*h with the step count n is
   accepted as well (n the steps this FMU took; rounded differently from the sum after
   many steps) and the FMU then continues from the host's value.  Anything else is a
   different time: a repeated step, a step back, a gap. */
static int communication_point_ok(const ModelData *d, double t, double h) {
    if (t == d->time) return 1;
    return d->steps > 0 && t == d->start_time + (double)d->steps * h;
}

/* Undo a step that failed (the whole state, the inputs as the host set them included)
   and return CF_DISCARD with why.  `terminated` then says whether a retry can help:
   `hard` (the model is beyond its hard limit whatever the step), or the host retried the
   step just discarded from the same state with the same inputs and no smaller step,
   which this deterministic model discards again (fmpy's simulate_fmu does that forever
   unless it hears fmi2Terminated; FMI 3.0 hosts get terminateSimulation). */
static int discard_step(Instance *c, const ModelData *saved, double t, double h,
                               int hard, const char *why) {
    int repeated = c->has_discarded && h >= c->discarded_h
                   && memcmp(&c->discarded_from, saved, sizeof *saved) == 0;
    c->d = *saved;
    c->outputs_current = 0;
    c->discarded_from = *saved;
    c->discarded_h = h;
    c->has_discarded = 1;
    c->terminated = hard || repeated;
    logf_(c, CF_DISCARD, "logStatusDiscard",
          "%s: step [%.17g, %.17g] s: %s; the state is kept at t = %.17g s%s", c->name, t,
          t + h, why, c->d.time,
          hard ? " (the model cannot go on: " CF_TERMINATED_NAME ")"
               : repeated ? " (the same step again: " CF_TERMINATED_NAME ")"
                          : " (a smaller step may succeed)");
    return CF_DISCARD;
}

static int cf_do_step(Instance *c, double t, double h, const char *what) {
    ModelData saved;
    char why[600] = "";
    int validity;
    if (c->phase != ST_STEPPING) return fail(c, "%s: %s before initialization or after an error", c->name, what);
    if (!(h > 0.0) || !isfinite(h) || !isfinite(t))
        return fail(c, "%s: %s(t = %g s, h = %g s): the step must be finite and positive", c->name, what, t, h);
    if (!communication_point_ok(&c->d, t, h))
        return fail(c, "%s: %s at t = %.17g s, but the FMU is at t = %.17g s (%lld steps "
                     "from %.17g s): the communication point must be the FMU's time exactly",
                     c->name, what, t, c->d.time, c->d.steps, c->d.start_time);
    saved = c->d;
#ifdef SAMPLE_TIME
    {   /* a sampled law designed for one step size (its discretisation depends on it) */
        const ModelData *d = &c->d;
        double dt = SAMPLE_TIME;
        (void)d;                        /* a constant sample time does not read it */
        if (fabs(h - dt) > 1e-9 * dt) {
            char a[32], b[32];
            snprintf(why, sizeof why, "the model is designed for steps of %s s; got a step of %s s",
                     shortest(a, sizeof a, dt), shortest(b, sizeof b, h));
            return discard_step(c, &saved, t, h, 0, why);
        }
    }
#endif
#ifdef MODEL_OWN_STEP
    /* the model's own method over its own state (mbdcore.codegen, model_step) */
    if (model_step(&c->d, t, h, why, sizeof why)) return discard_step(c, &saved, t, h, 0, why);
#endif
#if N_X > 0
    {   /* the continuous state: all or nothing (fs_advance, fs_advance_auto) */
        int n = substeps(&c->d), method = method_is_gill(&c->d) ? 1 : 0, status;
        double work[FS_AUTO_WORK_PER_STATE * N_X];
        if (n == 0) {   /* "auto": step doubling to rtol/atol, as the Python block */
            int start = (int)c->d.auto_substeps, tried = 0;
            double error = 0.0;
            status = fs_advance_auto(model_rhs, &c->d, c->d.x, c->d.gill_q, N_X, h, method, 4,
                                     rtol_of(&c->d), atol_of(&c->d),
                                     &start, &error, &tried, work);
            if (status == FS_TOLERANCE_MISSED) {
                char a[32], b[32];
                snprintf(why, sizeof why, "error estimate %.3g times the tolerance (rtol = %s, "
                         "atol = %s) with %d substeps, the most substeps = 0 takes; shorten the "
                         "communication step or loosen rtol/atol", error,
                         shortest(a, sizeof a, rtol_of(&c->d)),
                         shortest(b, sizeof b, atol_of(&c->d)), tried);
                return discard_step(c, &saved, t, h, 0, why);
            }
            if (status == 0) c->d.auto_substeps = start;
        } else {
            status = fs_advance(model_rhs, &c->d, c->d.x, c->d.gill_q, N_X, h / n, n, method, NULL,
                                work);
        }
        if (status) return discard_step(c, &saved, t, h, 0, "the state is not finite");
    }
#endif
#if N_Z > 0
    model_update(&c->d, h);
#endif
    if (!state_finite(&c->d)) return discard_step(c, &saved, t, h, 0, "the state is not finite");
    validity = model_validity(&c->d, why, sizeof why);
    if (validity == 2) return discard_step(c, &saved, t, h, 1, why);   /* beyond the hard limit */
    c->d.time = t + h;       /* before the outputs: a reference's are those of t + h */
    c->d.steps += 1;
    c->outputs_current = 0;
    {
        char out[400];
        if (outputs_bad(&c->d, out, sizeof out)) return discard_step(c, &saved, t, h, 0, out);
    }
    c->outputs_current = 1;  /* outputs_bad left them in d.r: the getters take them */
    c->terminated = 0;
    if (validity == 1 && !c->range_warned) {
        c->range_warned = 1;
        logf_(c, CF_WARNING, "logStatusWarning", "%s: t = %.9g s: %s", c->name, c->d.time, why);
    }
    return CF_OK;
}


/* ---------------------------------------------------------------- Model Exchange --- */
/* May the Model Exchange call `what` be made now?  CF_OK, or an error naming it. */
static int cf_me_call(Instance *c, const char *what) {
    if (!c->model_exchange)
        return fail(c, "%s: %s: the instance was made for co-simulation", c->name, what);
    if (c->phase != ST_STEPPING && c->phase != ST_INITIALIZATION)
        return fail(c, "%s: %s before initialization or after an error", c->name, what);
    return CF_OK;
}

static int cf_me_set_time(Instance *c, double time, const char *what) {
    if (!c->model_exchange)
        return fail(c, "%s: %s: the instance was made for co-simulation", c->name, what);
    if (!isfinite(time)) return fail(c, "%s: %s: time %g is not finite", c->name, what, time);
    c->d.time = time;
    return CF_OK;
}

/* nx must be the model's state size (N_X) */
static int cf_me_states_call(Instance *c, const void *x, size_t nx, const char *what) {
    if (cf_me_call(c, what) != CF_OK) return CF_ERROR;
    if (nx != (size_t)N_X || (nx && !x))
        return fail(c, "%s: %s: %lu values given; the model has %d continuous states", c->name,
                    what, (unsigned long)nx, N_X);
    return CF_OK;
}

/* The continuous state from the host's solver: all finite, or refused with the state kept. */
static int cf_me_set_states(Instance *c, const double x[], size_t nx, const char *what) {
    size_t k;
    if (cf_me_states_call(c, x, nx, what) != CF_OK) return CF_ERROR;
    for (k = 0; k < nx; k++)
        if (!isfinite(x[k]))
            return fail(c, "%s: %s: x[%lu] = %g is not finite; the state is kept", c->name,
                        what, (unsigned long)k, x[k]);
#if N_X > 0
    memcpy(c->d.x, x, nx * sizeof *x);
#endif
    return CF_OK;
}

static int cf_me_get_states(Instance *c, double x[], size_t nx, const char *what) {
    if (cf_me_states_call(c, x, nx, what) != CF_OK) return CF_ERROR;
#if N_X > 0
    memcpy(x, c->d.x, nx * sizeof *x);
#endif
    return CF_OK;
}

/* dx = f(x, inputs, parameters), the model's own model_derivatives; a non-finite one is
   an error naming the state. */
static int cf_me_derivatives(Instance *c, double dx[], size_t nx, const char *what) {
    size_t k;
    if (cf_me_states_call(c, dx, nx, what) != CF_OK) return CF_ERROR;
#if N_X > 0
    model_derivatives(&c->d, c->d.x, dx);
#endif
    for (k = 0; k < nx; k++)
        if (!isfinite(dx[k]))
            return fail(c, "%s: %s: at t = %.17g s the derivative of x[%lu] is not finite",
                        c->name, what, c->d.time, (unsigned long)k);
    return CF_OK;
}

static int cf_me_nominals(Instance *c, double nominal[], size_t nx, const char *what) {
    size_t k;
    if (cf_me_states_call(c, nominal, nx, what) != CF_OK) return CF_ERROR;
    for (k = 0; k < nx; k++) nominal[k] = 1.0;
    return CF_OK;
}

/* The host accepted a step of its solver: the state is checked as the co-simulation step
   checks it -- beyond the hard limit the host is asked to terminate (*terminate = 1),
   out of the accurate range a warning is logged once (CF_WARNING). */
static int cf_me_completed_step(Instance *c, int *terminate, const char *what) {
    char why[600] = "";
    int validity;
    *terminate = 0;
    if (cf_me_call(c, what) != CF_OK) return CF_ERROR;
    if (!state_finite(&c->d)) {
        *terminate = 1;
        return fail(c, "%s: t = %.17g s: the state is not finite", c->name, c->d.time);
    }
    validity = model_validity(&c->d, why, sizeof why);
    if (validity == 2) {
        *terminate = 1;
        logf_(c, CF_DISCARD, "logStatusDiscard", "%s: t = %.17g s: %s (the model cannot go on)",
              c->name, c->d.time, why);
    } else if (validity == 1 && !c->range_warned) {
        c->range_warned = 1;
        logf_(c, CF_WARNING, "logStatusWarning", "%s: t = %.9g s: %s", c->name, c->d.time, why);
        return CF_WARNING;
    }
    return CF_OK;
}

#include "cfmu_state.h"   /* saved states: checked, serialized, restored */

#endif
