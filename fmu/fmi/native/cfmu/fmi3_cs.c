/*
 * flexcosim C-source FMU: the FMI 3.0 co-simulation interface, the same for every model
 * (the model is model.c, see flexcosim_model.h).  Each call checks the host's arguments
 * and translates into the version-independent core (cfmu_core.h: the behaviour -- value
 * checks, stepping, saved states -- is described there), as fmi2_cs.c does for FMI 2.0.
 *
 * The variables are the FMI 2.0 FMU's, typed Float64, Int32 and String, with the same
 * value references; the independent variable "time" has value reference N_VARS.  Model
 * Exchange for a model whose only state is continuous (CF_MODEL_EXCHANGE): the state is
 * the array variable "state" [N_X] (N_VARS + 1), its derivative "der(state)" (N_VARS +
 * 2).  A vector signal may be one array variable (model_config.h's N_ARRAYS, value
 * references N_VARS + 3 + a), read and written as its elements, the FMI 2.0 FMU's
 * scalars, in order (ARRAY_ELEMENTS).  No event mode in co-simulation, no early return, no clocks, no Scheduled
 * Execution (those calls return fmi3Error naming themselves).  A discarded step says in
 * terminateSimulation whether the model can go on, and in lastSuccessfulTime where it is.
 * Memory: calloc/free (FMI 3.0 has no memory callbacks), only at instantiation and when a
 * state is saved.
 */
#include "fmi3Functions.h"

#define CF_HOST_FIELDS fmi3InstanceEnvironment env; fmi3LogMessageCallback log_message;
#define CF_TERMINATED_NAME "terminateSimulation"
#include "cfmu_core.h"

#define VR_TIME ((fmi3ValueReference)N_VARS)
/* Model Exchange: the continuous state as one array variable "state" [N_X] and its
   derivative "der(state)" */
#define VR_STATE ((fmi3ValueReference)(N_VARS + 1))
#define VR_DER_STATE ((fmi3ValueReference)(N_VARS + 2))
/* Vector signals as array variables: each one's elements (value references of its
   scalars) from ARRAY_FIRST[a] to ARRAY_FIRST[a + 1] in ARRAY_ELEMENTS */
#define VR_ARRAY0 ((fmi3ValueReference)(N_VARS + 3))
#ifndef N_ARRAYS
#define N_ARRAYS 0
#define ARRAY_FIRST {0}
#define ARRAY_ELEMENTS {0}
#endif
static const size_t array_first[N_ARRAYS + 1] = ARRAY_FIRST;
static const unsigned int array_elements[] = ARRAY_ELEMENTS;

static void cf_host_log(Instance *c, int status, const char *category, const char *text) {
    if (c->log_message) c->log_message(c->env, (fmi3Status)status, category, text);
}

static void *cf_host_alloc(Instance *c, size_t size) {
    (void)c;
    return calloc(1, size);
}

static void cf_host_free(Instance *c, void *p) {
    (void)c;
    free(p);
}

/* One value per value reference: Int32 and String variables are scalars here. */
static int scalars(Instance *c, size_t n_vr, size_t n_values, const char *what) {
    if (n_vr == n_values) return CF_OK;
    return fail(c, "%s: %s: %lu values for %lu value references; every variable of this type "
                "is a scalar", c->name, what, (unsigned long)n_values, (unsigned long)n_vr);
}

/* ---------------------------------------------------------------- FMI: common ------ */
const char *fmi3GetVersion(void) { return fmi3Version; }

fmi3Status fmi3SetDebugLogging(fmi3Instance instance, fmi3Boolean on, size_t n, const fmi3String cats[]) {
    Instance *c = (Instance *)instance;
    (void)n; (void)cats;
    if (!c) return fmi3Error;
    c->logging_on = on ? 1 : 0;
    return fmi3OK;
}

/* An instance for co-simulation or (model_exchange) Model Exchange, or NULL with the
   reason logged. */
static Instance *instantiate(fmi3String name, fmi3String token, fmi3String resources,
                             fmi3Boolean logging_on, int model_exchange, const char *refusal,
                             fmi3InstanceEnvironment env, fmi3LogMessageCallback log_message) {
    Instance *c;
    char why[600] = "";
#ifdef FLEXCOSIM_DATA_FROM_RESOURCES
    if (!load_model_data(resources, why, sizeof why)) {
        if (log_message) log_message(env, fmi3Error, "logStatusError", why);
        return NULL;
    }
#else
    (void)resources;
#endif
    if (!name || !name[0]) snprintf(why, sizeof why, "an instance name is required");
    else if (!token || strcmp(token, MODEL_GUID) != 0)
        snprintf(why, sizeof why, "instantiationToken does not match this FMU (%s)", MODEL_GUID);
    else if (refusal) snprintf(why, sizeof why, "%s", refusal);
    if (why[0]) {
        if (log_message) log_message(env, fmi3Error, "logStatusError", why);
        return NULL;
    }
    c = (Instance *)calloc(1, sizeof *c);
    if (!c) {
        if (log_message) log_message(env, fmi3Error, "logStatusError", "out of memory");
        return NULL;
    }
    c->env = env;
    c->log_message = log_message;
    c->model_exchange = model_exchange;
    cf_init(c, name, logging_on);
    return c;
}

fmi3Instance fmi3InstantiateCoSimulation(fmi3String name, fmi3String token, fmi3String resources,
                                         fmi3Boolean visible, fmi3Boolean logging_on,
                                         fmi3Boolean event_mode_used, fmi3Boolean early_return_allowed,
                                         const fmi3ValueReference required[], size_t n_required,
                                         fmi3InstanceEnvironment env, fmi3LogMessageCallback log_message,
                                         fmi3IntermediateUpdateCallback intermediate_update) {
    (void)visible; (void)early_return_allowed; (void)required; (void)intermediate_update;
    return instantiate(name, token, resources, logging_on, 0,
                       event_mode_used ? "this FMU has no event mode (hasEventMode is false)"
                       : n_required ? "this FMU provides no intermediate update" : NULL,
                       env, log_message);
}

fmi3Instance fmi3InstantiateModelExchange(fmi3String name, fmi3String token, fmi3String resources,
                                          fmi3Boolean visible, fmi3Boolean logging_on,
                                          fmi3InstanceEnvironment env, fmi3LogMessageCallback log_message) {
    (void)visible;
    return instantiate(name, token, resources, logging_on, 1,
                       CF_MODEL_EXCHANGE ? NULL : "this model has a discrete state or a sample "
                       "time: co-simulation only", env, log_message);
}

fmi3Instance fmi3InstantiateScheduledExecution(fmi3String name, fmi3String token, fmi3String resources,
                                               fmi3Boolean visible, fmi3Boolean logging_on,
                                               fmi3InstanceEnvironment env, fmi3LogMessageCallback log_message,
                                               fmi3ClockUpdateCallback clock_update,
                                               fmi3LockPreemptionCallback lock,
                                               fmi3UnlockPreemptionCallback unlock) {
    (void)name; (void)token; (void)resources; (void)visible; (void)logging_on;
    (void)clock_update; (void)lock; (void)unlock;
    if (log_message) log_message(env, fmi3Error, "logStatusError", "this FMU supports co-simulation only");
    return NULL;
}

void fmi3FreeInstance(fmi3Instance instance) {
    free(instance);
}

fmi3Status fmi3EnterInitializationMode(fmi3Instance instance, fmi3Boolean tol_defined, fmi3Float64 tol,
                                       fmi3Float64 start, fmi3Boolean stop_defined, fmi3Float64 stop) {
    Instance *c = (Instance *)instance;
    int status;
    (void)tol_defined; (void)tol; (void)stop_defined; (void)stop;
    if (!c) return fmi3Error;
    status = cf_setup(c, start, "fmi3EnterInitializationMode");
    if (status != CF_OK) return (fmi3Status)status;
    return (fmi3Status)cf_enter_initialization(c, "fmi3EnterInitializationMode");
}

fmi3Status fmi3ExitInitializationMode(fmi3Instance instance) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    return (fmi3Status)cf_exit_initialization(c, "fmi3ExitInitializationMode");
}

fmi3Status fmi3Terminate(fmi3Instance instance) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    c->phase = ST_TERMINATED;
    return fmi3OK;
}

fmi3Status fmi3Reset(fmi3Instance instance) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    cf_reset(c);
    return fmi3OK;
}

/* ---------------------------------------------------------------- values ----------- */
/* The array variable vr is, or -1 */
static int array_of(fmi3ValueReference vr) {
    return (vr >= VR_ARRAY0 && vr < VR_ARRAY0 + N_ARRAYS) ? (int)(vr - VR_ARRAY0) : -1;
}

/* The number of values of a Float64 variable: N_X for the state arrays, an array
   variable's size, else 1 */
static size_t values_of(fmi3ValueReference vr) {
    int a = array_of(vr);
    if (a >= 0) return array_first[a + 1] - array_first[a];
    return (N_X > 0 && (vr == VR_STATE || vr == VR_DER_STATE)) ? (size_t)N_X : 1;
}

/* The values a call's value references hold, or a logged refusal (CF_ERROR) */
static int count_values(Instance *c, const fmi3ValueReference vr[], size_t n, size_t n_values,
                        const char *what) {
    size_t k, expected = 0;
    for (k = 0; k < n; k++) expected += values_of(vr[k]);
    if (expected == n_values) return CF_OK;
    return fail(c, "%s: %s: %lu values for %lu value references that hold %lu", c->name, what,
                (unsigned long)n_values, (unsigned long)n, (unsigned long)expected);
}

fmi3Status fmi3GetFloat64(fmi3Instance instance, const fmi3ValueReference vr[], size_t n,
                          fmi3Float64 values[], size_t n_values) {
    Instance *c = (Instance *)instance;
    size_t k, j, at = 0;
    if (!c) return fmi3Error;
    if (n && (!vr || !values)) return fmi3Error;
    if (count_values(c, vr, n, n_values, "fmi3GetFloat64") != CF_OK) return fmi3Error;
    refresh_outputs(c);                 /* once per call, not per value */
    for (k = 0; k < n; k++) {
        int a = array_of(vr[k]);
        if (vr[k] == VR_TIME) {
            values[at++] = c->d.time;
        } else if (a >= 0) {
            for (j = array_first[a]; j < array_first[a + 1]; j++)
                if (cf_real_value(c, array_elements[j], &values[at++], "fmi3GetFloat64") != CF_OK)
                    return fmi3Error;
        } else if (N_X > 0 && (vr[k] == VR_STATE || vr[k] == VR_DER_STATE)) {
#if N_X > 0
            if (vr[k] == VR_STATE) memcpy(values + at, c->d.x, N_X * sizeof *values);
            else model_derivatives(&c->d, c->d.x, values + at);
#endif
            at += (size_t)N_X;
        } else if (cf_real_value(c, vr[k], &values[at++], "fmi3GetFloat64") != CF_OK) {
            return fmi3Error;
        }
    }
    return fmi3OK;
}

/* Check (apply = 0: the first refusal logged) or, once all are checked, set (apply = 1)
   the values of a fmi3SetFloat64 call, an array variable as its elements */
static int set_float64(Instance *c, const fmi3ValueReference vr[], size_t n,
                       const fmi3Float64 values[], int apply) {
    size_t k, at = 0;
    for (k = 0; k < n; k++) {
        int a = array_of(vr[k]);
        const unsigned int *elements = a >= 0 ? array_elements + array_first[a] : &vr[k];
        size_t count = values_of(vr[k]);
        if (!apply && cf_check_real(c, elements, count, values + at, "fmi3SetFloat64") != CF_OK)
            return CF_ERROR;
        if (apply) cf_assign_real(c, elements, count, values + at);
        at += count;
    }
    return CF_OK;
}

fmi3Status fmi3SetFloat64(fmi3Instance instance, const fmi3ValueReference vr[], size_t n,
                          const fmi3Float64 values[], size_t n_values) {
    Instance *c = (Instance *)instance;
    size_t k;
    if (!c) return fmi3Error;
    if (n && (!vr || !values)) return fmi3Error;
    for (k = 0; k < n; k++)
        if (vr[k] == VR_TIME || vr[k] == VR_STATE || vr[k] == VR_DER_STATE)
            return (fmi3Status)fail(c, "%s: fmi3SetFloat64: value reference %u is time or the "
                                    "state, which are not set this way", c->name, vr[k]);
    if (count_values(c, vr, n, n_values, "fmi3SetFloat64") != CF_OK) return fmi3Error;
    if (set_float64(c, vr, n, values, 0) != CF_OK) return fmi3Error;   /* all before any */
    return (fmi3Status)set_float64(c, vr, n, values, 1);
}

fmi3Status fmi3GetInt32(fmi3Instance instance, const fmi3ValueReference vr[], size_t n,
                        fmi3Int32 values[], size_t n_values) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    if (scalars(c, n, n_values, "fmi3GetInt32") != CF_OK) return fmi3Error;
    return (fmi3Status)cf_get_integer(c, vr, n, values, "fmi3GetInt32");
}

fmi3Status fmi3SetInt32(fmi3Instance instance, const fmi3ValueReference vr[], size_t n,
                        const fmi3Int32 values[], size_t n_values) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    if (scalars(c, n, n_values, "fmi3SetInt32") != CF_OK) return fmi3Error;
    return (fmi3Status)cf_set_integer(c, vr, n, values, "fmi3SetInt32");
}

fmi3Status fmi3GetString(fmi3Instance instance, const fmi3ValueReference vr[], size_t n,
                         fmi3String values[], size_t n_values) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    if (scalars(c, n, n_values, "fmi3GetString") != CF_OK) return fmi3Error;
    return (fmi3Status)cf_get_string(c, vr, n, values, "fmi3GetString");
}

fmi3Status fmi3SetString(fmi3Instance instance, const fmi3ValueReference vr[], size_t n,
                         const fmi3String values[], size_t n_values) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    if (scalars(c, n, n_values, "fmi3SetString") != CF_OK) return fmi3Error;
    return (fmi3Status)cf_set_string(c, vr, n, values, "fmi3SetString");
}

/* The types this FMU has no variable of: fine for no value references, else an error
   naming the call. */
#define NO_VARIABLES(get, set, type)                                                         \
    fmi3Status get(fmi3Instance instance, const fmi3ValueReference vr[], size_t n,           \
                   type values[], size_t n_values) {                                         \
        Instance *c = (Instance *)instance;                                                  \
        (void)values; (void)n_values;                                                        \
        if (!c) return fmi3Error;                                                            \
        return (fmi3Status)cf_no_variable(c, vr, n, #get);                                   \
    }                                                                                        \
    fmi3Status set(fmi3Instance instance, const fmi3ValueReference vr[], size_t n,           \
                   const type values[], size_t n_values) {                                   \
        Instance *c = (Instance *)instance;                                                  \
        (void)values; (void)n_values;                                                        \
        if (!c) return fmi3Error;                                                            \
        return (fmi3Status)cf_no_variable(c, vr, n, #set);                                   \
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

fmi3Status fmi3GetBinary(fmi3Instance instance, const fmi3ValueReference vr[], size_t n,
                         size_t sizes[], fmi3Binary values[], size_t n_values) {
    Instance *c = (Instance *)instance;
    (void)sizes; (void)values; (void)n_values;
    if (!c) return fmi3Error;
    return (fmi3Status)cf_no_variable(c, vr, n, "fmi3GetBinary");
}

fmi3Status fmi3SetBinary(fmi3Instance instance, const fmi3ValueReference vr[], size_t n,
                         const size_t sizes[], const fmi3Binary values[], size_t n_values) {
    Instance *c = (Instance *)instance;
    (void)sizes; (void)values; (void)n_values;
    if (!c) return fmi3Error;
    return (fmi3Status)cf_no_variable(c, vr, n, "fmi3SetBinary");
}

fmi3Status fmi3GetClock(fmi3Instance instance, const fmi3ValueReference vr[], size_t n, fmi3Clock values[]) {
    Instance *c = (Instance *)instance;
    (void)values;
    if (!c) return fmi3Error;
    return (fmi3Status)cf_no_variable(c, vr, n, "fmi3GetClock");
}

fmi3Status fmi3SetClock(fmi3Instance instance, const fmi3ValueReference vr[], size_t n, const fmi3Clock values[]) {
    Instance *c = (Instance *)instance;
    (void)values;
    if (!c) return fmi3Error;
    return (fmi3Status)cf_no_variable(c, vr, n, "fmi3SetClock");
}

/* ---------------------------------------------------------------- stepping --------- */
fmi3Status fmi3EnterStepMode(fmi3Instance instance) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    if (c->phase != ST_STEPPING)
        return (fmi3Status)fail(c, "%s: fmi3EnterStepMode before initialization or after an error", c->name);
    return fmi3OK;
}

fmi3Status fmi3DoStep(fmi3Instance instance, fmi3Float64 t, fmi3Float64 h, fmi3Boolean no_prior,
                      fmi3Boolean *event_handling_needed, fmi3Boolean *terminate_simulation,
                      fmi3Boolean *early_return, fmi3Float64 *last_successful_time) {
    Instance *c = (Instance *)instance;
    int status;
    (void)no_prior;
    if (!c) return fmi3Error;
    if (!event_handling_needed || !terminate_simulation || !early_return || !last_successful_time)
        return (fmi3Status)fail(c, "%s: fmi3DoStep: an output argument is NULL", c->name);
    status = cf_do_step(c, t, h, "fmi3DoStep");
    *event_handling_needed = fmi3False;
    *early_return = fmi3False;
    *terminate_simulation = (status == CF_DISCARD && c->terminated) ? fmi3True : fmi3False;
    *last_successful_time = c->d.time;
    return (fmi3Status)status;
}

/* What this FMU does not provide: an error naming the call. */
static fmi3Status not_provided(fmi3Instance instance, const char *what) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    return (fmi3Status)fail(c, "%s: %s is not provided by this FMU", c->name, what);
}

fmi3Status fmi3EnterConfigurationMode(fmi3Instance i) { return not_provided(i, "fmi3EnterConfigurationMode (no structural parameters)"); }
fmi3Status fmi3ExitConfigurationMode(fmi3Instance i) { return not_provided(i, "fmi3ExitConfigurationMode (no structural parameters)"); }
fmi3Status fmi3EvaluateDiscreteStates(fmi3Instance i) { return not_provided(i, "fmi3EvaluateDiscreteStates (no event mode)"); }

fmi3Status fmi3GetNumberOfVariableDependencies(fmi3Instance i, fmi3ValueReference vr, size_t *n) {
    (void)vr; (void)n;
    return not_provided(i, "fmi3GetNumberOfVariableDependencies (the model description has them)");
}

fmi3Status fmi3GetVariableDependencies(fmi3Instance i, fmi3ValueReference dependent, size_t e_dep[],
                                       fmi3ValueReference independents[], size_t e_ind[],
                                       fmi3DependencyKind kinds[], size_t n) {
    (void)dependent; (void)e_dep; (void)independents; (void)e_ind; (void)kinds; (void)n;
    return not_provided(i, "fmi3GetVariableDependencies (the model description has them)");
}

fmi3Status fmi3GetDirectionalDerivative(fmi3Instance i, const fmi3ValueReference u[], size_t nu,
                                        const fmi3ValueReference k[], size_t nk, const fmi3Float64 seed[],
                                        size_t ns, fmi3Float64 s[], size_t nsens) {
    (void)u; (void)nu; (void)k; (void)nk; (void)seed; (void)ns; (void)s; (void)nsens;
    return not_provided(i, "fmi3GetDirectionalDerivative");
}

fmi3Status fmi3GetAdjointDerivative(fmi3Instance i, const fmi3ValueReference u[], size_t nu,
                                    const fmi3ValueReference k[], size_t nk, const fmi3Float64 seed[],
                                    size_t ns, fmi3Float64 s[], size_t nsens) {
    (void)u; (void)nu; (void)k; (void)nk; (void)seed; (void)ns; (void)s; (void)nsens;
    return not_provided(i, "fmi3GetAdjointDerivative");
}

fmi3Status fmi3GetIntervalDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t n,
                                  fmi3Float64 intervals[], fmi3IntervalQualifier q[]) {
    (void)vr; (void)n; (void)intervals; (void)q;
    return not_provided(i, "fmi3GetIntervalDecimal (no clocks)");
}

fmi3Status fmi3GetIntervalFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t n,
                                   fmi3UInt64 counters[], fmi3UInt64 resolutions[], fmi3IntervalQualifier q[]) {
    (void)vr; (void)n; (void)counters; (void)resolutions; (void)q;
    return not_provided(i, "fmi3GetIntervalFraction (no clocks)");
}

fmi3Status fmi3GetShiftDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Float64 shifts[]) {
    (void)vr; (void)n; (void)shifts;
    return not_provided(i, "fmi3GetShiftDecimal (no clocks)");
}

fmi3Status fmi3GetShiftFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t n,
                                fmi3UInt64 counters[], fmi3UInt64 resolutions[]) {
    (void)vr; (void)n; (void)counters; (void)resolutions;
    return not_provided(i, "fmi3GetShiftFraction (no clocks)");
}

fmi3Status fmi3SetIntervalDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t n,
                                  const fmi3Float64 intervals[]) {
    (void)vr; (void)n; (void)intervals;
    return not_provided(i, "fmi3SetIntervalDecimal (no clocks)");
}

fmi3Status fmi3SetIntervalFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t n,
                                   const fmi3UInt64 counters[], const fmi3UInt64 resolutions[]) {
    (void)vr; (void)n; (void)counters; (void)resolutions;
    return not_provided(i, "fmi3SetIntervalFraction (no clocks)");
}

fmi3Status fmi3SetShiftDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t n,
                               const fmi3Float64 shifts[]) {
    (void)vr; (void)n; (void)shifts;
    return not_provided(i, "fmi3SetShiftDecimal (no clocks)");
}

fmi3Status fmi3SetShiftFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t n,
                                const fmi3UInt64 counters[], const fmi3UInt64 resolutions[]) {
    (void)vr; (void)n; (void)counters; (void)resolutions;
    return not_provided(i, "fmi3SetShiftFraction (no clocks)");
}

fmi3Status fmi3GetOutputDerivatives(fmi3Instance i, const fmi3ValueReference vr[], size_t n,
                                    const fmi3Int32 orders[], fmi3Float64 values[], size_t n_values) {
    (void)vr; (void)n; (void)orders; (void)values; (void)n_values;
    return not_provided(i, "fmi3GetOutputDerivatives (maxOutputDerivativeOrder is 0)");
}

fmi3Status fmi3ActivateModelPartition(fmi3Instance i, fmi3ValueReference clock, fmi3Float64 t) {
    (void)clock; (void)t;
    return not_provided(i, "fmi3ActivateModelPartition (Scheduled Execution)");
}

/* ---------------------------------------------------------------- Model Exchange --- */
fmi3Status fmi3EnterEventMode(fmi3Instance instance) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    return (fmi3Status)cf_me_call(c, "fmi3EnterEventMode");
}

fmi3Status fmi3UpdateDiscreteStates(fmi3Instance instance, fmi3Boolean *need_update, fmi3Boolean *terminate,
                                    fmi3Boolean *nominals_changed, fmi3Boolean *values_changed,
                                    fmi3Boolean *next_defined, fmi3Float64 *next_time) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    if (cf_me_call(c, "fmi3UpdateDiscreteStates") != CF_OK) return fmi3Error;
    if (!need_update || !terminate || !nominals_changed || !values_changed || !next_defined || !next_time)
        return (fmi3Status)fail(c, "%s: fmi3UpdateDiscreteStates: an output argument is NULL", c->name);
    *need_update = *terminate = *nominals_changed = *values_changed = *next_defined = fmi3False;
    *next_time = 0.0;                  /* no discrete state, no time event */
    return fmi3OK;
}

fmi3Status fmi3EnterContinuousTimeMode(fmi3Instance instance) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    return (fmi3Status)cf_me_call(c, "fmi3EnterContinuousTimeMode");
}

fmi3Status fmi3CompletedIntegratorStep(fmi3Instance instance, fmi3Boolean no_prior,
                                       fmi3Boolean *enter_event, fmi3Boolean *terminate) {
    Instance *c = (Instance *)instance;
    int status, stop = 0;
    (void)no_prior;
    if (!c) return fmi3Error;
    if (!enter_event || !terminate)
        return (fmi3Status)fail(c, "%s: fmi3CompletedIntegratorStep: an output argument is NULL", c->name);
    status = cf_me_completed_step(c, &stop, "fmi3CompletedIntegratorStep");
    *enter_event = fmi3False;
    *terminate = stop ? fmi3True : fmi3False;
    return (fmi3Status)status;
}

fmi3Status fmi3SetTime(fmi3Instance instance, fmi3Float64 time) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    return (fmi3Status)cf_me_set_time(c, time, "fmi3SetTime");
}

fmi3Status fmi3SetContinuousStates(fmi3Instance instance, const fmi3Float64 x[], size_t n) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    return (fmi3Status)cf_me_set_states(c, x, n, "fmi3SetContinuousStates");
}

fmi3Status fmi3GetContinuousStates(fmi3Instance instance, fmi3Float64 x[], size_t n) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    return (fmi3Status)cf_me_get_states(c, x, n, "fmi3GetContinuousStates");
}

fmi3Status fmi3GetContinuousStateDerivatives(fmi3Instance instance, fmi3Float64 dx[], size_t n) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    return (fmi3Status)cf_me_derivatives(c, dx, n, "fmi3GetContinuousStateDerivatives");
}

fmi3Status fmi3GetNominalsOfContinuousStates(fmi3Instance instance, fmi3Float64 nominals[], size_t n) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    return (fmi3Status)cf_me_nominals(c, nominals, n, "fmi3GetNominalsOfContinuousStates");
}

fmi3Status fmi3GetEventIndicators(fmi3Instance instance, fmi3Float64 z[], size_t n) {
    Instance *c = (Instance *)instance;
    (void)z;
    if (!c) return fmi3Error;
    if (n == 0) return fmi3OK;
    return (fmi3Status)fail(c, "%s: fmi3GetEventIndicators: the model has no event indicators "
                            "(%lu asked for)", c->name, (unsigned long)n);
}

fmi3Status fmi3GetNumberOfEventIndicators(fmi3Instance instance, size_t *n) {
    if (!instance || !n) return fmi3Error;
    *n = 0;
    return fmi3OK;
}

fmi3Status fmi3GetNumberOfContinuousStates(fmi3Instance instance, size_t *n) {
    if (!instance || !n) return fmi3Error;
    *n = (size_t)N_X;
    return fmi3OK;
}

/* ---------------------------------------------------------------- FMU state -------- */
fmi3Status fmi3GetFMUState(fmi3Instance instance, fmi3FMUState *state) {
    Instance *c = (Instance *)instance;
    if (!c || !state) return fmi3Error;
    return (fmi3Status)cf_get_state(c, state, "fmi3GetFMUState");
}

fmi3Status fmi3SetFMUState(fmi3Instance instance, fmi3FMUState state) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    return (fmi3Status)cf_set_state(c, state, "fmi3SetFMUState");
}

fmi3Status fmi3FreeFMUState(fmi3Instance instance, fmi3FMUState *state) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    return (fmi3Status)cf_free_state(c, state);
}

fmi3Status fmi3SerializedFMUStateSize(fmi3Instance instance, fmi3FMUState state, size_t *size) {
    Instance *c = (Instance *)instance;
    (void)state;
    if (!c || !size) return fmi3Error;
    *size = SERIAL_SIZE;
    return fmi3OK;
}

fmi3Status fmi3SerializeFMUState(fmi3Instance instance, fmi3FMUState state, fmi3Byte bytes[], size_t size) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    return (fmi3Status)cf_serialize(c, state, bytes, size, "fmi3SerializeFMUState");
}

fmi3Status fmi3DeserializeFMUState(fmi3Instance instance, const fmi3Byte bytes[], size_t size,
                                   fmi3FMUState *state) {
    Instance *c = (Instance *)instance;
    if (!c) return fmi3Error;
    return (fmi3Status)cf_deserialize(c, bytes, size, state, "fmi3DeserializeFMUState");
}
