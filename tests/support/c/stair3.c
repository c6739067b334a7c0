/* Stair, FMI 3.0: the FMI 3.0 co-simulation twin of stair.c (the same variables and
 * behaviour, written for this test suite), for the master's FMI 3.0 path:
 *
 *   counter  Int32 output (vr 0): the number of whole seconds elapsed plus one;
 *   label    String input (vr 1, start "ab"): not connectable, but a dependency of y;
 *   u        Float64 input (vr 2);
 *   y        Float64 output (vr 3), y = u + strlen(label);
 *   stop_at  Float64 parameter (vr 4): the fmi3DoStep that reaches it completes and sets
 *            terminateSimulation, lastSuccessfulTime = stop_at (a completed step: the
 *            host records it);
 *   time     the independent variable (vr 5).
 *
 * Its state can be saved, restored and serialized (a plain copy of the model's values,
 * checked by its size and a tag).  Everything else returns fmi3Error naming itself. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi3Functions.h"

#ifndef MODEL_GUID
#define MODEL_GUID "{9a4f1d2e-3b6c-4e8f-a1d7-2c5e8b0f6a13}"
#endif

enum { VR_COUNTER = 0, VR_LABEL = 1, VR_U = 2, VR_Y = 3, VR_STOP_AT = 4, VR_TIME = 5 };

typedef struct {
    double tag, time, u, stop_at;
    int terminated;
    char label[256];
} Values;

typedef struct {
    fmi3InstanceEnvironment env;
    fmi3LogMessageCallback log;
    char name[128];
    Values v;
} Stair;

static const double STATE_TAG = 20261128.0;

static fmi3Status say(fmi3Instance instance, fmi3Status status, const char *text) {
    Stair *m = (Stair *)instance;
    if (m && m->log) m->log(m->env, status, "logStatusError", text);
    return status;
}

static fmi3Status not_provided(fmi3Instance instance, const char *what) {
    char text[160];
    snprintf(text, sizeof text, "%s is not provided by this FMU", what);
    return say(instance, fmi3Error, text);
}

static fmi3Status scalars(fmi3Instance instance, size_t n, size_t n_values) {
    return n == n_values ? fmi3OK : say(instance, fmi3Error, "every variable is a scalar");
}

const char *fmi3GetVersion(void) { return fmi3Version; }

fmi3Status fmi3SetDebugLogging(fmi3Instance instance, fmi3Boolean on, size_t n, const fmi3String cats[]) {
    (void)instance; (void)on; (void)n; (void)cats;
    return fmi3OK;
}

fmi3Instance fmi3InstantiateCoSimulation(fmi3String name, fmi3String token, fmi3String resources,
                                         fmi3Boolean visible, fmi3Boolean logging_on,
                                         fmi3Boolean event_mode_used, fmi3Boolean early_return_allowed,
                                         const fmi3ValueReference required[], size_t n_required,
                                         fmi3InstanceEnvironment env, fmi3LogMessageCallback log_message,
                                         fmi3IntermediateUpdateCallback intermediate_update) {
    Stair *m;
    (void)resources; (void)visible; (void)logging_on; (void)early_return_allowed; (void)required;
    (void)intermediate_update;
    if (!token || strcmp(token, MODEL_GUID) != 0 || event_mode_used || n_required) return NULL;
    m = (Stair *)calloc(1, sizeof *m);
    if (!m) return NULL;
    m->env = env;
    m->log = log_message;
    snprintf(m->name, sizeof m->name, "%s", name ? name : "");
    m->v.tag = STATE_TAG;
    m->v.stop_at = 1e300;
    strcpy(m->v.label, "ab");
    return m;
}

void fmi3FreeInstance(fmi3Instance instance) { free(instance); }

fmi3Status fmi3EnterInitializationMode(fmi3Instance instance, fmi3Boolean tol_defined, fmi3Float64 tol,
                                       fmi3Float64 start, fmi3Boolean stop_defined, fmi3Float64 stop) {
    (void)tol_defined; (void)tol; (void)stop_defined; (void)stop;
    ((Stair *)instance)->v.time = start;
    return fmi3OK;
}

fmi3Status fmi3ExitInitializationMode(fmi3Instance instance) { (void)instance; return fmi3OK; }
fmi3Status fmi3Terminate(fmi3Instance instance) { (void)instance; return fmi3OK; }
fmi3Status fmi3Reset(fmi3Instance instance) { return not_provided(instance, "fmi3Reset"); }

fmi3Status fmi3GetFloat64(fmi3Instance instance, const fmi3ValueReference vr[], size_t n,
                          fmi3Float64 values[], size_t n_values) {
    Stair *m = (Stair *)instance;
    size_t i;
    if (scalars(instance, n, n_values) != fmi3OK) return fmi3Error;
    for (i = 0; i < n; i++) {
        switch (vr[i]) {
            case VR_U: values[i] = m->v.u; break;
            case VR_Y: values[i] = m->v.u + (double)strlen(m->v.label); break;
            case VR_STOP_AT: values[i] = m->v.stop_at; break;
            case VR_TIME: values[i] = m->v.time; break;
            default: return say(instance, fmi3Error, "fmi3GetFloat64: unknown value reference");
        }
    }
    return fmi3OK;
}

fmi3Status fmi3SetFloat64(fmi3Instance instance, const fmi3ValueReference vr[], size_t n,
                          const fmi3Float64 values[], size_t n_values) {
    Stair *m = (Stair *)instance;
    size_t i;
    if (scalars(instance, n, n_values) != fmi3OK) return fmi3Error;
    for (i = 0; i < n; i++) {
        if (vr[i] == VR_U) m->v.u = values[i];
        else if (vr[i] == VR_STOP_AT) m->v.stop_at = values[i];
        else return say(instance, fmi3Error, "fmi3SetFloat64: not settable");
    }
    return fmi3OK;
}

fmi3Status fmi3GetInt32(fmi3Instance instance, const fmi3ValueReference vr[], size_t n,
                        fmi3Int32 values[], size_t n_values) {
    Stair *m = (Stair *)instance;
    size_t i;
    if (scalars(instance, n, n_values) != fmi3OK) return fmi3Error;
    for (i = 0; i < n; i++) {
        if (vr[i] != VR_COUNTER) return say(instance, fmi3Error, "fmi3GetInt32: unknown value reference");
        values[i] = (fmi3Int32)floor(m->v.time + 1e-9) + 1;
    }
    return fmi3OK;
}

fmi3Status fmi3SetInt32(fmi3Instance instance, const fmi3ValueReference vr[], size_t n,
                        const fmi3Int32 values[], size_t n_values) {
    (void)vr; (void)values; (void)n_values;
    return n ? say(instance, fmi3Error, "fmi3SetInt32: no settable Int32") : fmi3OK;
}

fmi3Status fmi3GetString(fmi3Instance instance, const fmi3ValueReference vr[], size_t n,
                         fmi3String values[], size_t n_values) {
    Stair *m = (Stair *)instance;
    size_t i;
    if (scalars(instance, n, n_values) != fmi3OK) return fmi3Error;
    for (i = 0; i < n; i++) {
        if (vr[i] != VR_LABEL) return say(instance, fmi3Error, "fmi3GetString: unknown value reference");
        values[i] = m->v.label;
    }
    return fmi3OK;
}

fmi3Status fmi3SetString(fmi3Instance instance, const fmi3ValueReference vr[], size_t n,
                         const fmi3String values[], size_t n_values) {
    Stair *m = (Stair *)instance;
    size_t i;
    if (scalars(instance, n, n_values) != fmi3OK) return fmi3Error;
    for (i = 0; i < n; i++) {
        if (vr[i] != VR_LABEL || !values[i]) return say(instance, fmi3Error, "fmi3SetString: not settable");
        snprintf(m->v.label, sizeof m->v.label, "%s", values[i]);
    }
    return fmi3OK;
}

#define NO_VARIABLES(get, set, type)                                                         \
    fmi3Status get(fmi3Instance instance, const fmi3ValueReference vr[], size_t n,           \
                   type values[], size_t n_values) {                                         \
        (void)vr; (void)values; (void)n_values;                                              \
        return n ? not_provided(instance, #get) : fmi3OK;                                    \
    }                                                                                        \
    fmi3Status set(fmi3Instance instance, const fmi3ValueReference vr[], size_t n,           \
                   const type values[], size_t n_values) {                                   \
        (void)vr; (void)values; (void)n_values;                                              \
        return n ? not_provided(instance, #set) : fmi3OK;                                    \
    }
NO_VARIABLES(fmi3GetFloat32, fmi3SetFloat32, fmi3Float32)
NO_VARIABLES(fmi3GetInt8, fmi3SetInt8, fmi3Int8)
NO_VARIABLES(fmi3GetUInt8, fmi3SetUInt8, fmi3UInt8)
NO_VARIABLES(fmi3GetInt16, fmi3SetInt16, fmi3Int16)
NO_VARIABLES(fmi3GetUInt16, fmi3SetUInt16, fmi3UInt16)
NO_VARIABLES(fmi3GetUInt32, fmi3SetUInt32, fmi3UInt32)
NO_VARIABLES(fmi3GetInt64, fmi3SetInt64, fmi3Int64)
NO_VARIABLES(fmi3GetUInt64, fmi3SetUInt64, fmi3UInt64)
NO_VARIABLES(fmi3GetBoolean, fmi3SetBoolean, fmi3Boolean)
#undef NO_VARIABLES

fmi3Status fmi3DoStep(fmi3Instance instance, fmi3Float64 t, fmi3Float64 h, fmi3Boolean no_prior,
                      fmi3Boolean *event_handling_needed, fmi3Boolean *terminate_simulation,
                      fmi3Boolean *early_return, fmi3Float64 *last_successful_time) {
    Stair *m = (Stair *)instance;
    (void)no_prior;
    *event_handling_needed = *early_return = fmi3False;
    *terminate_simulation = fmi3False;
    if (m->v.terminated) return say(instance, fmi3Error, "fmi3DoStep: the model has terminated");
    /* the step that reaches stop_at completes there and asks to end the simulation */
    if (t + h >= m->v.stop_at - 1e-12) {
        m->v.time = m->v.stop_at > t ? m->v.stop_at : t;
        m->v.terminated = 1;
        *terminate_simulation = fmi3True;
    } else {
        m->v.time = t + h;
    }
    *last_successful_time = m->v.time;
    return fmi3OK;
}

/* ---- the state: a copy of the model's values ---- */
fmi3Status fmi3GetFMUState(fmi3Instance instance, fmi3FMUState *state) {
    Values *saved = *state ? (Values *)*state : (Values *)malloc(sizeof *saved);
    if (!saved) return say(instance, fmi3Error, "fmi3GetFMUState: out of memory");
    *saved = ((Stair *)instance)->v;
    *state = saved;
    return fmi3OK;
}

fmi3Status fmi3SetFMUState(fmi3Instance instance, fmi3FMUState state) {
    if (!state) return say(instance, fmi3Error, "fmi3SetFMUState: no state");
    ((Stair *)instance)->v = *(const Values *)state;
    return fmi3OK;
}

fmi3Status fmi3FreeFMUState(fmi3Instance instance, fmi3FMUState *state) {
    (void)instance;
    if (state) { free(*state); *state = NULL; }
    return fmi3OK;
}

fmi3Status fmi3SerializedFMUStateSize(fmi3Instance instance, fmi3FMUState state, size_t *size) {
    (void)instance; (void)state;
    *size = sizeof(Values);
    return fmi3OK;
}

fmi3Status fmi3SerializeFMUState(fmi3Instance instance, fmi3FMUState state, fmi3Byte bytes[], size_t size) {
    if (size != sizeof(Values)) return say(instance, fmi3Error, "fmi3SerializeFMUState: wrong size");
    memcpy(bytes, state, size);
    return fmi3OK;
}

fmi3Status fmi3DeserializeFMUState(fmi3Instance instance, const fmi3Byte bytes[], size_t size,
                                   fmi3FMUState *state) {
    Values *v;
    if (size != sizeof(Values)) return say(instance, fmi3Error, "fmi3DeserializeFMUState: wrong size");
    v = (Values *)malloc(sizeof *v);
    if (!v) return say(instance, fmi3Error, "fmi3DeserializeFMUState: out of memory");
    memcpy(v, bytes, size);
    if (v->tag != STATE_TAG || v->label[sizeof v->label - 1] != '\0') {
        free(v);
        return say(instance, fmi3Error, "fmi3DeserializeFMUState: not a state of this FMU");
    }
    *state = v;
    return fmi3OK;
}

/* ---- not provided ---- */
fmi3Instance fmi3InstantiateModelExchange(fmi3String name, fmi3String token, fmi3String resources, fmi3Boolean visible, fmi3Boolean logging_on, fmi3InstanceEnvironment env, fmi3LogMessageCallback log_message) {
    (void)name; (void)token; (void)resources; (void)visible; (void)logging_on; (void)env; (void)log_message; return NULL;
}
fmi3Instance fmi3InstantiateScheduledExecution(fmi3String name, fmi3String token, fmi3String resources, fmi3Boolean visible, fmi3Boolean logging_on, fmi3InstanceEnvironment env, fmi3LogMessageCallback log_message, fmi3ClockUpdateCallback clock_update, fmi3LockPreemptionCallback lock, fmi3UnlockPreemptionCallback unlock) {
    (void)name; (void)token; (void)resources; (void)visible; (void)logging_on; (void)env; (void)log_message; (void)clock_update; (void)lock; (void)unlock; return NULL;
}
fmi3Status fmi3GetBinary(fmi3Instance instance, const fmi3ValueReference vr[], size_t n, size_t sizes[], fmi3Binary values[], size_t n_values) {
    (void)vr; (void)n; (void)sizes; (void)values; (void)n_values; return not_provided(instance, "fmi3GetBinary");
}
fmi3Status fmi3SetBinary(fmi3Instance instance, const fmi3ValueReference vr[], size_t n, const size_t sizes[], const fmi3Binary values[], size_t n_values) {
    (void)vr; (void)n; (void)sizes; (void)values; (void)n_values; return not_provided(instance, "fmi3SetBinary");
}
fmi3Status fmi3GetClock(fmi3Instance instance, const fmi3ValueReference vr[], size_t n, fmi3Clock values[]) {
    (void)vr; (void)n; (void)values; return not_provided(instance, "fmi3GetClock");
}
fmi3Status fmi3SetClock(fmi3Instance instance, const fmi3ValueReference vr[], size_t n, const fmi3Clock values[]) {
    (void)vr; (void)n; (void)values; return not_provided(instance, "fmi3SetClock");
}
fmi3Status fmi3EnterStepMode(fmi3Instance instance) {
     return not_provided(instance, "fmi3EnterStepMode");
}
fmi3Status fmi3EnterConfigurationMode(fmi3Instance i) {
     return not_provided(i, "fmi3EnterConfigurationMode");
}
fmi3Status fmi3ExitConfigurationMode(fmi3Instance i) {
     return not_provided(i, "fmi3ExitConfigurationMode");
}
fmi3Status fmi3EvaluateDiscreteStates(fmi3Instance i) {
     return not_provided(i, "fmi3EvaluateDiscreteStates");
}
fmi3Status fmi3GetNumberOfVariableDependencies(fmi3Instance i, fmi3ValueReference vr, size_t *n) {
    (void)vr; (void)n; return not_provided(i, "fmi3GetNumberOfVariableDependencies");
}
fmi3Status fmi3GetVariableDependencies(fmi3Instance i, fmi3ValueReference dependent, size_t e_dep[], fmi3ValueReference independents[], size_t e_ind[], fmi3DependencyKind kinds[], size_t n) {
    (void)dependent; (void)e_dep; (void)independents; (void)e_ind; (void)kinds; (void)n; return not_provided(i, "fmi3GetVariableDependencies");
}
fmi3Status fmi3GetDirectionalDerivative(fmi3Instance i, const fmi3ValueReference u[], size_t nu, const fmi3ValueReference k[], size_t nk, const fmi3Float64 seed[], size_t ns, fmi3Float64 s[], size_t nsens) {
    (void)u; (void)nu; (void)k; (void)nk; (void)seed; (void)ns; (void)s; (void)nsens; return not_provided(i, "fmi3GetDirectionalDerivative");
}
fmi3Status fmi3GetAdjointDerivative(fmi3Instance i, const fmi3ValueReference u[], size_t nu, const fmi3ValueReference k[], size_t nk, const fmi3Float64 seed[], size_t ns, fmi3Float64 s[], size_t nsens) {
    (void)u; (void)nu; (void)k; (void)nk; (void)seed; (void)ns; (void)s; (void)nsens; return not_provided(i, "fmi3GetAdjointDerivative");
}
fmi3Status fmi3GetIntervalDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Float64 intervals[], fmi3IntervalQualifier q[]) {
    (void)vr; (void)n; (void)intervals; (void)q; return not_provided(i, "fmi3GetIntervalDecimal");
}
fmi3Status fmi3GetIntervalFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3UInt64 counters[], fmi3UInt64 resolutions[], fmi3IntervalQualifier q[]) {
    (void)vr; (void)n; (void)counters; (void)resolutions; (void)q; return not_provided(i, "fmi3GetIntervalFraction");
}
fmi3Status fmi3GetShiftDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Float64 shifts[]) {
    (void)vr; (void)n; (void)shifts; return not_provided(i, "fmi3GetShiftDecimal");
}
fmi3Status fmi3GetShiftFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3UInt64 counters[], fmi3UInt64 resolutions[]) {
    (void)vr; (void)n; (void)counters; (void)resolutions; return not_provided(i, "fmi3GetShiftFraction");
}
fmi3Status fmi3SetIntervalDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Float64 intervals[]) {
    (void)vr; (void)n; (void)intervals; return not_provided(i, "fmi3SetIntervalDecimal");
}
fmi3Status fmi3SetIntervalFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3UInt64 counters[], const fmi3UInt64 resolutions[]) {
    (void)vr; (void)n; (void)counters; (void)resolutions; return not_provided(i, "fmi3SetIntervalFraction");
}
fmi3Status fmi3SetShiftDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Float64 shifts[]) {
    (void)vr; (void)n; (void)shifts; return not_provided(i, "fmi3SetShiftDecimal");
}
fmi3Status fmi3SetShiftFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3UInt64 counters[], const fmi3UInt64 resolutions[]) {
    (void)vr; (void)n; (void)counters; (void)resolutions; return not_provided(i, "fmi3SetShiftFraction");
}
fmi3Status fmi3GetOutputDerivatives(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Int32 orders[], fmi3Float64 values[], size_t n_values) {
    (void)vr; (void)n; (void)orders; (void)values; (void)n_values; return not_provided(i, "fmi3GetOutputDerivatives");
}
fmi3Status fmi3ActivateModelPartition(fmi3Instance i, fmi3ValueReference clock, fmi3Float64 t) {
    (void)clock; (void)t; return not_provided(i, "fmi3ActivateModelPartition");
}
fmi3Status fmi3EnterEventMode(fmi3Instance instance) {
     return not_provided(instance, "fmi3EnterEventMode");
}
fmi3Status fmi3UpdateDiscreteStates(fmi3Instance instance, fmi3Boolean *need_update, fmi3Boolean *terminate, fmi3Boolean *nominals_changed, fmi3Boolean *values_changed, fmi3Boolean *next_defined, fmi3Float64 *next_time) {
    (void)need_update; (void)terminate; (void)nominals_changed; (void)values_changed; (void)next_defined; (void)next_time; return not_provided(instance, "fmi3UpdateDiscreteStates");
}
fmi3Status fmi3EnterContinuousTimeMode(fmi3Instance instance) {
     return not_provided(instance, "fmi3EnterContinuousTimeMode");
}
fmi3Status fmi3CompletedIntegratorStep(fmi3Instance instance, fmi3Boolean no_prior, fmi3Boolean *enter_event, fmi3Boolean *terminate) {
    (void)no_prior; (void)enter_event; (void)terminate; return not_provided(instance, "fmi3CompletedIntegratorStep");
}
fmi3Status fmi3SetTime(fmi3Instance instance, fmi3Float64 time) {
    (void)time; return not_provided(instance, "fmi3SetTime");
}
fmi3Status fmi3SetContinuousStates(fmi3Instance instance, const fmi3Float64 x[], size_t n) {
    (void)x; (void)n; return not_provided(instance, "fmi3SetContinuousStates");
}
fmi3Status fmi3GetContinuousStates(fmi3Instance instance, fmi3Float64 x[], size_t n) {
    (void)x; (void)n; return not_provided(instance, "fmi3GetContinuousStates");
}
fmi3Status fmi3GetContinuousStateDerivatives(fmi3Instance instance, fmi3Float64 dx[], size_t n) {
    (void)dx; (void)n; return not_provided(instance, "fmi3GetContinuousStateDerivatives");
}
fmi3Status fmi3GetNominalsOfContinuousStates(fmi3Instance instance, fmi3Float64 nominals[], size_t n) {
    (void)nominals; (void)n; return not_provided(instance, "fmi3GetNominalsOfContinuousStates");
}
fmi3Status fmi3GetEventIndicators(fmi3Instance instance, fmi3Float64 z[], size_t n) {
    (void)z; (void)n; return not_provided(instance, "fmi3GetEventIndicators");
}
fmi3Status fmi3GetNumberOfEventIndicators(fmi3Instance instance, size_t *n) {
    (void)n; return not_provided(instance, "fmi3GetNumberOfEventIndicators");
}
fmi3Status fmi3GetNumberOfContinuousStates(fmi3Instance instance, size_t *n) {
    (void)n; return not_provided(instance, "fmi3GetNumberOfContinuousStates");
}
