/* Stair: a tiny FMI 2.0 co-simulation FMU in C with the two traits of the Modelica
 * Reference FMUs that third-party masters trip over (issue 13, items 21 and 22):
 *
 *   counter  Integer output: the number of whole seconds elapsed (a stair);
 *   label    String input (start "ab"): not connectable, but a dependency of y;
 *   u        Real input;
 *   y        Real output, y = u + strlen(label): direct feedthrough from u AND label;
 *   stop_at  Real parameter: at t = stop_at the model asks to terminate, like the
 *            Reference FMU Stair: the fmi2DoStep that reaches it returns fmi2Discard,
 *            fmi2GetBooleanStatus(fmi2Terminated) is true and
 *            fmi2GetRealStatus(fmi2LastSuccessfulTime) is stop_at.
 *
 * No get/set of the FMU state (the Reference FMUs in this role do not need it). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi2Functions.h"

#ifndef MODEL_GUID
#define MODEL_GUID "{5b0b5c0e-6f53-4a51-9d1c-7a3e3f2a5a01}"
#endif

enum { VR_COUNTER = 0, VR_U = 1, VR_Y = 2, VR_STOP_AT = 3 };
enum { VR_LABEL = 0 };  /* String value references are their own space */

typedef struct {
    const fmi2CallbackFunctions *cb;
    char name[128];
    double time, u, stop_at;
    char label[256];
    int terminated;
} Stair;

static void say(Stair *m, fmi2Status status, const char *text) {
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
    Stair *m;
    (void)location; (void)visible; (void)logging_on;
    if (!cb || !cb->allocateMemory || type != fmi2CoSimulation) return NULL;
    if (!guid || strcmp(guid, MODEL_GUID) != 0) return NULL;
    m = (Stair *)cb->allocateMemory(1, sizeof(Stair));
    if (!m) return NULL;
    m->cb = cb;
    snprintf(m->name, sizeof m->name, "%s", name ? name : "");
    m->stop_at = 1e300;
    strcpy(m->label, "ab");
    return m;
}

void fmi2FreeInstance(fmi2Component c) {
    Stair *m = (Stair *)c;
    if (m) m->cb->freeMemory(m);
}

fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tol_defined, fmi2Real tol, fmi2Real t0,
                               fmi2Boolean stop_defined, fmi2Real stop) {
    (void)tol_defined; (void)tol; (void)stop_defined; (void)stop;
    ((Stair *)c)->time = t0;
    return fmi2OK;
}

fmi2Status fmi2EnterInitializationMode(fmi2Component c) { (void)c; return fmi2OK; }
fmi2Status fmi2ExitInitializationMode(fmi2Component c) { (void)c; return fmi2OK; }
fmi2Status fmi2Terminate(fmi2Component c) { (void)c; return fmi2OK; }
fmi2Status fmi2Reset(fmi2Component c) { (void)c; return fmi2Error; }

fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real value[]) {
    Stair *m = (Stair *)c;
    size_t i;
    for (i = 0; i < n; i++) {
        switch (vr[i]) {
            case VR_U: value[i] = m->u; break;
            case VR_Y: value[i] = m->u + (double)strlen(m->label); break;
            case VR_STOP_AT: value[i] = m->stop_at; break;
            default: say(m, fmi2Error, "fmi2GetReal: unknown value reference"); return fmi2Error;
        }
    }
    return fmi2OK;
}

fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Integer value[]) {
    Stair *m = (Stair *)c;
    size_t i;
    for (i = 0; i < n; i++) {
        if (vr[i] != VR_COUNTER) { say(m, fmi2Error, "fmi2GetInteger: unknown value reference"); return fmi2Error; }
        value[i] = (fmi2Integer)floor(m->time + 1e-9);
    }
    return fmi2OK;
}

fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2String value[]) {
    Stair *m = (Stair *)c;
    size_t i;
    for (i = 0; i < n; i++) {
        if (vr[i] != VR_LABEL) { say(m, fmi2Error, "fmi2GetString: unknown value reference"); return fmi2Error; }
        value[i] = m->label;
    }
    return fmi2OK;
}

fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real value[]) {
    Stair *m = (Stair *)c;
    size_t i;
    for (i = 0; i < n; i++) {
        if (vr[i] == VR_U) m->u = value[i];
        else if (vr[i] == VR_STOP_AT) m->stop_at = value[i];
        else { say(m, fmi2Error, "fmi2SetReal: not settable"); return fmi2Error; }
    }
    return fmi2OK;
}

fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2String value[]) {
    Stair *m = (Stair *)c;
    size_t i;
    for (i = 0; i < n; i++) {
        if (vr[i] != VR_LABEL || !value[i]) { say(m, fmi2Error, "fmi2SetString: not settable"); return fmi2Error; }
        snprintf(m->label, sizeof m->label, "%s", value[i]);
    }
    return fmi2OK;
}

fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Integer value[]) {
    (void)vr; (void)value;
    if (n == 0) return fmi2OK;
    say((Stair *)c, fmi2Error, "fmi2SetInteger: no settable Integer");
    return fmi2Error;
}

fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Boolean value[]) {
    (void)vr; (void)value;
    if (n == 0) return fmi2OK;
    say((Stair *)c, fmi2Error, "fmi2GetBoolean: no Boolean variables");
    return fmi2Error;
}

fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Boolean value[]) {
    (void)vr; (void)value;
    if (n == 0) return fmi2OK;
    say((Stair *)c, fmi2Error, "fmi2SetBoolean: no Boolean variables");
    return fmi2Error;
}

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean no_prior) {
    Stair *m = (Stair *)c;
    (void)no_prior;
    if (m->terminated) {
        say(m, fmi2Error, "fmi2DoStep: the model has terminated");
        return fmi2Error;
    }
    /* like the Reference FMU Stair (its counter reaching 10 at t = 9 s): the step that
       reaches stop_at ends there and asks to stop -- a valid state at the event, which
       fmpy records at fmi2LastSuccessfulTime */
    if (t + h >= m->stop_at - 1e-12) {
        m->time = m->stop_at > t ? m->stop_at : t;
        m->terminated = 1;
        return fmi2Discard;
    }
    m->time = t + h;
    return fmi2OK;
}

fmi2Status fmi2CancelStep(fmi2Component c) { (void)c; return fmi2Error; }

fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind k, fmi2Status *v) {
    (void)c; (void)k; (void)v;
    return fmi2Discard;
}
fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind k, fmi2Real *v) {
    if (k != fmi2LastSuccessfulTime) return fmi2Discard;
    *v = ((Stair *)c)->time;
    return fmi2OK;
}
fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind k, fmi2Integer *v) {
    (void)c; (void)k; (void)v;
    return fmi2Discard;
}
fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind k, fmi2Boolean *v) {
    if (k != fmi2Terminated) return fmi2Discard;
    *v = ((Stair *)c)->terminated ? fmi2True : fmi2False;
    return fmi2OK;
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
