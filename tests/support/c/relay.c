/* Relay: a tiny FMI 2.0 co-simulation FMU in C whose outputs are its inputs, one of each
 * type the master exchanges (direct feedthrough, no state): tests of how values are set
 * and read as Real, Integer and Boolean (tests/test_fmu/cosim/test_compiled_loop.py).
 *
 *   r  Real input     -> r_out  Real output
 *   i  Integer input  -> i_out  Integer output
 *   b  Boolean input  -> b_out  Boolean output (the value set, as an fmi2Boolean)
 *
 * No get/set of the FMU state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi2Functions.h"

#ifndef MODEL_GUID
#define MODEL_GUID "{0c6f1a9e-3f1d-4f7e-9a55-2b1d4c8e7f10}"
#endif

enum { VR_R = 0, VR_R_OUT = 1 };           /* Real */
enum { VR_I = 0, VR_I_OUT = 1 };           /* Integer */
enum { VR_B = 0, VR_B_OUT = 1 };           /* Boolean */

typedef struct {
    const fmi2CallbackFunctions *cb;
    char name[128];
    double time, r;
    int i, b;
} Relay;

static void say(Relay *m, fmi2Status status, const char *text) {
    if (m && m->cb && m->cb->logger)
        m->cb->logger(m->cb->componentEnvironment, m->name, status, "logStatusError", text);
}

const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char *fmi2GetVersion(void) { return fmi2Version; }

fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n, const fmi2String cats[]) {
    (void)c; (void)on; (void)n; (void)cats;
    return fmi2OK;
}

fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String location,
                              const fmi2CallbackFunctions *cb, fmi2Boolean visible, fmi2Boolean logging_on) {
    Relay *m;
    (void)location; (void)visible; (void)logging_on;
    if (!cb || !cb->allocateMemory || type != fmi2CoSimulation) return NULL;
    if (!guid || strcmp(guid, MODEL_GUID) != 0) return NULL;
    m = (Relay *)cb->allocateMemory(1, sizeof(Relay));
    if (!m) return NULL;
    m->cb = cb;
    snprintf(m->name, sizeof m->name, "%s", name ? name : "");
    return m;
}

void fmi2FreeInstance(fmi2Component c) {
    Relay *m = (Relay *)c;
    if (m) m->cb->freeMemory(m);
}

fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tol_defined, fmi2Real tol, fmi2Real t0,
                               fmi2Boolean stop_defined, fmi2Real stop) {
    (void)tol_defined; (void)tol; (void)stop_defined; (void)stop;
    ((Relay *)c)->time = t0;
    return fmi2OK;
}

fmi2Status fmi2EnterInitializationMode(fmi2Component c) { (void)c; return fmi2OK; }
fmi2Status fmi2ExitInitializationMode(fmi2Component c) { (void)c; return fmi2OK; }
fmi2Status fmi2Terminate(fmi2Component c) { (void)c; return fmi2OK; }
fmi2Status fmi2Reset(fmi2Component c) { (void)c; return fmi2Error; }

#define GETSET(Type, ctype, in, out, field)                                                    \
fmi2Status fmi2Get##Type(fmi2Component c, const fmi2ValueReference vr[], size_t n, ctype value[]) { \
    Relay *m = (Relay *)c;                                                                     \
    size_t k;                                                                                  \
    for (k = 0; k < n; k++) {                                                                  \
        if (vr[k] != in && vr[k] != out) {                                                     \
            say(m, fmi2Error, "fmi2Get" #Type ": unknown value reference");                    \
            return fmi2Error;                                                                  \
        }                                                                                      \
        value[k] = m->field;                                                                   \
    }                                                                                          \
    return fmi2OK;                                                                             \
}                                                                                              \
fmi2Status fmi2Set##Type(fmi2Component c, const fmi2ValueReference vr[], size_t n,            \
                         const ctype value[]) {                                                \
    Relay *m = (Relay *)c;                                                                     \
    size_t k;                                                                                  \
    for (k = 0; k < n; k++) {                                                                  \
        if (vr[k] != in) {                                                                     \
            say(m, fmi2Error, "fmi2Set" #Type ": not settable");                              \
            return fmi2Error;                                                                  \
        }                                                                                      \
        m->field = value[k];                                                                   \
    }                                                                                          \
    return fmi2OK;                                                                             \
}

GETSET(Real, fmi2Real, VR_R, VR_R_OUT, r)
GETSET(Integer, fmi2Integer, VR_I, VR_I_OUT, i)
GETSET(Boolean, fmi2Boolean, VR_B, VR_B_OUT, b)

fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2String value[]) {
    (void)vr; (void)value;
    if (n == 0) return fmi2OK;
    say((Relay *)c, fmi2Error, "fmi2GetString: no String variables");
    return fmi2Error;
}

fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2String value[]) {
    (void)vr; (void)value;
    if (n == 0) return fmi2OK;
    say((Relay *)c, fmi2Error, "fmi2SetString: no String variables");
    return fmi2Error;
}

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean no_prior) {
    (void)no_prior;
    ((Relay *)c)->time = t + h;
    return fmi2OK;
}

fmi2Status fmi2CancelStep(fmi2Component c) { (void)c; return fmi2Error; }

fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind k, fmi2Status *v) {
    (void)c; (void)k; (void)v;
    return fmi2Discard;
}
fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind k, fmi2Real *v) {
    if (k != fmi2LastSuccessfulTime) return fmi2Discard;
    *v = ((Relay *)c)->time;
    return fmi2OK;
}
fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind k, fmi2Integer *v) {
    (void)c; (void)k; (void)v;
    return fmi2Discard;
}
fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind k, fmi2Boolean *v) {
    (void)c; (void)k; (void)v;
    return fmi2Discard;
}
fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind k, fmi2String *v) {
    (void)c; (void)k; (void)v;
    return fmi2Discard;
}

/* not provided (canGetAndSetFMUstate = false, no directional derivatives) */
fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *s) { (void)c; (void)s; return fmi2Error; }
fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate s) { (void)c; (void)s; return fmi2Error; }
fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *s) { (void)c; (void)s; return fmi2Error; }
fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate s, size_t *n) {
    (void)c; (void)s; (void)n;
    return fmi2Error;
}
fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate s, fmi2Byte b[], size_t n) {
    (void)c; (void)s; (void)b; (void)n;
    return fmi2Error;
}
fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte b[], size_t n, fmi2FMUstate *s) {
    (void)c; (void)b; (void)n; (void)s;
    return fmi2Error;
}
fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference u[], size_t nu,
                                        const fmi2ValueReference k[], size_t nk,
                                        const fmi2Real dk[], fmi2Real du[]) {
    (void)c; (void)u; (void)nu; (void)k; (void)nk; (void)dk; (void)du;
    return fmi2Error;
}
fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                       const fmi2Integer order[], const fmi2Real value[]) {
    (void)c; (void)vr; (void)n; (void)order; (void)value;
    return fmi2Error;
}
fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                        const fmi2Integer order[], fmi2Real value[]) {
    (void)c; (void)vr; (void)n; (void)order; (void)value;
    return fmi2Error;
}
