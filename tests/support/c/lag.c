/* FirstOrderLag: a tiny FMI 2.0 co-simulation FMU written in C, for the master tests.
 *
 *   T x' = K u - x          (x: output, a state; u: input held over a step)
 *   dx   = (K u - x) / T    (output with direct feedthrough from u)
 *
 * The step is the exact zero-order-hold solution
 *   x(t + h) = a x(t) + K (1 - a) u,   a = exp(-h / T),
 * so a sampled loop around it has a closed-form discrete solution.
 *
 * Inputs outside [U_MIN, U_MAX] or not finite, and parameters outside their range,
 * are rejected with fmi2Error and a log message naming the variable; the value is
 * left unchanged.  A state that is no longer finite after a step gives fmi2Error
 * ("diverged") and the state of the start of the step is kept.
 * The whole state is one flat struct: get/set/serialize copy it. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi2Functions.h"

#ifndef MODEL_GUID
#define MODEL_GUID "{8c4e810f-3df3-4a00-8276-176fa3c9f000}"
#endif

#define U_MIN (-100.0)
#define U_MAX (100.0)

enum { VR_U = 0, VR_X = 1, VR_DX = 2, VR_T = 3, VR_K = 4, VR_X0 = 5, N_VR = 6 };
static const char *VAR_NAMES[N_VR] = {"u", "x", "dx", "T", "K", "x0"};

enum { MODE_INSTANTIATED, MODE_INIT, MODE_STEP, MODE_TERMINATED, MODE_ERROR };

#define STATE_MAGIC 0x4c41473246ul /* "LAG2F" */

/* Everything that evolves, in one flat struct (MuJoCo-style): copyable in one line. */
typedef struct {
    unsigned long magic;
    double time, x, u, T, K, x0;
    int mode;
} LagState;

typedef struct {
    LagState s;
    const fmi2CallbackFunctions *cb;
    char name[128];
    int logging_on;
} Lag;

static void logf_(Lag *m, fmi2Status status, const char *category, const char *fmt, ...) {
    char buf[512], msg[1024];
    size_t i, j;
    va_list ap;
    if (!m || !m->cb || !m->cb->logger) return;
    if (!m->logging_on && status < fmi2Error) return;  /* errors always reach the host */
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    /* The message is passed as the format, '%' doubled: hosts that format it and hosts
     * that print it raw both show the text. */
    for (i = j = 0; buf[i] && j + 2 < sizeof msg; i++) {
        if (buf[i] == '%') msg[j++] = '%';
        msg[j++] = buf[i];
    }
    msg[j] = '\0';
    m->cb->logger(m->cb->componentEnvironment, m->name, status, category, msg);
}

static int valid_vr(Lag *m, fmi2ValueReference vr, const char *fn) {
    if (vr >= N_VR) {
        logf_(m, fmi2Error, "logStatusError", "%s: unknown value reference %u", fn, (unsigned)vr);
        return 0;
    }
    return 1;
}

static double dx_of(const LagState *s) { return (s->K * s->u - s->x) / s->T; }

/* ---------------------------------------------------------------------------------- */
const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char *fmi2GetVersion(void) { return fmi2Version; }

fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n, const fmi2String cats[]) {
    (void)n; (void)cats;
    ((Lag *)c)->logging_on = on;
    return fmi2OK;
}

fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String location,
                              const fmi2CallbackFunctions *cb, fmi2Boolean visible, fmi2Boolean logging_on) {
    Lag tmp, *m;
    (void)location; (void)visible;
    if (!cb || !cb->allocateMemory || !cb->freeMemory) return NULL;
    memset(&tmp, 0, sizeof tmp);
    tmp.cb = cb;
    tmp.logging_on = logging_on;
    snprintf(tmp.name, sizeof tmp.name, "%s", name ? name : "");
    if (type != fmi2CoSimulation) {
        logf_(&tmp, fmi2Error, "logStatusError", "fmi2Instantiate: only co-simulation is supported");
        return NULL;
    }
    if (!guid || strcmp(guid, MODEL_GUID) != 0) {
        logf_(&tmp, fmi2Error, "logStatusError", "fmi2Instantiate: GUID %s does not match %s",
              guid ? guid : "(null)", MODEL_GUID);
        return NULL;
    }
    m = (Lag *)cb->allocateMemory(1, sizeof(Lag));
    if (!m) return NULL;
    *m = tmp;
    m->s.magic = STATE_MAGIC;
    m->s.T = 0.1;
    m->s.K = 1.0;
    m->s.x0 = 0.0;
    m->s.mode = MODE_INSTANTIATED;
    return m;
}

void fmi2FreeInstance(fmi2Component c) {
    Lag *m = (Lag *)c;
    if (m) m->cb->freeMemory(m);
}

fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tol_defined, fmi2Real tol, fmi2Real t0,
                               fmi2Boolean stop_defined, fmi2Real stop) {
    (void)tol_defined; (void)tol; (void)stop_defined; (void)stop;
    ((Lag *)c)->s.time = t0;
    return fmi2OK;
}

fmi2Status fmi2EnterInitializationMode(fmi2Component c) {
    ((Lag *)c)->s.mode = MODE_INIT;
    return fmi2OK;
}

fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
    Lag *m = (Lag *)c;
    m->s.x = m->s.x0;
    m->s.mode = MODE_STEP;
    return fmi2OK;
}

fmi2Status fmi2Terminate(fmi2Component c) {
    ((Lag *)c)->s.mode = MODE_TERMINATED;
    return fmi2OK;
}

fmi2Status fmi2Reset(fmi2Component c) {
    Lag *m = (Lag *)c;
    m->s.time = 0.0; m->s.x = 0.0; m->s.u = 0.0;
    m->s.T = 0.1; m->s.K = 1.0; m->s.x0 = 0.0;
    m->s.mode = MODE_INSTANTIATED;
    return fmi2OK;
}

/* ---------------------------------------------------------------------------------- */
fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real value[]) {
    Lag *m = (Lag *)c;
    size_t i;
    for (i = 0; i < n; i++) {
        if (!valid_vr(m, vr[i], "fmi2GetReal")) return fmi2Error;
        switch (vr[i]) {
            case VR_U: value[i] = m->s.u; break;
            case VR_X: value[i] = m->s.mode == MODE_STEP ? m->s.x : m->s.x0; break;
            case VR_DX: value[i] = dx_of(&m->s); break;
            case VR_T: value[i] = m->s.T; break;
            case VR_K: value[i] = m->s.K; break;
            case VR_X0: value[i] = m->s.x0; break;
        }
    }
    return fmi2OK;
}

static fmi2Status set_one(Lag *m, fmi2ValueReference vr, double v) {
    const char *name;
    if (!valid_vr(m, vr, "fmi2SetReal")) return fmi2Error;
    name = VAR_NAMES[vr];
    if (vr == VR_X || vr == VR_DX) {
        logf_(m, fmi2Error, "logStatusError", "fmi2SetReal: %s is an output and cannot be set", name);
        return fmi2Error;
    }
    if (vr != VR_U && m->s.mode != MODE_INSTANTIATED && m->s.mode != MODE_INIT) {
        logf_(m, fmi2Error, "logStatusError",
              "fmi2SetReal: parameter '%s' is fixed after initialization", name);
        return fmi2Error;
    }
    if (!isfinite(v)) {
        logf_(m, fmi2Error, "logStatusError", "fmi2SetReal: %s '%s' = %g is not finite",
              vr == VR_U ? "input" : "parameter", name, v);
        return fmi2Error;
    }
    switch (vr) {
        case VR_U:
            if (v < U_MIN || v > U_MAX) {
                logf_(m, fmi2Error, "logStatusError",
                      "fmi2SetReal: input 'u' = %.17g is outside its range [%g, %g]", v, U_MIN, U_MAX);
                return fmi2Error;
            }
            m->s.u = v;
            break;
        case VR_T:
            if (!(v > 0.0)) {
                logf_(m, fmi2Error, "logStatusError",
                      "fmi2SetReal: parameter 'T' = %.17g is invalid: accepted range (0, inf) s", v);
                return fmi2Error;
            }
            m->s.T = v;
            break;
        case VR_K: m->s.K = v; break;
        case VR_X0: m->s.x0 = v; break;
    }
    return fmi2OK;
}

fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real value[]) {
    Lag *m = (Lag *)c;
    LagState saved = m->s;
    size_t i;
    for (i = 0; i < n; i++) {
        if (set_one(m, vr[i], value[i]) != fmi2OK) {
            m->s = saved;  /* all or nothing */
            return fmi2Error;
        }
    }
    return fmi2OK;
}

#define NO_SUCH_TYPE(fn, T, qual)                                                              \
    fmi2Status fn(fmi2Component c, const fmi2ValueReference vr[], size_t n, qual T value[]) { \
        (void)vr; (void)value;                                                                 \
        if (n == 0) return fmi2OK;                                                             \
        logf_((Lag *)c, fmi2Error, "logStatusError", #fn ": the model has no such variables"); \
        return fmi2Error;                                                                      \
    }
NO_SUCH_TYPE(fmi2GetInteger, fmi2Integer, )
NO_SUCH_TYPE(fmi2GetBoolean, fmi2Boolean, )
NO_SUCH_TYPE(fmi2GetString, fmi2String, )
NO_SUCH_TYPE(fmi2SetInteger, fmi2Integer, const)
NO_SUCH_TYPE(fmi2SetBoolean, fmi2Boolean, const)
NO_SUCH_TYPE(fmi2SetString, fmi2String, const)

/* ---------------------------------------------------------------------------------- */
fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *state) {
    Lag *m = (Lag *)c;
    LagState *s = (LagState *)*state;
    if (!s) s = (LagState *)m->cb->allocateMemory(1, sizeof(LagState));
    if (!s) return fmi2Error;
    *s = m->s;
    *state = s;
    return fmi2OK;
}

fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state) {
    Lag *m = (Lag *)c;
    const LagState *s = (const LagState *)state;
    if (!s || s->magic != STATE_MAGIC) {
        logf_(m, fmi2Error, "logStatusError", "fmi2SetFMUstate: not a FirstOrderLag state");
        return fmi2Error;
    }
    m->s = *s;
    return fmi2OK;
}

fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *state) {
    Lag *m = (Lag *)c;
    if (state && *state) {
        m->cb->freeMemory(*state);
        *state = NULL;
    }
    return fmi2OK;
}

fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate state, size_t *size) {
    (void)c; (void)state;
    *size = sizeof(LagState);
    return fmi2OK;
}

fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate state, fmi2Byte bytes[], size_t size) {
    Lag *m = (Lag *)c;
    if (size < sizeof(LagState)) {
        logf_(m, fmi2Error, "logStatusError", "fmi2SerializeFMUstate: buffer too small");
        return fmi2Error;
    }
    memcpy(bytes, state, sizeof(LagState));
    return fmi2OK;
}

fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte bytes[], size_t size,
                                   fmi2FMUstate *state) {
    Lag *m = (Lag *)c;
    LagState s;
    if (size != sizeof(LagState)) {
        logf_(m, fmi2Error, "logStatusError", "fmi2DeSerializeFMUstate: %lu bytes, expected %lu",
              (unsigned long)size, (unsigned long)sizeof(LagState));
        return fmi2Error;
    }
    memcpy(&s, bytes, sizeof s);
    if (s.magic != STATE_MAGIC) {
        logf_(m, fmi2Error, "logStatusError", "fmi2DeSerializeFMUstate: not a FirstOrderLag state");
        return fmi2Error;
    }
    return fmi2GetFMUstate(c, state) == fmi2OK ? (memcpy(*state, &s, sizeof s), fmi2OK) : fmi2Error;
}

fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference unknown[], size_t nu,
                                        const fmi2ValueReference known[], size_t nk,
                                        const fmi2Real dv_known[], fmi2Real dv_unknown[]) {
    (void)unknown; (void)nu; (void)known; (void)nk; (void)dv_known; (void)dv_unknown;
    logf_((Lag *)c, fmi2Error, "logStatusError", "fmi2GetDirectionalDerivative is not provided");
    return fmi2Error;
}

/* ---------------------------------------------------------------------------------- */
fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                       const fmi2Integer order[], const fmi2Real value[]) {
    (void)vr; (void)n; (void)order; (void)value;
    logf_((Lag *)c, fmi2Error, "logStatusError", "input derivatives are not supported");
    return fmi2Error;
}

fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                        const fmi2Integer order[], fmi2Real value[]) {
    (void)vr; (void)n; (void)order; (void)value;
    logf_((Lag *)c, fmi2Error, "logStatusError", "output derivatives are not supported");
    return fmi2Error;
}

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean no_prior) {
    Lag *m = (Lag *)c;
    double a, x;
    (void)no_prior;
    if (m->s.mode != MODE_STEP) {
        logf_(m, fmi2Error, "logStatusError", "fmi2DoStep called outside step mode");
        return fmi2Error;
    }
    if (!(h > 0.0) || !isfinite(h)) {
        logf_(m, fmi2Error, "logStatusError", "fmi2DoStep: step size %g must be finite and > 0", h);
        return fmi2Error;
    }
    a = exp(-h / m->s.T);
    x = a * m->s.x + m->s.K * (1.0 - a) * m->s.u;
    if (!isfinite(x)) {
        logf_(m, fmi2Error, "logStatusError",
              "fmi2DoStep: state 'x' diverged (%g) in the step from t = %.17g s", x, t);
        return fmi2Error;
    }
    m->s.x = x;
    m->s.time = t + h;
    return fmi2OK;
}

fmi2Status fmi2CancelStep(fmi2Component c) { (void)c; return fmi2Error; }

static fmi2Status no_status(fmi2Component c) {
    logf_((Lag *)c, fmi2Error, "logStatusError", "no asynchronous step: no status to report");
    return fmi2Discard;
}
fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind k, fmi2Status *v) { (void)k; (void)v; return no_status(c); }
fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind k, fmi2Real *v) {
    Lag *m = (Lag *)c;
    if (k == fmi2LastSuccessfulTime) { *v = m->s.time; return fmi2OK; }
    return no_status(c);
}
fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind k, fmi2Integer *v) { (void)k; (void)v; return no_status(c); }
fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind k, fmi2Boolean *v) {
    if (k == fmi2Terminated) { *v = fmi2False; return fmi2OK; }
    return no_status(c);
}
fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind k, fmi2String *v) { (void)k; (void)v; return no_status(c); }
