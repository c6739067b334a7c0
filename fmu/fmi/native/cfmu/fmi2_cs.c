/*
 * flexcosim C-source FMU: the FMI 2.0 interface, the same for every model (the model is
 * model.c, see flexcosim_model.h) -- co-simulation, and Model Exchange for a model whose
 * only state is continuous (no discrete state, no sample time: CF_MODEL_EXCHANGE), the
 * host's solver integrating the model's derivatives.  Each call checks the host's
 * arguments and translates into the version-independent core (cfmu_core.h: the
 * behaviour of the FMU -- value checks, stepping, saved states -- is described there).
 * Memory is taken only in fmi2Instantiate and fmi2GetFMUstate, through the host's
 * callbacks.
 *
 * After a Discard, fmi2GetBooleanStatus(fmi2Terminated) says whether the model can go on
 * (fmi2False: a retry with a smaller step may succeed; fmi2True: the model is at its
 * hard limit, or the host retried the very step just discarded) and
 * fmi2GetRealStatus(fmi2LastSuccessfulTime) where it is.  Messages with status fmi2Error
 * reach the logger whatever loggingOn says.
 *
 * Model Exchange: the continuous states are Real variables with value references
 * N_VARS .. N_VARS + N_X - 1, their derivatives N_VARS + N_X .. N_VARS + 2 N_X - 1
 * (declared in the model description of an export with kind "me"); no event indicators;
 * fmi2CompletedIntegratorStep asks the host to terminate when the state has left the
 * model's hard limit (model_validity) and warns once when it leaves its accurate range.
 */
#include "fmi2Functions.h"

#define CF_HOST_FIELDS fmi2CallbackFunctions cb;
#define CF_TERMINATED_NAME "fmi2Terminated"
#include "cfmu_core.h"

#define VR_STATES ((fmi2ValueReference)N_VARS)
#define VR_DERIVATIVES ((fmi2ValueReference)(N_VARS + N_X))

/* The FMI 2.0 logger takes a printf format, and '#' starts a variable reference in its
   messages: both are escaped. */
static void cf_host_log(Instance *c, int status, const char *category, const char *text) {
    char escaped[2100];
    size_t k = 0;
    const char *p;
    if (!c->cb.logger) return;
    for (p = text; *p && k + 2 < sizeof escaped; p++) {
        if (*p == '%' || *p == '#') escaped[k++] = *p;
        escaped[k++] = *p;
    }
    escaped[k] = '\0';
    c->cb.logger(c->cb.componentEnvironment, c->name, (fmi2Status)status, category, escaped);
}

static void *cf_host_alloc(Instance *c, size_t size) {
    return c->cb.allocateMemory ? c->cb.allocateMemory(1, size) : calloc(1, size);
}

static void cf_host_free(Instance *c, void *p) {
    if (c->cb.freeMemory) c->cb.freeMemory(p);
    else free(p);
}

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
    if (!name || !name[0] || !(type == fmi2CoSimulation || (CF_MODEL_EXCHANGE && type == fmi2ModelExchange))
        || !guid || strcmp(guid, MODEL_GUID) != 0) {
        if (type != fmi2CoSimulation && type != fmi2ModelExchange)
            snprintf(why, sizeof why, "unknown fmi2Type %d", (int)type);
        else if (type != fmi2CoSimulation)
            snprintf(why, sizeof why, "this model has a discrete state or a sample time: "
                     "co-simulation only");
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
    c->model_exchange = type == fmi2ModelExchange;
    cf_init(c, name, logging_on);
    return c;
}

void fmi2FreeInstance(fmi2Component comp) {
    Instance *c = (Instance *)comp;
    if (!c) return;
    cf_host_free(c, c);
}

fmi2Status fmi2SetupExperiment(fmi2Component comp, fmi2Boolean tol_defined, fmi2Real tol,
                               fmi2Real start, fmi2Boolean stop_defined, fmi2Real stop) {
    Instance *c = (Instance *)comp;
    (void)tol_defined; (void)tol; (void)stop_defined; (void)stop;
    if (!c) return fmi2Error;
    return (fmi2Status)cf_setup(c, start, "fmi2SetupExperiment");
}

fmi2Status fmi2EnterInitializationMode(fmi2Component comp) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return (fmi2Status)cf_enter_initialization(c, "fmi2EnterInitializationMode");
}

fmi2Status fmi2ExitInitializationMode(fmi2Component comp) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return (fmi2Status)cf_exit_initialization(c, "fmi2ExitInitializationMode");
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
    cf_reset(c);
    return fmi2OK;
}

/* ---------------------------------------------------------------- values ----------- */
static int state_or_derivative(fmi2ValueReference vr) {
    return N_X > 0 && vr >= VR_STATES && vr < VR_DERIVATIVES + (fmi2ValueReference)N_X;
}

fmi2Status fmi2GetReal(fmi2Component comp, const fmi2ValueReference vr[], size_t n, fmi2Real value[]) {
    Instance *c = (Instance *)comp;
    size_t k;
#if N_X > 0
    double dx[N_X];
    int have_dx = 0;
#endif
    if (!c) return fmi2Error;
    if (n && (!vr || !value)) return fmi2Error;
    refresh_outputs(c);                 /* once per call, not per value */
    for (k = 0; k < n; k++) {
        if (state_or_derivative(vr[k])) {
#if N_X > 0
            if (vr[k] < VR_DERIVATIVES) {
                value[k] = c->d.x[vr[k] - VR_STATES];
            } else {
                if (!have_dx) model_derivatives(&c->d, c->d.x, dx);
                have_dx = 1;
                value[k] = dx[vr[k] - VR_DERIVATIVES];
            }
#endif
        } else if (cf_real_value(c, vr[k], &value[k], "fmi2GetReal") != CF_OK) {
            return fmi2Error;
        }
    }
    return fmi2OK;
}

fmi2Status fmi2GetInteger(fmi2Component comp, const fmi2ValueReference vr[], size_t n, fmi2Integer value[]) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return (fmi2Status)cf_get_integer(c, vr, n, value, "fmi2GetInteger");
}

fmi2Status fmi2GetBoolean(fmi2Component comp, const fmi2ValueReference vr[], size_t n, fmi2Boolean value[]) {
    Instance *c = (Instance *)comp;
    (void)value;
    if (!c) return fmi2Error;
    return (fmi2Status)cf_no_variable(c, vr, n, "fmi2GetBoolean");
}

fmi2Status fmi2GetString(fmi2Component comp, const fmi2ValueReference vr[], size_t n, fmi2String value[]) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return (fmi2Status)cf_get_string(c, vr, n, value, "fmi2GetString");
}

fmi2Status fmi2SetReal(fmi2Component comp, const fmi2ValueReference vr[], size_t n, const fmi2Real value[]) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    if (cf_check_real(c, vr, n, value, "fmi2SetReal") != CF_OK) return fmi2Error;
    cf_assign_real(c, vr, n, value);
    return fmi2OK;
}

fmi2Status fmi2SetInteger(fmi2Component comp, const fmi2ValueReference vr[], size_t n, const fmi2Integer value[]) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return (fmi2Status)cf_set_integer(c, vr, n, value, "fmi2SetInteger");
}

fmi2Status fmi2SetBoolean(fmi2Component comp, const fmi2ValueReference vr[], size_t n, const fmi2Boolean value[]) {
    Instance *c = (Instance *)comp;
    (void)value;
    if (!c) return fmi2Error;
    return (fmi2Status)cf_no_variable(c, vr, n, "fmi2SetBoolean");
}

fmi2Status fmi2SetString(fmi2Component comp, const fmi2ValueReference vr[], size_t n, const fmi2String value[]) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return (fmi2Status)cf_set_string(c, vr, n, value, "fmi2SetString");
}

/* ---------------------------------------------------------------- stepping --------- */
fmi2Status fmi2DoStep(fmi2Component comp, fmi2Real t, fmi2Real h, fmi2Boolean no_prior) {
    Instance *c = (Instance *)comp;
    (void)no_prior;
    if (!c) return fmi2Error;
    if (c->model_exchange)
        return (fmi2Status)fail(c, "%s: fmi2DoStep: the instance was made for Model Exchange", c->name);
    return (fmi2Status)cf_do_step(c, t, h, "fmi2DoStep");
}

fmi2Status fmi2CancelStep(fmi2Component comp) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return (fmi2Status)fail(c, "%s: fmi2CancelStep: steps are never asynchronous here", c->name);
}

static fmi2Status status_unknown(fmi2Component comp, const char *what) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return (fmi2Status)fail(c, "%s: %s: no asynchronous step, no status to report", c->name, what);
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
    if (!v) return (fmi2Status)fail(c, "%s: fmi2GetBooleanStatus: no place for the value", c->name);
    *v = c->terminated ? fmi2True : fmi2False;
    return fmi2OK;
}

fmi2Status fmi2GetRealStatus(fmi2Component comp, const fmi2StatusKind s, fmi2Real *v) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    if (s != fmi2LastSuccessfulTime) return status_unknown(comp, "fmi2GetRealStatus (only fmi2LastSuccessfulTime)");
    if (!v) return (fmi2Status)fail(c, "%s: fmi2GetRealStatus: no place for the value", c->name);
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
fmi2Status fmi2GetFMUstate(fmi2Component comp, fmi2FMUstate *state) {
    Instance *c = (Instance *)comp;
    if (!c || !state) return fmi2Error;
    return (fmi2Status)cf_get_state(c, state, "fmi2GetFMUstate");
}

fmi2Status fmi2SetFMUstate(fmi2Component comp, fmi2FMUstate state) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return (fmi2Status)cf_set_state(c, state, "fmi2SetFMUstate");
}

fmi2Status fmi2FreeFMUstate(fmi2Component comp, fmi2FMUstate *state) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return (fmi2Status)cf_free_state(c, state);
}

fmi2Status fmi2SerializedFMUstateSize(fmi2Component comp, fmi2FMUstate state, size_t *size) {
    Instance *c = (Instance *)comp;
    (void)state;
    if (!c || !size) return fmi2Error;
    *size = SERIAL_SIZE;
    return fmi2OK;
}

fmi2Status fmi2SerializeFMUstate(fmi2Component comp, fmi2FMUstate state, fmi2Byte bytes[], size_t size) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return (fmi2Status)cf_serialize(c, state, (unsigned char *)bytes, size, "fmi2SerializeFMUstate");
}

fmi2Status fmi2DeSerializeFMUstate(fmi2Component comp, const fmi2Byte bytes[], size_t size, fmi2FMUstate *state) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return (fmi2Status)cf_deserialize(c, (const unsigned char *)bytes, size, state,
                                      "fmi2DeSerializeFMUstate");
}

/* ---------------------------------------------------------------- Model Exchange --- */
fmi2Status fmi2EnterEventMode(fmi2Component comp) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return (fmi2Status)cf_me_call(c, "fmi2EnterEventMode");
}

fmi2Status fmi2NewDiscreteStates(fmi2Component comp, fmi2EventInfo *info) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    if (cf_me_call(c, "fmi2NewDiscreteStates") != CF_OK) return fmi2Error;
    if (!info) return (fmi2Status)fail(c, "%s: fmi2NewDiscreteStates: no fmi2EventInfo", c->name);
    info->newDiscreteStatesNeeded = fmi2False;   /* no discrete state, no time event */
    info->terminateSimulation = fmi2False;
    info->nominalsOfContinuousStatesChanged = fmi2False;
    info->valuesOfContinuousStatesChanged = fmi2False;
    info->nextEventTimeDefined = fmi2False;
    info->nextEventTime = 0.0;
    return fmi2OK;
}

fmi2Status fmi2EnterContinuousTimeMode(fmi2Component comp) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return (fmi2Status)cf_me_call(c, "fmi2EnterContinuousTimeMode");
}

fmi2Status fmi2CompletedIntegratorStep(fmi2Component comp, fmi2Boolean no_prior,
                                       fmi2Boolean *enter_event_mode, fmi2Boolean *terminate) {
    Instance *c = (Instance *)comp;
    int status, stop = 0;
    (void)no_prior;
    if (!c) return fmi2Error;
    if (!enter_event_mode || !terminate)
        return (fmi2Status)fail(c, "%s: fmi2CompletedIntegratorStep: an output argument is NULL", c->name);
    status = cf_me_completed_step(c, &stop, "fmi2CompletedIntegratorStep");
    *enter_event_mode = fmi2False;
    *terminate = stop ? fmi2True : fmi2False;
    return (fmi2Status)status;
}

fmi2Status fmi2SetTime(fmi2Component comp, fmi2Real time) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return (fmi2Status)cf_me_set_time(c, time, "fmi2SetTime");
}

fmi2Status fmi2SetContinuousStates(fmi2Component comp, const fmi2Real x[], size_t nx) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return (fmi2Status)cf_me_set_states(c, x, nx, "fmi2SetContinuousStates");
}

fmi2Status fmi2GetContinuousStates(fmi2Component comp, fmi2Real x[], size_t nx) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return (fmi2Status)cf_me_get_states(c, x, nx, "fmi2GetContinuousStates");
}

fmi2Status fmi2GetDerivatives(fmi2Component comp, fmi2Real dx[], size_t nx) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return (fmi2Status)cf_me_derivatives(c, dx, nx, "fmi2GetDerivatives");
}

fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component comp, fmi2Real x_nominal[], size_t nx) {
    Instance *c = (Instance *)comp;
    if (!c) return fmi2Error;
    return (fmi2Status)cf_me_nominals(c, x_nominal, nx, "fmi2GetNominalsOfContinuousStates");
}

fmi2Status fmi2GetEventIndicators(fmi2Component comp, fmi2Real indicators[], size_t ni) {
    Instance *c = (Instance *)comp;
    (void)indicators;
    if (!c) return fmi2Error;
    if (ni == 0) return fmi2OK;
    return (fmi2Status)fail(c, "%s: fmi2GetEventIndicators: the model has no event indicators "
                            "(%lu asked for)", c->name, (unsigned long)ni);
}
