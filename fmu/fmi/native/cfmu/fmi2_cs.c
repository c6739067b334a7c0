/*
 * flexcosim C-source FMU: the FMI 2.0 co-simulation interface, the same for every model
 * (the model is model.c, see flexcosim_model.h).  Plain C99 and libm; memory is taken
 * only in fmi2Instantiate and fmi2GetFMUstate, through the host's callbacks.
 *
 * Behaviour (as the project's Python FMUs):
 *  - a parameter is set before fmi2ExitInitializationMode only; a value that is not
 *    finite, outside its range or not one of its choices is refused with fmi2Error and a
 *    log message naming the variable and the accepted values; the old value stays;
 *  - an input that is not finite or outside its range is refused the same way;
 *  - fmi2DoStep integrates the continuous state with RK4 or Gill (fixed_step.h, "method",
 *    "substeps" steps per communication step; substeps = 0, "auto": n and 2n substeps
 *    with n doubled until their difference meets "rtol" and "atol", at most 4096, as the
 *    Python block: fs_advance_auto) and advances the discrete state; a step that gives a
 *    non-finite state, misses the tolerance of "auto", or an output that is not finite or
 *    outside its declared range, is undone (the whole state: continuous, discrete -- estimators,
 *    filters, integrators --, Gill's register, time) and returns fmi2Discard with a
 *    message naming the variable and its value;
 *  - after a Discard, fmi2GetBooleanStatus(fmi2Terminated) says whether the model can go
 *    on (fmi2False: a retry with a smaller step may succeed; fmi2True: the model is at its
 *    hard limit, or the host retried the very step just discarded, which a deterministic
 *    model discards again) and fmi2GetRealStatus(fmi2LastSuccessfulTime) where it is;
 *  - the communication point is checked exactly (check_communication_point): the FMU
 *    keeps its time as the double sum of the accepted t + h and a step count;
 *  - when the model leaves the range where it is accurate (model_validity), a warning is
 *    logged once per run (status fmi2Warning; the step stands);
 *  - the whole state (time, values, continuous and discrete state) is saved by
 *    fmi2GetFMUstate and serialized as bytes with a header and an FNV-1a 64 checksum;
 *    a state read back (fmi2DeSerializeFMUstate, fmi2SetFMUstate) is checked field by
 *    field (state_bad: ranges, finiteness, the derived numbers w against the
 *    parameters, its outputs) before it is used;
 *  - built with FLEXCOSIM_DATA_FROM_RESOURCES, the numbers of the export (GUID, start
 *    values and ranges, tables) are read at the first fmi2Instantiate from
 *    resources/model_data.bin and checked field by field (load_model_data); a later
 *    instantiation of the same loaded binary must bring the same numbers.
 * Messages with status fmi2Error reach the logger whatever loggingOn says.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi2Functions.h"
#include "flexcosim_model.h"
#ifdef FLEXCOSIM_DATA_FROM_RESOURCES
#include "fmi_resources.h"   /* where resources/model_data.bin is */
#endif
#include "fixed_step.h"    /* RK4 and Gill, as mbdcore.integrators sums them */

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
    int terminated;        /* fmi2Terminated after the last Discard: the model cannot go on */
    int has_discarded;     /* discarded_from and discarded_h hold the last discarded step */
    double discarded_h;
    ModelData discarded_from;   /* the state (inputs included) the last discarded step began at */
    char name[128];
    fmi2CallbackFunctions cb;
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

/* What fmi2GetFMUstate hands out: the data between a magic and a checksum, so that a
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

/* ---------------------------------------------------------------- logging ---------- */
static void logv_(Instance *c, fmi2Status status, const char *category, const char *fmt, va_list args) {
    char text[1024], escaped[2100];
    size_t k = 0;
    const char *p;
    if (!c || !c->cb.logger) return;
    if (status == fmi2OK && !c->logging_on) return;
    vsnprintf(text, sizeof text, fmt, args);
    /* the logger takes a printf format, and '#' starts a variable reference: escape both */
    for (p = text; *p && k + 2 < sizeof escaped; p++) {
        if (*p == '%' || *p == '#') escaped[k++] = *p;
        escaped[k++] = *p;
    }
    escaped[k] = '\0';
    c->cb.logger(c->cb.componentEnvironment, c->name, status, category, escaped);
}

static void logf_(Instance *c, fmi2Status status, const char *category, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    logv_(c, status, category, fmt, args);
    va_end(args);
}

/* Log an error (whatever loggingOn says) and return fmi2Error. */
static fmi2Status fail(Instance *c, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    logv_(c, fmi2Error, "logStatusError", fmt, args);
    va_end(args);
    return fmi2Error;
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
static fmi2Status check_settable(Instance *c, const VarInfo *v) {
    if (v->causality == VAR_OUTPUT)
        return fail(c, "%s: %s is an output and cannot be set", c->name, v->name);
    if (v->causality == VAR_PARAMETER && c->phase != ST_INSTANTIATED && c->phase != ST_INITIALIZATION)
        return fail(c, "%s: parameter %s is fixed after initialization", c->name, v->name);
    if (c->phase == ST_ERROR || c->phase == ST_TERMINATED)
        return fail(c, "%s: the instance is %s", c->name,
                     c->phase == ST_ERROR ? "in error" : "terminated");
    return fmi2OK;
}

static const VarInfo *lookup(Instance *c, fmi2ValueReference vr, int type, const char *what) {
    if (vr >= (fmi2ValueReference)N_VARS || VARS[vr].type != type) {
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

/* Is `data` (from fmi2DeSerializeFMUstate or fmi2SetFMUstate: bytes a host kept, which
   may have been edited, truncated at a field boundary or made by hand with a valid
   checksum) a state this model can be in?  0 if so (its derived numbers w then recomputed
   from its parameters), else 1 with why.  Every field is checked: a wrong substeps
   (2147483647 is a step of hours) or a NaN time (which would switch off the time check)
   must be refused here, as fmi2SetInteger and fmi2SetupExperiment refuse them. */
static int state_bad(ModelData *data, char *why, size_t n) {
    ModelData probe;
    char a[32], b[32], range[160], msg[400] = "";
    int k, w_zero = 1;
    if (!isfinite(data->time) || !isfinite(data->start_time)) {
        snprintf(why, n, "its time %s s or start time %s s is not finite",
                 shortest(a, sizeof a, data->time), shortest(b, sizeof b, data->start_time));
        return 1;
    }
    /* time = start_time + the sum of steps > 0: later than the start once a step is taken */
    if (data->steps < 0 || data->steps > (1LL << 53)
        || (data->steps == 0 ? data->time != data->start_time : !(data->time > data->start_time))) {
        snprintf(why, n, "its time %.17g s does not follow from its start %.17g s after %lld steps",
                 data->time, data->start_time, data->steps);
        return 1;
    }
    for (k = 0; k < N_VARS; k++) {
        const VarInfo *v = &VARS[k];
        int ok = v->type == VAR_STRING ? (data->s[k] >= 0 && data->s[k] < v->n_choices)
               : v->type == VAR_INTEGER ? in_range(v, (double)data->i[k])
               : v->causality == VAR_OUTPUT ? isfinite(data->r[k]) : in_range(v, data->r[k]);
        if (ok) continue;
        range_text(v, range, sizeof range);
        if (v->type == VAR_STRING)
            snprintf(why, n, "%s holds choice %d; it has %d", v->name, data->s[k], v->n_choices);
        else if (v->type == VAR_INTEGER)
            snprintf(why, n, "%s = %d is outside %s", v->name, data->i[k], range);
        else
            snprintf(why, n, "%s = %s is %s %s", v->name, shortest(a, sizeof a, data->r[k]),
                     v->causality == VAR_OUTPUT ? "not finite" : "outside", 
                     v->causality == VAR_OUTPUT ? "" : range);
        return 1;
    }
#define CHECK_FINITE(array, count, what)                                                   \
    for (k = 0; k < (count); k++)                                                          \
        if (!isfinite(data->array[k])) {                                                  \
            snprintf(why, n, "%s[%d] = %s is not finite", what, k,                        \
                     shortest(a, sizeof a, data->array[k]));                              \
            return 1;                                                                      \
        }
    CHECK_FINITE(x, N_X, "continuous state x")
    CHECK_FINITE(gill_q, N_X, "Gill's register")
    CHECK_FINITE(z, N_Z, "discrete state z")
    CHECK_FINITE(w, N_W, "derived number w")
#undef CHECK_FINITE
    if (data->auto_substeps < 1 || data->auto_substeps > FS_AUTO_MAX_SUBSTEPS) {
        snprintf(why, n, "auto_substeps = %lld is outside [1, %d]", data->auto_substeps,
                 FS_AUTO_MAX_SUBSTEPS);
        return 1;
    }
#if N_X > 0
    /* Gill's register is touched by Gill's steps only; with RK4 it stays zero */
    if (!method_is_gill(data))
        for (k = 0; k < N_X; k++)
            if (data->gill_q[k] != 0.0) {
                snprintf(why, n, "Gill's register is not zero, but the method is not Gill's");
                return 1;
            }
#endif
    /* w follows from the parameters (model_setup): equal to it bit for bit, or all zero
       in a state saved before initialization, when it was not made yet */
    probe = *data;
    if (model_setup(&probe, msg, sizeof msg)) {
        snprintf(why, n, "its parameters make no model: %s", msg);
        return 1;
    }
    for (k = 0; k < N_W; k++) if (data->w[k] != 0.0) w_zero = 0;
    if (!w_zero && memcmp(probe.w, data->w, sizeof probe.w) != 0) {
        snprintf(why, n, "its derived numbers w do not follow from its parameters");
        return 1;
    }
    if (model_validity(&probe, msg, sizeof msg) == 2) {
        snprintf(why, n, "it is beyond the model's hard limit: %s", msg);
        return 1;
    }
    if (outputs_bad(&probe, msg, sizeof msg)) {
        snprintf(why, n, "its %s", msg);
        return 1;
    }
    memcpy(data->w, probe.w, sizeof data->w);
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

/* ---------------------------------------------------------------- FMI: common ------ */
const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char *fmi2GetVersion(void) { return fmi2Version; }

fmi2Status fmi2SetDebugLogging(fmi2Component comp, fmi2Boolean on, size_t n, const fmi2String cats[]) {
    Instance *c = (Instance *)comp;
    (void)n; (void)cats;
    if (!c) return fmi2Error;
    c->logging_on = on ? 1 : 0;
    return fmi2OK;
}

fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String resources,
                              const fmi2CallbackFunctions *functions, fmi2Boolean visible,
                              fmi2Boolean logging_on) {
    Instance *c;
    char why[600] = "";
    (void)visible;
    if (!functions || !functions->logger) return NULL;
#ifdef FLEXCOSIM_DATA_FROM_RESOURCES
    if (!load_model_data(resources, why, sizeof why)) {
        functions->logger(functions->componentEnvironment, name ? name : "", fmi2Error,
                          "logStatusError", "%s", why);
        return NULL;
    }
#else
    (void)resources;
#endif
    if (!name || !name[0] || type != fmi2CoSimulation || !guid || strcmp(guid, MODEL_GUID) != 0) {
        if (type != fmi2CoSimulation) snprintf(why, sizeof why, "this FMU supports co-simulation only");
        else if (!name || !name[0]) snprintf(why, sizeof why, "an instance name is required");
        else snprintf(why, sizeof why, "GUID does not match this FMU (%s)", MODEL_GUID);
        functions->logger(functions->componentEnvironment, name ? name : "", fmi2Error,
                          "logStatusError", "%s", why);
        return NULL;
    }
    c = functions->allocateMemory ? (Instance *)functions->allocateMemory(1, sizeof *c)
                                  : (Instance *)calloc(1, sizeof *c);
    if (!c) {
        functions->logger(functions->componentEnvironment, name, fmi2Error, "logStatusError",
                          "out of memory");
        return NULL;
    }
    c->cb = *functions;
    c->logging_on = logging_on ? 1 : 0;
    snprintf(c->name, sizeof c->name, "%s", name);
    set_defaults(&c->d);
    c->phase = ST_INSTANTIATED;
    return c;
}

void fmi2FreeInstance(fmi2Component comp) {
    Instance *c = (Instance *)comp;
    if (!c) return;
    if (c->cb.freeMemory) c->cb.freeMemory(c);
    else free(c);
}

fmi2Status fmi2SetupExperiment(fmi2Component comp, fmi2Boolean tol_defined, fmi2Real tol,
                               fmi2Real start, fmi2Boolean stop_defined, fmi2Real stop) {
    Instance *c = (Instance *)comp;
    (void)tol_defined; (void)tol; (void)stop_defined; (void)stop;
    if (!c) return fmi2Error;
    if (c->phase != ST_INSTANTIATED) return fail(c, "%s: fmi2SetupExperiment only after fmi2Instantiate", c->name);
    if (!isfinite(start)) return fail(c, "%s: start time %g is not finite", c->name, start);
    c->d.time = c->d.start_time = start;
    c->d.steps = 0;
    return fmi2OK;
}

static fmi2Status start_model(Instance *c) {
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
    return fmi2OK;
}

fmi2Status fmi2EnterInitializationMode(fmi2Component comp) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    if (c->phase != ST_INSTANTIATED) return fail(c, "%s: fmi2EnterInitializationMode out of order", c->name);
    c->phase = ST_INITIALIZATION;
    return fmi2OK;
}

fmi2Status fmi2ExitInitializationMode(fmi2Component comp) {
    Instance *c = (Instance *)comp;
    fmi2Status status;
    if (!c) return fmi2Error;
    if (c->phase != ST_INITIALIZATION) return fail(c, "%s: fmi2ExitInitializationMode out of order", c->name);
    status = start_model(c);
    if (status == fmi2OK) c->phase = ST_STEPPING;
    return status;
}

fmi2Status fmi2Terminate(fmi2Component comp) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    c->phase = ST_TERMINATED;
    return fmi2OK;
}

fmi2Status fmi2Reset(fmi2Component comp) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    set_defaults(&c->d);
    c->phase = ST_INSTANTIATED;
    c->terminated = c->has_discarded = 0;
    return fmi2OK;
}

/* ---------------------------------------------------------------- getters ---------- */
static void refresh_outputs(Instance *c) {
    if (c->phase == ST_STEPPING || c->phase == ST_TERMINATED) model_outputs(&c->d);
}

fmi2Status fmi2GetReal(fmi2Component comp, const fmi2ValueReference vr[], size_t n, fmi2Real value[]) {
    Instance *c = (Instance *)comp;
    size_t k;
    if (!c || (n && (!vr || !value))) return fmi2Error;
    refresh_outputs(c);
    for (k = 0; k < n; k++) {
        if (!lookup(c, vr[k], VAR_REAL, "fmi2GetReal")) return fmi2Error;
        value[k] = c->d.r[vr[k]];
    }
    return fmi2OK;
}

fmi2Status fmi2GetInteger(fmi2Component comp, const fmi2ValueReference vr[], size_t n, fmi2Integer value[]) {
    Instance *c = (Instance *)comp;
    size_t k;
    if (!c || (n && (!vr || !value))) return fmi2Error;
    for (k = 0; k < n; k++) {
        if (!lookup(c, vr[k], VAR_INTEGER, "fmi2GetInteger")) return fmi2Error;
        value[k] = c->d.i[vr[k]];
    }
    return fmi2OK;
}

fmi2Status fmi2GetBoolean(fmi2Component comp, const fmi2ValueReference vr[], size_t n, fmi2Boolean value[]) {
    Instance *c = (Instance *)comp;
    (void)value;
    if (!c) return fmi2Error;
    if (n == 0) return fmi2OK;
    return fail(c, "%s: fmi2GetBoolean: no Boolean variable has value reference %u", c->name, vr ? vr[0] : 0u);
}

fmi2Status fmi2GetString(fmi2Component comp, const fmi2ValueReference vr[], size_t n, fmi2String value[]) {
    Instance *c = (Instance *)comp;
    size_t k;
    if (!c || (n && (!vr || !value))) return fmi2Error;
    for (k = 0; k < n; k++) {
        const VarInfo *v = lookup(c, vr[k], VAR_STRING, "fmi2GetString");
        if (!v) return fmi2Error;
        value[k] = v->choices[c->d.s[vr[k]]];
    }
    return fmi2OK;
}

/* ---------------------------------------------------------------- setters ---------- */
fmi2Status fmi2SetReal(fmi2Component comp, const fmi2ValueReference vr[], size_t n, const fmi2Real value[]) {
    Instance *c = (Instance *)comp;
    size_t k;
    char range[160];
    if (!c || (n && (!vr || !value))) return fmi2Error;
    for (k = 0; k < n; k++) {     /* all checked before any is applied */
        const VarInfo *v = lookup(c, vr[k], VAR_REAL, "fmi2SetReal");
        if (!v || check_settable(c, v) != fmi2OK) return fmi2Error;
        if (!in_range(v, value[k])) {
            char got[32], kept[32];
            range_text(v, range, sizeof range);
            return fail(c, "%s: %s %s = %s refused: accepted %s; the value stays %s",
                         c->name, v->causality == VAR_INPUT ? "input" : "parameter", v->name,
                         shortest(got, sizeof got, value[k]), range,
                         shortest(kept, sizeof kept, c->d.r[vr[k]]));
        }
    }
    for (k = 0; k < n; k++) c->d.r[vr[k]] = value[k];
    return fmi2OK;
}

fmi2Status fmi2SetInteger(fmi2Component comp, const fmi2ValueReference vr[], size_t n, const fmi2Integer value[]) {
    Instance *c = (Instance *)comp;
    size_t k;
    char range[160];
    if (!c || (n && (!vr || !value))) return fmi2Error;
    for (k = 0; k < n; k++) {
        const VarInfo *v = lookup(c, vr[k], VAR_INTEGER, "fmi2SetInteger");
        if (!v || check_settable(c, v) != fmi2OK) return fmi2Error;
        if (!in_range(v, (double)value[k])) {
            range_text(v, range, sizeof range);
            return fail(c, "%s: parameter %s = %d refused: accepted %s; the value stays %d",
                         c->name, v->name, (int)value[k], range, c->d.i[vr[k]]);
        }
    }
    for (k = 0; k < n; k++) c->d.i[vr[k]] = value[k];
    return fmi2OK;
}

fmi2Status fmi2SetBoolean(fmi2Component comp, const fmi2ValueReference vr[], size_t n, const fmi2Boolean value[]) {
    Instance *c = (Instance *)comp;
    (void)value;
    if (!c) return fmi2Error;
    if (n == 0) return fmi2OK;
    return fail(c, "%s: fmi2SetBoolean: no Boolean variable has value reference %u", c->name, vr ? vr[0] : 0u);
}

fmi2Status fmi2SetString(fmi2Component comp, const fmi2ValueReference vr[], size_t n, const fmi2String value[]) {
    Instance *c = (Instance *)comp;
    size_t k;
    int j, chosen[64];
    if (!c || (n && (!vr || !value))) return fmi2Error;
    if (n > 64) return fail(c, "%s: fmi2SetString: at most 64 values per call", c->name);
    for (k = 0; k < n; k++) {
        const VarInfo *v = lookup(c, vr[k], VAR_STRING, "fmi2SetString");
        char accepted[400] = "";
        if (!v || check_settable(c, v) != fmi2OK) return fmi2Error;
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
    return fmi2OK;
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
   and return fmi2Discard with why.  fmi2Terminated then says whether a retry can help:
   `hard` (the model is beyond its hard limit whatever the step), or the host retried the
   step just discarded from the same state with the same inputs and no smaller step,
   which this deterministic model discards again (fmpy's simulate_fmu does that forever
   unless it hears fmi2Terminated). */
static fmi2Status discard_step(Instance *c, const ModelData *saved, double t, double h,
                               int hard, const char *why) {
    int repeated = c->has_discarded && h >= c->discarded_h
                   && memcmp(&c->discarded_from, saved, sizeof *saved) == 0;
    c->d = *saved;
    c->discarded_from = *saved;
    c->discarded_h = h;
    c->has_discarded = 1;
    c->terminated = hard || repeated;
    logf_(c, fmi2Discard, "logStatusDiscard",
          "%s: step [%.17g, %.17g] s: %s; the state is kept at t = %.17g s%s", c->name, t,
          t + h, why, c->d.time,
          hard ? " (the model cannot go on: fmi2Terminated)"
               : repeated ? " (the same step again: fmi2Terminated)"
                          : " (a smaller step may succeed)");
    return fmi2Discard;
}

fmi2Status fmi2DoStep(fmi2Component comp, fmi2Real t, fmi2Real h, fmi2Boolean no_prior) {
    Instance *c = (Instance *)comp;
    ModelData saved;
    char why[600] = "";
    int validity;
    (void)no_prior;
    if (!c) return fmi2Error;
    if (c->phase != ST_STEPPING) return fail(c, "%s: fmi2DoStep before initialization or after an error", c->name);
    if (!(h > 0.0) || !isfinite(h) || !isfinite(t))
        return fail(c, "%s: fmi2DoStep(t = %g s, h = %g s): the step must be finite and positive", c->name, t, h);
    if (!communication_point_ok(&c->d, t, h))
        return fail(c, "%s: fmi2DoStep at t = %.17g s, but the FMU is at t = %.17g s (%lld steps "
                     "from %.17g s): the communication point must be the FMU's time exactly",
                     c->name, t, c->d.time, c->d.steps, c->d.start_time);
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
            status = fs_advance(model_rhs, &c->d, c->d.x, c->d.gill_q, N_X, h / n, n, method, work);
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
    {
        char out[400];
        if (outputs_bad(&c->d, out, sizeof out)) return discard_step(c, &saved, t, h, 0, out);
    }
    c->d.time = t + h;
    c->d.steps += 1;
    c->terminated = 0;
    if (validity == 1 && !c->range_warned) {
        c->range_warned = 1;
        logf_(c, fmi2Warning, "logStatusWarning", "%s: t = %.9g s: %s", c->name, c->d.time, why);
    }
    return fmi2OK;
}


fmi2Status fmi2CancelStep(fmi2Component comp) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return fail(c, "%s: fmi2CancelStep: steps are never asynchronous here", c->name);
}

static fmi2Status status_unknown(fmi2Component comp, const char *what) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return fail(c, "%s: %s: no asynchronous step, no status to report", c->name, what);
}

fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *v) { (void)s; (void)v; return status_unknown(c, "fmi2GetStatus"); }
fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *v) { (void)s; (void)v; return status_unknown(c, "fmi2GetIntegerStatus"); }

/* FMI 2.0 lets a host ask these after fmi2DoStep returned fmi2Discard (fmpy's
   simulate_fmu does, and stops the run cleanly on fmi2True; an fmi2Error there aborts
   it): whether the model can go on (discard_step) and the time it stands at. */
fmi2Status fmi2GetBooleanStatus(fmi2Component comp, const fmi2StatusKind s, fmi2Boolean *v) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    if (s != fmi2Terminated) return status_unknown(comp, "fmi2GetBooleanStatus (only fmi2Terminated)");
    if (!v) return fail(c, "%s: fmi2GetBooleanStatus: no place for the value", c->name);
    *v = c->terminated ? fmi2True : fmi2False;
    return fmi2OK;
}

fmi2Status fmi2GetRealStatus(fmi2Component comp, const fmi2StatusKind s, fmi2Real *v) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    if (s != fmi2LastSuccessfulTime) return status_unknown(comp, "fmi2GetRealStatus (only fmi2LastSuccessfulTime)");
    if (!v) return fail(c, "%s: fmi2GetRealStatus: no place for the value", c->name);
    *v = c->d.time;
    return fmi2OK;
}
fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *v) { (void)s; (void)v; return status_unknown(c, "fmi2GetStringStatus"); }

fmi2Status fmi2SetRealInputDerivatives(fmi2Component comp, const fmi2ValueReference vr[], size_t n,
                                       const fmi2Integer order[], const fmi2Real value[]) {
    (void)vr; (void)n; (void)order; (void)value;
    return status_unknown(comp, "fmi2SetRealInputDerivatives (canInterpolateInputs is false)");
}

fmi2Status fmi2GetRealOutputDerivatives(fmi2Component comp, const fmi2ValueReference vr[], size_t n,
                                        const fmi2Integer order[], fmi2Real value[]) {
    (void)vr; (void)n; (void)order; (void)value;
    return status_unknown(comp, "fmi2GetRealOutputDerivatives (maxOutputDerivativeOrder is 0)");
}

fmi2Status fmi2GetDirectionalDerivative(fmi2Component comp, const fmi2ValueReference u[], size_t nu,
                                        const fmi2ValueReference z[], size_t nz, const fmi2Real du[],
                                        fmi2Real dz[]) {
    (void)u; (void)nu; (void)z; (void)nz; (void)du; (void)dz;
    return status_unknown(comp, "fmi2GetDirectionalDerivative (not provided)");
}

/* ---------------------------------------------------------------- FMU state -------- */
static unsigned long long saved_checksum(const SavedState *saved) {
    return fnv1a((const unsigned char *)&saved->d, sizeof saved->d);
}

fmi2Status fmi2GetFMUstate(fmi2Component comp, fmi2FMUstate *state) {
    Instance *c = (Instance *)comp;
    SavedState *copy;
    if (!c || !state) return fmi2Error;
    copy = (SavedState *)*state;
    if (copy && copy->magic != SAVED_MAGIC)
        return fail(c, "%s: fmi2GetFMUstate: the state given to overwrite is not one of this FMU's",
                    c->name);
    if (!copy) {
        copy = c->cb.allocateMemory ? (SavedState *)c->cb.allocateMemory(1, sizeof *copy)
                                    : (SavedState *)calloc(1, sizeof *copy);
        if (!copy) return fail(c, "%s: fmi2GetFMUstate: out of memory", c->name);
    }
    copy->magic = SAVED_MAGIC;
    copy->size = (unsigned)sizeof(ModelData);
    copy->d = c->d;
    copy->checksum = saved_checksum(copy);
    *state = copy;
    return fmi2OK;
}

fmi2Status fmi2SetFMUstate(fmi2Component comp, fmi2FMUstate state) {
    Instance *c = (Instance *)comp;
    const SavedState *saved = (const SavedState *)state;
    ModelData data;
    char why[600];
    if (!c) return fmi2Error;
    if (!state) return fail(c, "%s: fmi2SetFMUstate: no state given", c->name);
    if (saved->magic != SAVED_MAGIC || saved->size != sizeof(ModelData)
        || saved->checksum != saved_checksum(saved))
        return fail(c, "%s: fmi2SetFMUstate: the state is not one this FMU saved, or was "
                    "changed since (checksum); the instance is unchanged", c->name);
    data = saved->d;
    if (state_bad(&data, why, sizeof why))
        return fail(c, "%s: fmi2SetFMUstate: refused, %s; the instance is unchanged", c->name, why);
    c->d = data;
    c->terminated = c->has_discarded = 0;
    if (c->phase == ST_ERROR || c->phase == ST_TERMINATED) c->phase = ST_STEPPING;
    return fmi2OK;
}

fmi2Status fmi2FreeFMUstate(fmi2Component comp, fmi2FMUstate *state) {
    Instance *c = (Instance *)comp;
    if (!c || !state) return fmi2Error;
    if (*state) {
        if (c->cb.freeMemory) c->cb.freeMemory(*state);
        else free(*state);
    }
    *state = NULL;
    return fmi2OK;
}

/* The serialized layout: StateHeader | ModelData | FNV-1a 64 of the bytes before it. */
#define SERIAL_SIZE (sizeof(StateHeader) + sizeof(ModelData) + 8)

fmi2Status fmi2SerializedFMUstateSize(fmi2Component comp, fmi2FMUstate state, size_t *size) {
    Instance *c = (Instance *)comp;
    (void)state;
    if (!c || !size) return fmi2Error;
    *size = SERIAL_SIZE;
    return fmi2OK;
}

fmi2Status fmi2SerializeFMUstate(fmi2Component comp, fmi2FMUstate state, fmi2Byte bytes[], size_t size) {
    Instance *c = (Instance *)comp;
    const SavedState *saved = (const SavedState *)state;
    StateHeader head;
    unsigned long long sum;
    if (!c || !state || !bytes) return fmi2Error;
    if (size < SERIAL_SIZE)
        return fail(c, "%s: fmi2SerializeFMUstate: %lu bytes given, %lu needed", c->name,
                     (unsigned long)size, (unsigned long)SERIAL_SIZE);
    if (saved->magic != SAVED_MAGIC || saved->checksum != saved_checksum(saved))
        return fail(c, "%s: fmi2SerializeFMUstate: the state is not one this FMU saved, or was "
                    "changed since (checksum)", c->name);
    memset(&head, 0, sizeof head);
    head.magic = STATE_MAGIC;
    head.size = (unsigned)sizeof(ModelData);
    snprintf(head.guid, sizeof head.guid, "%s", MODEL_GUID);
    memcpy(bytes, &head, sizeof head);
    memcpy(bytes + sizeof head, &saved->d, sizeof(ModelData));
    sum = fnv1a((const unsigned char *)bytes, sizeof head + sizeof(ModelData));
    memcpy(bytes + sizeof head + sizeof(ModelData), &sum, 8);
    return fmi2OK;
}

fmi2Status fmi2DeSerializeFMUstate(fmi2Component comp, const fmi2Byte bytes[], size_t size, fmi2FMUstate *state) {
    Instance *c = (Instance *)comp;
    StateHeader head;
    ModelData data;
    SavedState *copy;
    unsigned long long sum;
    char why[600];
    if (!c || !bytes || !state) return fmi2Error;
    if (size != SERIAL_SIZE)
        return fail(c, "%s: fmi2DeSerializeFMUstate: %lu bytes are not a state of this FMU (%lu expected)",
                     c->name, (unsigned long)size, (unsigned long)SERIAL_SIZE);
    memcpy(&head, bytes, sizeof head);
    if (head.magic != STATE_MAGIC || head.size != sizeof(ModelData)
        || memchr(head.guid, '\0', sizeof head.guid) == NULL
        || strncmp(head.guid, MODEL_GUID, sizeof head.guid) != 0)
        return fail(c, "%s: fmi2DeSerializeFMUstate: the bytes are not a state of this FMU "
                    "(header)", c->name);
    memcpy(&sum, bytes + sizeof head + sizeof(ModelData), 8);
    if (sum != fnv1a((const unsigned char *)bytes, sizeof head + sizeof(ModelData)))
        return fail(c, "%s: fmi2DeSerializeFMUstate: the state is corrupt (its FNV-1a checksum "
                    "does not match its bytes)", c->name);
    memcpy(&data, bytes + sizeof head, sizeof data);
    if (state_bad(&data, why, sizeof why))
        return fail(c, "%s: fmi2DeSerializeFMUstate: refused, %s", c->name, why);
    if (*state && ((SavedState *)*state)->magic != SAVED_MAGIC)
        return fail(c, "%s: fmi2DeSerializeFMUstate: the state given to overwrite is not one "
                    "of this FMU's", c->name);
    copy = (SavedState *)*state;
    if (!copy) {
        copy = c->cb.allocateMemory ? (SavedState *)c->cb.allocateMemory(1, sizeof *copy)
                                    : (SavedState *)calloc(1, sizeof *copy);
        if (!copy) return fail(c, "%s: fmi2DeSerializeFMUstate: out of memory", c->name);
    }
    copy->magic = SAVED_MAGIC;
    copy->size = (unsigned)sizeof(ModelData);
    copy->d = data;
    copy->checksum = saved_checksum(copy);
    *state = copy;
    return fmi2OK;
}
