/*
 * flexcosim C-source FMU: the interface between the FMI 2.0 co-simulation wrapper
 * (fmi2_cs.c, the same for every model) and one generated model (model.c, with its
 * sizes in model_config.h).  Plain C99, no allocation after fmi2Instantiate, libm only.
 *
 * Every variable of the FMU is one entry of VARS, indexed by its value reference; its
 * value lives in Instance.r (Real), Instance.i (Integer) or Instance.s (String: the index
 * of the chosen value among the variable's choices).  A model reads its parameters and
 * inputs and writes its outputs there (model.c names them by macros), keeps its
 * continuous state in x (integrated by the wrapper: RK4 or Gill, `substeps` per
 * communication step, or 0: "auto", error-controlled with the model's rtol and atol) and its discrete state in z (advanced by model_update once per
 * communication step).  A model that takes its own steps (an implicit method over its
 * own state in z) defines MODEL_OWN_STEP in model_config.h and model_step.  A sampled law designed for one step size defines SAMPLE_TIME in
 * model_config.h (an expression over d, in s): the wrapper discards any other step.
 *
 * The numbers of an export live apart from the code: model_data.c defines MODEL_GUID,
 * MODEL_NUMBERS (each variable's start value and range) and MODEL_TABLES (the model's
 * tables, which model_config.h names: #define ARM_TABLE (MODEL_TABLES + 0)), so that
 * model.c and model_config.h are the same for every export of a model of one structure.
 * Built with FLEXCOSIM_DATA_FROM_RESOURCES (the binaries compiled with the flexcosim
 * package), the wrapper reads them instead from resources/model_data.bin at
 * fmi2Instantiate, checked field by field (fmi2_cs.c, load_model_data).
 */
#ifndef FLEXCOSIM_MODEL_H
#define FLEXCOSIM_MODEL_H

#include <stddef.h>

#include "model_config.h"

/* the model's own symbols stay inside the binary: only the fmi2 functions are exported
   (on Windows a DLL exports only what is marked __declspec(dllexport), which the FMI
   headers do for the fmi2 functions, so nothing is needed there) */
#if defined(__GNUC__) && !defined(_WIN32) && !defined(__CYGWIN__)
#define FLEXCOSIM_HIDDEN __attribute__((visibility("hidden")))
#else
#define FLEXCOSIM_HIDDEN
#endif

enum { VAR_REAL = 0, VAR_INTEGER = 1, VAR_STRING = 2 };
enum { VAR_PARAMETER = 0, VAR_INPUT = 1, VAR_OUTPUT = 2 };

#define MAX_CHOICES 8

typedef struct {
    const char *name;
    int type;          /* VAR_REAL, VAR_INTEGER, VAR_STRING */
    int causality;     /* VAR_PARAMETER, VAR_INPUT, VAR_OUTPUT */
    int has_min, has_max, exclusive_min;   /* the range's bounds: MODEL_NUMBERS */
    const char *unit;
    int n_choices;     /* String: the accepted values */
    const char *choices[MAX_CHOICES];
} VarInfo;

/* Array sizes: C99 forbids zero-length arrays. */
#define SIZE_OR_1(n) ((n) > 0 ? (n) : 1)

typedef struct {
    /* everything a saved FMU state holds: plain data, copied and serialized as bytes */
    double time;        /* the FMU's time: start_time, then each accepted t + h as doubles */
    double start_time;  /* fmi2SetupExperiment's start */
    long long steps;    /* communication steps taken since start_time */
    double r[N_VARS];
    int i[N_VARS];
    int s[N_VARS];
    double x[SIZE_OR_1(N_X)];
    double gill_q[SIZE_OR_1(N_X)];   /* Gill's round-off register, carried across steps */
    double z[SIZE_OR_1(N_Z)];
    double w[SIZE_OR_1(N_W)];        /* quantities derived from the parameters at start */
    long long auto_substeps;         /* substeps = 0, "auto": where the next step's doubling
                                        starts (1 .. FS_AUTO_MAX_SUBSTEPS, fixed_step.h) */
} ModelData;

FLEXCOSIM_HIDDEN extern const VarInfo VARS[N_VARS];

/* The numbers of this export (model_data.c, or resources/model_data.bin) */
#ifdef FLEXCOSIM_DATA_FROM_RESOURCES
#define FLEXCOSIM_DATA_CONST
#else
#define FLEXCOSIM_DATA_CONST const
#endif
enum { NUM_START = 0, NUM_MIN = 1, NUM_MAX = 2 };
#define GUID_SIZE 64
FLEXCOSIM_HIDDEN extern FLEXCOSIM_DATA_CONST char MODEL_GUID[GUID_SIZE];
/* per variable: start value (String: index of the default choice), min, max */
FLEXCOSIM_HIDDEN extern FLEXCOSIM_DATA_CONST double MODEL_NUMBERS[N_VARS][3];
FLEXCOSIM_HIDDEN extern FLEXCOSIM_DATA_CONST double MODEL_TABLES[SIZE_OR_1(N_TABLE)];

/* Check the parameters together (ranges are checked one by one by the wrapper) and fill
   d->w; return 0, or 1 with a message naming the parameter(s) in msg. */
FLEXCOSIM_HIDDEN int model_setup(ModelData *d, char *msg, size_t n);
/* The state at the start time (after model_setup). */
FLEXCOSIM_HIDDEN void model_initial(ModelData *d);
/* dx = f(x, inputs, parameters) at the current inputs (continuous models). */
FLEXCOSIM_HIDDEN void model_derivatives(const ModelData *d, const double *x, double *dx);
/* Advance the discrete state over one communication step of h [s], inputs held. */
FLEXCOSIM_HIDDEN void model_update(ModelData *d, double h);
/* Write the outputs into d->r from the state and the current inputs. */
FLEXCOSIM_HIDDEN void model_outputs(ModelData *d);
#ifdef MODEL_OWN_STEP
/* A model that integrates itself (mbdcore.codegen.CModel.own_step): advance its state
   (in z) from t over one communication step of h [s], inputs held; 0, or not 0 with why
   in msg (the wrapper puts the state back and discards the step). */
FLEXCOSIM_HIDDEN int model_step(ModelData *d, double t, double h, char *msg, size_t n);
#endif
/* 0 while the state is where the model is accurate; 1, with why in msg, once it has left
   that range (the wrapper logs it once per run with status fmi2Warning); 2, with why,
   beyond the model's hard limit (the wrapper undoes the step and returns fmi2Discard). */
FLEXCOSIM_HIDDEN int model_validity(const ModelData *d, char *msg, size_t n);

#endif
