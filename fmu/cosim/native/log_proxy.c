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
   declaration): its Python callback, and what is passed back to it. */
#define LOG_ROUTE_LAYOUT(X) X(FN, target, text_logger) X(ADDRESS, env, 1)

typedef struct {
    LOG_ROUTE_LAYOUT(TABLE_MEMBER)
} LogRoute;

LOG_API void flexcosim_log_proxy(void *component_environment, const char *instance, int status,
                         const char *category, const char *message, ...) {
    LogRoute *route = (LogRoute *)component_environment;
    char text[8192];
    va_list args;
    if (!route || !route->target) return;
    va_start(args, message);
    vsnprintf(text, sizeof text, message ? message : "", args);
    va_end(args);
    route->target(route->env, instance ? instance : "", status, category ? category : "", text);
}
