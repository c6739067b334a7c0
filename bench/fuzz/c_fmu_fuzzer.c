/*
 * libFuzzer harness for the C-source FMUs' wrapper (fmu/fmi/native/cfmu/fmi2_cs.c): the
 * saved-state reader (fmi2DeSerializeFMUstate, fmi2SetFMUstate) and the value setters,
 * built with AddressSanitizer and UndefinedBehaviorSanitizer by bench/fuzz_c_fmu.py
 * together with one exported model's sources (model.c, model_data.c).
 *
 * One input is one scenario on a fresh instance (instantiated, initialised, stepped
 * STEPS_BEFORE times with a valid input, its state saved and serialized: `reference`).
 * The first byte chooses what the rest means:
 *
 *   mode 0  raw bytes handed to fmi2DeSerializeFMUstate as they are (any length);
 *   mode 1  the reference state XOR the rest (a zero input is the valid state), the
 *           checksum left as it falls: anything changed must be refused;
 *   mode 2  as 1, the checksum then made right: the field checks alone must hold;
 *   mode 3  a program of setter calls and steps (op byte, value reference, 8 value
 *           bytes), each op any of fmi2SetReal / SetInteger / SetString / DoStep /
 *           GetFMUstate / SetFMUstate (at most MAX_STEPS steps).
 *
 * After any state was accepted, the scenario steps from that state's time.  The
 * property checked (abort: a finding) on top of the sanitizers': a step that returns
 * fmi2OK leaves every Real output finite and within its declared range, and a time
 * that is finite; mode 1 never accepts a changed state.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi2Functions.h"
#include "flexcosim_model.h"

#define STEPS_BEFORE 3
#define MAX_STEPS 4

static const double step_size = 1e-3;   /* a step every model of the catalog accepts */

static void logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status,
                   fmi2String category, fmi2String message, ...) {
    /* a host formats the message as printf does: this is where '%' in a message would
       read arguments that are not there */
    char text[4096];
    va_list args;
    (void)env; (void)name; (void)status; (void)category;
    va_start(args, message);
    vsnprintf(text, sizeof text, message, args);
    va_end(args);
}

static const fmi2CallbackFunctions callbacks = {logger, calloc, free, NULL, NULL};

static fmi2Component fresh(void) {
    fmi2Component c = fmi2Instantiate("fuzz", fmi2CoSimulation, MODEL_GUID, "file:///nonexistent",
                                      &callbacks, fmi2False, fmi2False);
    if (!c) abort();
    if (fmi2SetupExperiment(c, fmi2False, 0.0, 0.0, fmi2False, 0.0) != fmi2OK
        || fmi2EnterInitializationMode(c) != fmi2OK || fmi2ExitInitializationMode(c) != fmi2OK)
        abort();
    return c;
}

/* Every Real output finite and in its declared range (MODEL_NUMBERS), else abort. */
static void check_outputs(fmi2Component c) {
    fmi2ValueReference vr;
    for (vr = 0; vr < (fmi2ValueReference)N_VARS; vr++) {
        const VarInfo *v = &VARS[vr];
        fmi2Real value;
        if (v->type != VAR_REAL || v->causality != VAR_OUTPUT) continue;
        if (fmi2GetReal(c, &vr, 1, &value) != fmi2OK) abort();
        if (!isfinite(value)) {
            fprintf(stderr, "FINDING: fmi2OK step, output %s = %g\n", v->name, value);
            abort();
        }
        if ((v->has_min && value < MODEL_NUMBERS[vr][NUM_MIN])
            || (v->has_max && value > MODEL_NUMBERS[vr][NUM_MAX])) {
            fprintf(stderr, "FINDING: fmi2OK step, output %s = %g out of range\n", v->name, value);
            abort();
        }
    }
}

/* One step from the instance's own time (fmi2GetRealStatus(fmi2LastSuccessfulTime)). */
static void step_and_check(fmi2Component c, double h) {
    fmi2Real t;
    if (fmi2GetRealStatus(c, fmi2LastSuccessfulTime, &t) != fmi2OK) abort();
    if (!isfinite(t)) {
        fprintf(stderr, "FINDING: the FMU's time is %g\n", t);
        abort();
    }
    if (fmi2DoStep(c, t, h, fmi2True) == fmi2OK) check_outputs(c);
}

static unsigned char reference[1 << 16];
static size_t reference_size;

static void make_reference(void) {
    fmi2Component c = fresh();
    fmi2FMUstate state = NULL;
    int k;
    for (k = 0; k < STEPS_BEFORE; k++)
        if (fmi2DoStep(c, k * step_size, step_size, fmi2True) != fmi2OK) abort();
    if (fmi2GetFMUstate(c, &state) != fmi2OK
        || fmi2SerializedFMUstateSize(c, state, &reference_size) != fmi2OK
        || reference_size > sizeof reference
        || fmi2SerializeFMUstate(c, state, (fmi2Byte *)reference, reference_size) != fmi2OK)
        abort();
    fmi2FreeFMUstate(c, &state);
    fmi2FreeInstance(c);
}

static uint64_t fnv1a(const unsigned char *p, size_t n) {
    uint64_t h = 14695981039346656037ULL;
    size_t i;
    for (i = 0; i < n; ++i) { h ^= p[i]; h *= 1099511628211ULL; }
    return h;
}

static void state_scenario(int mode, const uint8_t *data, size_t size) {
    static unsigned char bytes[1 << 16];
    size_t n = reference_size, i;
    int changed = 0;
    fmi2Component c = fresh();
    fmi2FMUstate state = NULL;
    fmi2Status status;
    if (mode == 0) {
        n = size < sizeof bytes ? size : sizeof bytes;
        memcpy(bytes, data, n);
    } else {
        memcpy(bytes, reference, n);
        for (i = 0; i < size && i < n; i++) {
            bytes[i] ^= data[i];
            changed |= data[i] != 0;
        }
        if (mode == 2) {
            uint64_t sum = fnv1a(bytes, n - 8);
            memcpy(bytes + n - 8, &sum, 8);
        }
    }
    status = fmi2DeSerializeFMUstate(c, (const fmi2Byte *)bytes, n, &state);
    if (mode == 1 && changed && status == fmi2OK) {
        fprintf(stderr, "FINDING: a changed state was accepted without its checksum\n");
        abort();
    }
    if (status == fmi2OK) {
        if (fmi2SetFMUstate(c, state) != fmi2OK) abort();   /* checked once, valid twice */
        step_and_check(c, step_size);
        step_and_check(c, step_size);
        fmi2FreeFMUstate(c, &state);
    }
    fmi2FreeInstance(c);
}

static void setter_scenario(const uint8_t *data, size_t size) {
    fmi2Component c = fresh();
    fmi2FMUstate saved = NULL;
    size_t at = 0;
    int ops = 0, steps = 0;
    while (at + 10 <= size && ops++ < 64) {
        int op = data[at] % 6;
        fmi2ValueReference vr = data[at + 1] % (N_VARS + 2);    /* and two beyond the table */
        double real;
        int32_t integer;
        memcpy(&real, data + at + 2, 8);
        memcpy(&integer, data + at + 2, 4);
        at += 10;
        switch (op) {
        case 0: fmi2SetReal(c, &vr, 1, &real); break;
        case 1: fmi2SetInteger(c, &vr, 1, &integer); break;
        case 2: {
            /* a choice of the variable, or the 8 bytes as a text */
            char text[9];
            fmi2String value = text;
            if (vr < (fmi2ValueReference)N_VARS && VARS[vr].n_choices > 0 && (integer & 1))
                value = VARS[vr].choices[(unsigned)integer % (unsigned)VARS[vr].n_choices];
            else {
                memcpy(text, data + at - 8, 8);
                text[8] = '\0';
            }
            fmi2SetString(c, &vr, 1, &value);
            break;
        }
        case 3: {
            /* a step of 1 ms, or of a fuzzed size (positive, negative, NaN, huge); at
               most MAX_STEPS per input: with substeps = 100000 (its declared maximum) a
               step of a continuous model takes a good part of a second under the
               sanitizers, and an input must stay well inside the fuzzer's timeout */
            double h = (integer & 1) ? real : step_size;
            fmi2Real t;
            if (steps++ >= MAX_STEPS) break;
            fmi2GetRealStatus(c, fmi2LastSuccessfulTime, &t);
            if (fmi2DoStep(c, t, h, fmi2True) == fmi2OK) check_outputs(c);
            break;
        }
        case 4: fmi2GetFMUstate(c, &saved); break;
        case 5: if (saved) fmi2SetFMUstate(c, saved); break;
        }
    }
    step_and_check(c, step_size);
    if (saved) fmi2FreeFMUstate(c, &saved);
    fmi2FreeInstance(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!reference_size) make_reference();
    if (size == 0) return 0;
    if (data[0] % 4 == 3) setter_scenario(data + 1, size - 1);
    else state_scenario(data[0] % 4, data + 1, size - 1);
    return 0;
}
