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
 *    "substeps" steps per communication step) and advances the discrete state; a step
 *    that gives a non-finite state is undone and returns fmi2Discard with a message;
 *  - when the model leaves the range where it is accurate (model_validity), a warning is
 *    logged once per run (status fmi2Warning; the step stands);
 *  - the whole state (time, values, continuous and discrete state) is saved by
 *    fmi2GetFMUstate and serialized as bytes with a header that is checked on reading;
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

typedef enum { ST_INSTANTIATED, ST_INITIALIZATION, ST_STEPPING, ST_TERMINATED, ST_ERROR } Phase;

typedef struct {
    ModelData d;
    Phase phase;
    int logging_on;
    int range_warned;      /* model_validity has been reported in this run */
    char name[128];
    fmi2CallbackFunctions cb;
} Instance;

#define STATE_MAGIC 0x46435346u   /* "FCSF" */
typedef struct {
    unsigned magic;
    unsigned size;
    char guid[64];
} StateHeader;

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

static int substeps(const ModelData *d) {
#if VR_SUBSTEPS >= 0
    return d->i[VR_SUBSTEPS];
#else
    (void)d;
    return 1;
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

static unsigned long long fnv1a(const unsigned char *p, size_t n) {
    unsigned long long h = 14695981039346656037ULL;
    size_t i;
    for (i = 0; i < n; ++i) { h ^= p[i]; h *= 1099511628211ULL; }
    return h;
}

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
    c->d.time = start;
    return fmi2OK;
}

static fmi2Status start_model(Instance *c) {
    char msg[512] = "";
    if (model_setup(&c->d, msg, sizeof msg)) {
        c->phase = ST_ERROR;
        return fail(c, "%s: %s", c->name, msg);
    }
    memset(c->d.gill_q, 0, sizeof c->d.gill_q);
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
fmi2Status fmi2DoStep(fmi2Component comp, fmi2Real t, fmi2Real h, fmi2Boolean no_prior) {
    Instance *c = (Instance *)comp;
    ModelData saved;
    (void)no_prior;
    if (!c) return fmi2Error;
    if (c->phase != ST_STEPPING) return fail(c, "%s: fmi2DoStep before initialization or after an error", c->name);
    if (!(h > 0.0) || !isfinite(h) || !isfinite(t))
        return fail(c, "%s: fmi2DoStep(t = %g s, h = %g s): the step must be finite and positive", c->name, t, h);
    if (fabs(t - c->d.time) > 1e-9 * (1.0 + fabs(t)))
        return fail(c, "%s: fmi2DoStep at t = %.17g s, but the FMU is at %.17g s", c->name, t, c->d.time);
#ifdef SAMPLE_TIME
    {   /* a sampled law designed for one step size (its discretisation depends on it) */
        const ModelData *d = &c->d;
        double dt = SAMPLE_TIME;
        (void)d;                        /* a constant sample time does not read it */
        if (fabs(h - dt) > 1e-9 * dt) {
            char a[32], b[32], e[32];
            logf_(c, fmi2Discard, "logStatusDiscard",
                  "%s is designed for steps of %s s; got a step of %s s at t = %s s", c->name,
                  shortest(a, sizeof a, dt), shortest(b, sizeof b, h), shortest(e, sizeof e, t));
            return fmi2Discard;
        }
    }
#endif
    saved = c->d;
#if N_X > 0
    {
        int n = substeps(&c->d), s;
        double hs = h / n;
        int gill = method_is_gill(&c->d);
        double scratch[5 * N_X];
        for (s = 0; s < n; s++) {
            if (gill) fs_gill_step(model_rhs, &c->d, c->d.x, c->d.gill_q, N_X, hs, scratch);
            else fs_rk4_step(model_rhs, &c->d, c->d.x, N_X, hs, scratch);
        }
    }
#endif
#if N_Z > 0
    model_update(&c->d, h);
#endif
    if (!state_finite(&c->d)) {
        c->d = saved;
        logf_(c, fmi2Discard, "logStatusDiscard",
              "%s: step [%.9g, %.9g] s gave a non-finite state; the state is kept at t = %.9g s",
              c->name, t, t + h, c->d.time);
        return fmi2Discard;
    }
    {
        char why[512] = "";
        int validity = model_validity(&c->d, why, sizeof why);
        if (validity == 2) {          /* beyond the model's hard limit: undo the step */
            c->d = saved;
            logf_(c, fmi2Discard, "logStatusDiscard", "%s: step [%.9g, %.9g] s: %s; the state "
                  "is kept at t = %.9g s", c->name, t, t + h, why, c->d.time);
            return fmi2Discard;
        }
        c->d.time = t + h;
        if (validity == 1 && !c->range_warned) {
            c->range_warned = 1;
            logf_(c, fmi2Warning, "logStatusWarning", "%s: t = %.9g s: %s", c->name,
                  c->d.time, why);
        }
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
fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *v) { (void)s; (void)v; return status_unknown(c, "fmi2GetRealStatus"); }
fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *v) { (void)s; (void)v; return status_unknown(c, "fmi2GetIntegerStatus"); }
fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *v) { (void)s; (void)v; return status_unknown(c, "fmi2GetBooleanStatus"); }
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
fmi2Status fmi2GetFMUstate(fmi2Component comp, fmi2FMUstate *state) {
    Instance *c = (Instance *)comp;
    ModelData *copy;
    if (!c || !state) return fmi2Error;
    copy = (ModelData *)*state;
    if (!copy) {
        copy = c->cb.allocateMemory ? (ModelData *)c->cb.allocateMemory(1, sizeof *copy)
                                    : (ModelData *)calloc(1, sizeof *copy);
        if (!copy) return fail(c, "%s: fmi2GetFMUstate: out of memory", c->name);
    }
    *copy = c->d;
    *state = copy;
    return fmi2OK;
}

fmi2Status fmi2SetFMUstate(fmi2Component comp, fmi2FMUstate state) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    if (!state) return fail(c, "%s: fmi2SetFMUstate: no state given", c->name);
    c->d = *(const ModelData *)state;
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

fmi2Status fmi2SerializedFMUstateSize(fmi2Component comp, fmi2FMUstate state, size_t *size) {
    Instance *c = (Instance *)comp;
    (void)state;
    if (!c || !size) return fmi2Error;
    *size = sizeof(StateHeader) + sizeof(ModelData);
    return fmi2OK;
}

fmi2Status fmi2SerializeFMUstate(fmi2Component comp, fmi2FMUstate state, fmi2Byte bytes[], size_t size) {
    Instance *c = (Instance *)comp;
    StateHeader head;
    if (!c || !state || !bytes) return fmi2Error;
    if (size < sizeof head + sizeof(ModelData))
        return fail(c, "%s: fmi2SerializeFMUstate: %lu bytes given, %lu needed", c->name,
                     (unsigned long)size, (unsigned long)(sizeof head + sizeof(ModelData)));
    memset(&head, 0, sizeof head);
    head.magic = STATE_MAGIC;
    head.size = (unsigned)sizeof(ModelData);
    snprintf(head.guid, sizeof head.guid, "%s", MODEL_GUID);
    memcpy(bytes, &head, sizeof head);
    memcpy(bytes + sizeof head, state, sizeof(ModelData));
    return fmi2OK;
}

fmi2Status fmi2DeSerializeFMUstate(fmi2Component comp, const fmi2Byte bytes[], size_t size, fmi2FMUstate *state) {
    Instance *c = (Instance *)comp;
    StateHeader head;
    ModelData data;
    int k;
    if (!c || !bytes || !state) return fmi2Error;
    if (size != sizeof head + sizeof(ModelData))
        return fail(c, "%s: fmi2DeSerializeFMUstate: %lu bytes are not a state of this FMU (%lu expected)",
                     c->name, (unsigned long)size, (unsigned long)(sizeof head + sizeof(ModelData)));
    memcpy(&head, bytes, sizeof head);
    if (head.magic != STATE_MAGIC || head.size != sizeof(ModelData)
        || strncmp(head.guid, MODEL_GUID, sizeof head.guid) != 0)
        return fail(c, "%s: fmi2DeSerializeFMUstate: the bytes are not a state of this FMU", c->name);
    memcpy(&data, bytes + sizeof head, sizeof data);
    for (k = 0; k < N_VARS; k++)     /* a state from elsewhere must not index out of bounds */
        if (VARS[k].type == VAR_STRING && (data.s[k] < 0 || data.s[k] >= VARS[k].n_choices))
            return fail(c, "%s: fmi2DeSerializeFMUstate: corrupt state (%s)", c->name, VARS[k].name);
#if VR_SUBSTEPS >= 0
    if (data.i[VR_SUBSTEPS] < 1) return fail(c, "%s: fmi2DeSerializeFMUstate: corrupt state (substeps)", c->name);
#endif
    if (fmi2GetFMUstate(comp, state) != fmi2OK) return fmi2Error;
    *(ModelData *)*state = data;
    return fmi2OK;
}
