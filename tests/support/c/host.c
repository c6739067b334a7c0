/*
 * A plain FMI 2.0 co-simulation host, as a C program would be (no Python, no
 * RTLD_GLOBAL, no environment variables), driven by commands on stdin so that the tests
 * script their scenarios.  One command per line, words separated by blanks:
 *
 *   load PATH                        dlopen the FMU binary (RTLD_NOW | RTLD_LOCAL)
 *   instantiate I NAME GUID URI LOG  fmi2Instantiate into slot I (LOG: 0 or 1)
 *   instantiate_threads N NAME GUID URI
 *                                    N threads (slots 0..N-1) call fmi2Instantiate at once
 *                                    (a barrier releases them together); prints
 *                                    "instantiate ok|NULL" per slot, in slot order
 *   setup I T0 [STOP]                fmi2SetupExperiment alone (STOP: a stop time)
 *   enter_init I                     fmi2EnterInitializationMode alone
 *   init I T0                        fmi2SetupExperiment + fmi2EnterInitializationMode
 *   exit_init I                      fmi2ExitInitializationMode
 *   set_real I VR VALUE | set_integer I VR VALUE | set_string I VR TEXT
 *   get_real I VR...                 prints "values V..." (%.17g)
 *   get_string I VR
 *   step I T H                       fmi2DoStep
 *   run I H N_IN VR... N_OUT VR... INPUTS OUTPUTS
 *                                    one step per line of INPUTS (N_IN numbers), outputs
 *                                    after each step to the CSV file OUTPUTS; stops at
 *                                    the first status other than fmi2OK
 *   bench I H N VR_IN VR_OUT         N x (fmi2SetReal + fmi2DoStep + fmi2GetReal), prints
 *                                    "us_per_step X" (steps continue from the previous
 *                                    bench of slot I, from t = 0 at first)
 *   cosim H N S M (SRC VR DST VR)... a co-simulation of slots 0..S-1 (each FMU called
 *                                    through the library it was instantiated from), M
 *                                    Real connections from output VR of slot SRC to input
 *                                    VR of slot DST; N Gauss-Seidel steps of H from t = 0:
 *                                    per slot in order its inputs set (one fmi2SetReal),
 *                                    fmi2DoStep, its connected outputs read (one
 *                                    fmi2GetReal); prints "us_per_step X", "us_per_slot"
 *                                    and each slot's share, then "values" and the
 *                                    connections' last values (the hand-written loop
 *                                    bench/master.py compares the master with)
 *   get_state I S | set_state I S | free_state I S      FMU state slot S
 *   serialize I S FILE | deserialize I FILE S
 *   reset I | terminate I | free I
 *   call_unsupported I               fmi2CancelStep and fmi2GetDirectionalDerivative
 *
 * Every FMI call prints "<command> status <n>"; the logger prints one line
 * "LOG <instance> <status> <category> <message>" (newlines in the message as \n).
 */
#include <stdio.h>
#ifdef _WIN32
/* the same host cross-compiled for win64 (x86_64-w64-mingw32-gcc, run under wine): the
   library calls of a Windows host, the rest unchanged */
#include <windows.h>
#define flockfile _lock_file
#define funlockfile _unlock_file
static char load_error[64];
static void *dlopen_fmu(const char *path) { return (void *)LoadLibraryA(path); }
static void *dlsym_fmu(void *lib, const char *name) {
    return (void *)(size_t)GetProcAddress((HMODULE)lib, name);
}
static const char *dlerror_fmu(void) {
    snprintf(load_error, sizeof load_error, "LoadLibrary error %lu", (unsigned long)GetLastError());
    return load_error;
}
#else
#include <dlfcn.h>
static void *dlopen_fmu(const char *path) { return dlopen(path, RTLD_NOW | RTLD_LOCAL); }
static void *dlsym_fmu(void *lib, const char *name) { return dlsym(lib, name); }
static const char *dlerror_fmu(void) { return dlerror(); }
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fmi2Functions.h"

#define SLOTS 8

typedef struct {
#define FN(name) name##TYPE *name;
    FN(fmi2Instantiate) FN(fmi2FreeInstance) FN(fmi2SetupExperiment) FN(fmi2EnterInitializationMode)
    FN(fmi2ExitInitializationMode) FN(fmi2Terminate) FN(fmi2Reset) FN(fmi2SetReal) FN(fmi2GetReal)
    FN(fmi2SetInteger) FN(fmi2SetString) FN(fmi2GetString) FN(fmi2DoStep) FN(fmi2GetFMUstate)
    FN(fmi2SetFMUstate) FN(fmi2FreeFMUstate) FN(fmi2SerializedFMUstateSize) FN(fmi2SerializeFMUstate)
    FN(fmi2DeSerializeFMUstate) FN(fmi2CancelStep) FN(fmi2GetDirectionalDerivative)
    FN(fmi2GetTypesPlatform) FN(fmi2GetVersion)
#undef FN
} FmiFunctions;

static FmiFunctions fmi;               /* the library loaded last */
static FmiFunctions slot_fmi[SLOTS];   /* the library each slot was instantiated from */
static fmi2Component instances[SLOTS];
static fmi2FMUstate states[SLOTS];
static long bench_steps[SLOTS];  /* steps made by "bench" per slot: where the next starts */

static void logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status,
                   fmi2String category, fmi2String message, ...) {
    (void)env;
    char text[16384];
    va_list args;
    va_start(args, message);
    vsnprintf(text, sizeof text, message, args);  /* the message is a printf format */
    va_end(args);
    flockfile(stdout);  /* one line per message, whichever thread logs */
    printf("LOG %s %d %s ", name, (int)status, category);
    for (const char *p = text; *p; ++p) {
        if (*p == '\n') fputs("\\n", stdout);
        else putchar(*p);
    }
    putchar('\n');
    fflush(stdout);
    funlockfile(stdout);
}

static const fmi2CallbackFunctions callbacks = {logger, calloc, free, NULL, NULL};

static int load(const char *path) {
    void *lib = dlopen_fmu(path);
    if (!lib) {
        printf("load failed: %s\n", dlerror_fmu());
        return 0;
    }
#define FN(name)                                                  \
    *(void **)(&fmi.name) = dlsym_fmu(lib, #name);                \
    if (!fmi.name) {                                              \
        printf("load failed: no %s\n", #name);                    \
        return 0;                                                 \
    }
    FN(fmi2Instantiate) FN(fmi2FreeInstance) FN(fmi2SetupExperiment) FN(fmi2EnterInitializationMode)
    FN(fmi2ExitInitializationMode) FN(fmi2Terminate) FN(fmi2Reset) FN(fmi2SetReal) FN(fmi2GetReal)
    FN(fmi2SetInteger) FN(fmi2SetString) FN(fmi2GetString) FN(fmi2DoStep) FN(fmi2GetFMUstate)
    FN(fmi2SetFMUstate) FN(fmi2FreeFMUstate) FN(fmi2SerializedFMUstateSize) FN(fmi2SerializeFMUstate)
    FN(fmi2DeSerializeFMUstate) FN(fmi2CancelStep) FN(fmi2GetDirectionalDerivative)
    FN(fmi2GetTypesPlatform) FN(fmi2GetVersion)
#undef FN
    printf("load ok %s %s\n", fmi.fmi2GetVersion(), fmi.fmi2GetTypesPlatform());
    return 1;
}

static void report(const char *command, fmi2Status status) {
    printf("%s status %d\n", command, (int)status);
    fflush(stdout);
}

static int run(fmi2Component c, double h, int n_in, const fmi2ValueReference *in, int n_out,
               const fmi2ValueReference *out, const char *inputs, const char *outputs) {
    FILE *fin = fopen(inputs, "r"), *fout = fopen(outputs, "w");
    if (!fin || !fout) {
        printf("run: cannot open %s or %s\n", inputs, outputs);
        return 0;
    }
    double u[64], y[64], t = 0.0;
    int steps = 0;
    fmi2Status status = fmi2OK;
    for (;;) {
        int i;
        for (i = 0; i < n_in; ++i)
            if (fscanf(fin, "%lf", &u[i]) != 1) break;
        if (i < n_in) break;
        if ((status = fmi.fmi2SetReal(c, in, n_in, u)) != fmi2OK) break;
        if ((status = fmi.fmi2DoStep(c, t, h, fmi2True)) != fmi2OK) break;
        if ((status = fmi.fmi2GetReal(c, out, n_out, y)) != fmi2OK) break;
        t = (++steps) * h;
        for (i = 0; i < n_out; ++i) fprintf(fout, i ? ",%.17g" : "%.17g", y[i]);
        fputc('\n', fout);
    }
    fclose(fin);
    fclose(fout);
    printf("run steps %d\n", steps);
    report("run", status);
    return 1;
}

static pthread_barrier_t barrier;
static const char *thread_args[3];  /* name, GUID, URI */

static void *instantiate_thread(void *slot) {
    int i = (int)(size_t)slot;
    char name[64];
    snprintf(name, sizeof name, "%s%d", thread_args[0], i);
    pthread_barrier_wait(&barrier);
    instances[i] = fmi.fmi2Instantiate(name, fmi2CoSimulation, thread_args[1], thread_args[2], &callbacks,
                                       fmi2False, fmi2False);
    return NULL;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void cosim(double h, long steps, int n_slots, int m, const int *src,
                  const fmi2ValueReference *src_vr, const int *dst,
                  const fmi2ValueReference *dst_vr) {
    double value[32], buf[32], spent[SLOTS] = {0};
    fmi2ValueReference vrs[32];
    fmi2Status status = fmi2OK;
    long k;
    for (int j = 0; j < m; ++j)
        slot_fmi[src[j]].fmi2GetReal(instances[src[j]], &src_vr[j], 1, &value[j]);
    double start = now();
    for (k = 0; k < steps && status == fmi2OK; ++k) {
        for (int s = 0; s < n_slots && status == fmi2OK; ++s) {
            const FmiFunctions *f = &slot_fmi[s];
            double began = now();
            int c = 0;
            for (int j = 0; j < m; ++j)
                if (dst[j] == s) { vrs[c] = dst_vr[j]; buf[c++] = value[j]; }
            if (c) status = f->fmi2SetReal(instances[s], vrs, c, buf);
            if (status == fmi2OK) status = f->fmi2DoStep(instances[s], k * h, h, fmi2True);
            c = 0;
            for (int j = 0; j < m; ++j)
                if (src[j] == s) vrs[c++] = src_vr[j];
            if (c && status == fmi2OK) status = f->fmi2GetReal(instances[s], vrs, c, buf);
            c = 0;
            for (int j = 0; j < m; ++j)
                if (src[j] == s) value[j] = buf[c++];
            spent[s] += now() - began;
        }
    }
    printf("us_per_step %.3f\n", (now() - start) / (k ? k : 1) * 1e6);
    printf("us_per_slot");
    for (int s = 0; s < n_slots; ++s) printf(" %.3f", spent[s] / (k ? k : 1) * 1e6);
    printf("\n");
    printf("values");
    for (int j = 0; j < m; ++j) printf(" %.17g", value[j]);
    printf("\n");
    report("cosim", status);
}

int main(void) {
    char line[8192];
    while (fgets(line, sizeof line, stdin)) {
        char *words[160];
        int n = 0;
        for (char *w = strtok(line, " \t\r\n"); w && n < 160; w = strtok(NULL, " \t\r\n")) words[n++] = w;
        if (n == 0 || words[0][0] == '#') continue;
        const char *cmd = words[0];
        int i = n > 1 ? atoi(words[1]) % SLOTS : 0;
        fmi2Component c = instances[i];
        if (!strcmp(cmd, "load")) {
            if (!load(words[1])) return 2;
        } else if (!strcmp(cmd, "instantiate")) {
            instances[i] = fmi.fmi2Instantiate(words[2], fmi2CoSimulation, words[3], words[4], &callbacks,
                                               fmi2False, atoi(words[5]) ? fmi2True : fmi2False);
            slot_fmi[i] = fmi;
            printf("instantiate %s\n", instances[i] ? "ok" : "NULL");
        } else if (!strcmp(cmd, "instantiate_threads")) {
            int m = atoi(words[1]);
            pthread_t threads[SLOTS];
            if (m < 1 || m > SLOTS) m = 1;
            thread_args[0] = words[2];
            thread_args[1] = words[3];
            thread_args[2] = words[4];
            pthread_barrier_init(&barrier, NULL, (unsigned)m);
            for (int k = 0; k < m; ++k) pthread_create(&threads[k], NULL, instantiate_thread, (void *)(size_t)k);
            for (int k = 0; k < m; ++k) pthread_join(threads[k], NULL);
            pthread_barrier_destroy(&barrier);
            for (int k = 0; k < m; ++k) printf("instantiate %s\n", instances[k] ? "ok" : "NULL");
        } else if (!strcmp(cmd, "setup")) {
            report(cmd, fmi.fmi2SetupExperiment(c, fmi2False, 0.0, strtod(words[2], NULL), n > 3,
                                                n > 3 ? strtod(words[3], NULL) : 0.0));
        } else if (!strcmp(cmd, "enter_init")) {
            report(cmd, fmi.fmi2EnterInitializationMode(c));
        } else if (!strcmp(cmd, "init")) {
            report("setup", fmi.fmi2SetupExperiment(c, fmi2False, 0.0, atof(words[2]), fmi2False, 0.0));
            report("enter_init", fmi.fmi2EnterInitializationMode(c));
        } else if (!strcmp(cmd, "exit_init")) {
            report(cmd, fmi.fmi2ExitInitializationMode(c));
        } else if (!strcmp(cmd, "set_real")) {
            fmi2ValueReference vr = (fmi2ValueReference)atol(words[2]);
            fmi2Real v = strtod(words[3], NULL);
            report(cmd, fmi.fmi2SetReal(c, &vr, 1, &v));
        } else if (!strcmp(cmd, "set_integer")) {
            fmi2ValueReference vr = (fmi2ValueReference)atol(words[2]);
            fmi2Integer v = atoi(words[3]);
            report(cmd, fmi.fmi2SetInteger(c, &vr, 1, &v));
        } else if (!strcmp(cmd, "set_string")) {
            fmi2ValueReference vr = (fmi2ValueReference)atol(words[2]);
            fmi2String v = words[3];
            report(cmd, fmi.fmi2SetString(c, &vr, 1, &v));
        } else if (!strcmp(cmd, "get_real")) {
            fmi2ValueReference vr[150];
            fmi2Real v[150];
            int m = n - 2;
            for (int k = 0; k < m; ++k) vr[k] = (fmi2ValueReference)atol(words[k + 2]);
            fmi2Status s = fmi.fmi2GetReal(c, vr, m, v);
            printf("values");
            for (int k = 0; k < m; ++k) printf(" %.17g", v[k]);
            printf("\n");
            report(cmd, s);
        } else if (!strcmp(cmd, "get_string")) {
            fmi2ValueReference vr = (fmi2ValueReference)atol(words[2]);
            fmi2String v = NULL;
            fmi2Status s = fmi.fmi2GetString(c, &vr, 1, &v);
            printf("string %s\n", v ? v : "(null)");
            report(cmd, s);
        } else if (!strcmp(cmd, "step")) {
            report(cmd, fmi.fmi2DoStep(c, strtod(words[2], NULL), strtod(words[3], NULL), fmi2True));
        } else if (!strcmp(cmd, "run")) {
            fmi2ValueReference in[64], out[64];
            int k = 3, n_in = atoi(words[k++]);
            for (int j = 0; j < n_in; ++j) in[j] = (fmi2ValueReference)atol(words[k++]);
            int n_out = atoi(words[k++]);
            for (int j = 0; j < n_out; ++j) out[j] = (fmi2ValueReference)atol(words[k++]);
            run(c, strtod(words[2], NULL), n_in, in, n_out, out, words[k], words[k + 1]);
        } else if (!strcmp(cmd, "bench")) {
            double h = strtod(words[2], NULL), u = 0.1, y = 0.0;
            long steps = atol(words[3]);
            fmi2ValueReference in = (fmi2ValueReference)atol(words[4]), out = (fmi2ValueReference)atol(words[5]);
            double start = now();
            long k0 = bench_steps[i];
            for (long k = k0; k < k0 + steps; ++k) {
                fmi.fmi2SetReal(c, &in, 1, &u);
                fmi.fmi2DoStep(c, k * h, h, fmi2True);
                fmi.fmi2GetReal(c, &out, 1, &y);
            }
            bench_steps[i] += steps;
            printf("us_per_step %.3f\n", (now() - start) / steps * 1e6);
        } else if (!strcmp(cmd, "cosim")) {
            int src[32], dst[32], k = 5, m = atoi(words[4]);
            fmi2ValueReference src_vr[32], dst_vr[32];
            if (m < 0 || m > 32 || n < 5 + 4 * m) m = 0;
            for (int j = 0; j < m; ++j, k += 4) {
                src[j] = atoi(words[k]) % SLOTS;
                src_vr[j] = (fmi2ValueReference)atol(words[k + 1]);
                dst[j] = atoi(words[k + 2]) % SLOTS;
                dst_vr[j] = (fmi2ValueReference)atol(words[k + 3]);
            }
            cosim(strtod(words[1], NULL), atol(words[2]), atoi(words[3]) % (SLOTS + 1), m, src,
                  src_vr, dst, dst_vr);
        } else if (!strcmp(cmd, "get_state")) {
            report(cmd, fmi.fmi2GetFMUstate(c, &states[atoi(words[2]) % SLOTS]));
        } else if (!strcmp(cmd, "set_state")) {
            report(cmd, fmi.fmi2SetFMUstate(c, states[atoi(words[2]) % SLOTS]));
        } else if (!strcmp(cmd, "free_state")) {
            report(cmd, fmi.fmi2FreeFMUstate(c, &states[atoi(words[2]) % SLOTS]));
        } else if (!strcmp(cmd, "serialize")) {
            fmi2FMUstate state = states[atoi(words[2]) % SLOTS];
            size_t size = 0;
            fmi2Status s = fmi.fmi2SerializedFMUstateSize(c, state, &size);
            char *bytes = malloc(size ? size : 1);
            if (s == fmi2OK) s = fmi.fmi2SerializeFMUstate(c, state, bytes, size);
            FILE *f = fopen(words[3], "wb");
            if (f) {
                fwrite(bytes, 1, size, f);
                fclose(f);
            }
            free(bytes);
            printf("serialized %zu\n", size);
            report(cmd, s);
        } else if (!strcmp(cmd, "deserialize")) {
            FILE *f = fopen(words[2], "rb");
            char *bytes = malloc(1 << 24);
            size_t size = f ? fread(bytes, 1, 1 << 24, f) : 0;
            if (f) fclose(f);
            report(cmd, fmi.fmi2DeSerializeFMUstate(c, bytes, size, &states[atoi(words[3]) % SLOTS]));
            free(bytes);
        } else if (!strcmp(cmd, "reset")) {
            report(cmd, fmi.fmi2Reset(c));
        } else if (!strcmp(cmd, "terminate")) {
            report(cmd, fmi.fmi2Terminate(c));
        } else if (!strcmp(cmd, "free")) {
            fmi.fmi2FreeInstance(c);
            instances[i] = NULL;
            printf("free done\n");
        } else if (!strcmp(cmd, "call_unsupported")) {
            fmi2ValueReference vr = 0;
            fmi2Real dv = 1.0, out = 0.0;
            report("cancel_step", fmi.fmi2CancelStep(c));
            report("directional_derivative", fmi.fmi2GetDirectionalDerivative(c, &vr, 1, &vr, 1, &dv, &out));
        } else {
            printf("unknown command %s\n", cmd);
            return 3;
        }
        fflush(stdout);
    }
    printf("host done\n");
    return 0;
}
