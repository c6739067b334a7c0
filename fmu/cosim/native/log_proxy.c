/*
 * The FMI 2.0 logger the co-simulation master gives every FMU instance: it formats the
 * printf-style message with its variadic arguments (which ctypes cannot receive) and
 * hands the text to the instance's own Python callback, found through the
 * componentEnvironment pointer of that instance's callback structure.
 *
 * Why not fmpy's proxy (fmpy.logging.addLoggerProxy): it keeps ONE process-wide callback,
 * so with two FMUs alive every message went to the last one registered, and after that
 * one was freed, the next message of any FMU (fmpy.simulate_fmu's too) called freed
 * memory (a segmentation fault, seen in the test suite).
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>

#include "table_layout.h"

/* marks what Python and other kernels call (mbdcore.cbuild binds it) */
#ifndef LOG_API
#define LOG_API
#endif

typedef void (*text_logger)(const void *env, const char *instance, int status,
                            const char *category, const char *text);

/* The route of one instance (fmu_component.py fills it by name through this
   declaration): its Python callback, what is passed back to it, and how many messages
   of status fmi2Error or worse it carried (the compiled master loop, cosim_loop.c,
   watches it: such a message fails the call that logged it, as in the Python loop). */
#define LOG_ROUTE_LAYOUT(X) X(FN, target, text_logger) X(ADDRESS, env, 1) X(INT, errors, 1)

typedef struct {
    LOG_ROUTE_LAYOUT(TABLE_MEMBER)
} LogRoute;

LOG_API void flexcosim_log_proxy(void *component_environment, const char *instance, int status,
                         const char *category, const char *message, ...) {
    LogRoute *route = (LogRoute *)component_environment;
    char text[8192];
    va_list args;
    if (!route || !route->target) return;
    if (status >= 3 && route->errors < INT_MAX) ++route->errors;
    va_start(args, message);
    vsnprintf(text, sizeof text, message ? message : "", args);
    va_end(args);
    route->target(route->env, instance ? instance : "", status, category ? category : "", text);
}
