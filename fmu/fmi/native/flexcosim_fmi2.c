/*
 * FMI 2.0 co-simulation wrapper around a pythonfmu slave class (fmu.fmi.slave.BlockSlave).
 *
 * Replaces pythonfmu 0.7.0's binary in the FMUs built by fmu.fmi.build, so that an FMU runs
 * in any FMI host, not only in a Python one:
 *
 * - The library has no link-time dependency on libpython (checked with -Wl,-z,defs): a
 *   host may dlopen it RTLD_LOCAL.  At the first fmi2Instantiate it uses the interpreter
 *   already running in the process (a Python host such as fmpy), or dlopens the libpython
 *   recorded at build time in resources/flexcosim_env.txt with RTLD_GLOBAL, so that the
 *   compiled extension modules (math, numpy) find the C API.  Every C-API function is
 *   called through a table filled with dlsym; the Python headers give the types only.
 * - The interpreter is configured from the recorded environment (executable, standard
 *   library), not from the host's PATH or PYTHON* variables; FLEXCOSIM_PYTHONHOME and
 *   FLEXCOSIM_LIBPYTHON override it.  Problems are logged and fmi2Instantiate returns
 *   NULL; it never calls a Python function that exits the process.
 * - An interpreter started here is never finalized: numpy cannot be finalized
 *   safely and the host may unload this library at any time.
 * - A Python exception becomes fmi2Error and a logged traceback; the instance lives on.
 * - Messages with status fmi2Error or fmi2Fatal reach the logger even if loggingOn is
 *   false (FMI 2.0 allows the FMU to report errors in any case).
 * - A host thread gets one Python thread state for its lifetime ("primed" below), so a
 *   call costs a GIL hand-over, not a thread-state creation.
 * - The Python part of fmi2Instantiate runs under a mutex (taken before the GIL):
 *   threads instantiating at once never see each other's half-imported slave module.
 * - Each instance follows the FMI 2.0 co-simulation state machine (PHASE_* below); a
 *   call in a state that does not allow it is fmi2Error naming the call and the state.
 *   fmi2DoStep refuses a currentCommunicationPoint that is not finite or not the time
 *   the slave is at; a getter, setter or fmi2ExitInitializationMode whose slave logged
 *   an error returns fmi2Error.
 * - At fmi2Instantiate the helpers compare the embedded packages' source digests (built
 *   into resources/flexcosim_env.txt) with the packages the process already imported,
 *   and log a warning naming both folders if they differ.
 *
 * Compiled by fmu.fmi.build.native_binary() against this Python's headers and fmpy's copy of
 * the FMI 2.0 headers.
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fmi2Functions.h"
#include "fmi_resources.h"

#define ENV_FILE "flexcosim_env.txt"
#define COMPONENT_MAGIC 0x464c5843u /* "FLXC" */
#define STATE_MAGIC 0x464c5853u     /* "FLXS" */
#define PATH_MAX_LEN 4096

/* -- the Python C API, resolved at run time ------------------------------------------ */

#define PYTHON_API(X)                                                                       \
    X(int, Py_IsInitialized, (void))                                                        \
    X(const char *, Py_GetVersion, (void))                                                  \
    X(void, PyConfig_InitPythonConfig, (PyConfig *))                                        \
    X(PyStatus, PyConfig_SetBytesString, (PyConfig *, wchar_t **, const char *))            \
    X(void, PyConfig_Clear, (PyConfig *))                                                   \
    X(PyStatus, Py_InitializeFromConfig, (const PyConfig *))                                \
    X(int, PyStatus_Exception, (PyStatus))                                                  \
    X(PyThreadState *, PyEval_SaveThread, (void))                                           \
    X(PyGILState_STATE, PyGILState_Ensure, (void))                                          \
    X(void, PyGILState_Release, (PyGILState_STATE))                                         \
    X(PyThreadState *, PyGILState_GetThisThreadState, (void))                               \
    X(void, Py_IncRef, (PyObject *))                                                        \
    X(void, Py_DecRef, (PyObject *))                                                        \
    X(PyObject *, PyErr_Occurred, (void))                                                   \
    X(void, PyErr_Fetch, (PyObject **, PyObject **, PyObject **))                           \
    X(void, PyErr_NormalizeException, (PyObject **, PyObject **, PyObject **))              \
    X(void, PyErr_Clear, (void))                                                            \
    X(int, PyException_SetTraceback, (PyObject *, PyObject *))                              \
    X(PyObject *, PyUnicode_InternFromString, (const char *))                               \
    X(PyObject *, PyObject_CallMethodObjArgs, (PyObject *, PyObject *, ...))                \
    X(PyObject *, PyObject_CallFunctionObjArgs, (PyObject *, ...))                          \
    X(PyObject *, PyObject_Call, (PyObject *, PyObject *, PyObject *))                      \
    X(PyObject *, PyObject_GetAttr, (PyObject *, PyObject *))                               \
    X(PyObject *, PyObject_Str, (PyObject *))                                               \
    X(int, PyObject_IsTrue, (PyObject *))                                                   \
    X(PyObject *, PyList_New, (Py_ssize_t))                                                 \
    X(int, PyList_SetItem, (PyObject *, Py_ssize_t, PyObject *))                            \
    X(PyObject *, PyList_GetItem, (PyObject *, Py_ssize_t))                                 \
    X(Py_ssize_t, PyList_Size, (PyObject *))                                                \
    X(int, PyList_SetSlice, (PyObject *, Py_ssize_t, Py_ssize_t, PyObject *))               \
    X(PyObject *, PyTuple_New, (Py_ssize_t))                                                \
    X(PyObject *, PyLong_FromUnsignedLong, (unsigned long))                                 \
    X(PyObject *, PyLong_FromLong, (long))                                                  \
    X(long, PyLong_AsLong, (PyObject *))                                                    \
    X(PyObject *, PyFloat_FromDouble, (double))                                             \
    X(double, PyFloat_AsDouble, (PyObject *))                                               \
    X(PyObject *, PyBool_FromLong, (long))                                                  \
    X(PyObject *, PyUnicode_FromString, (const char *))                                     \
    X(const char *, PyUnicode_AsUTF8, (PyObject *))                                         \
    X(PyObject *, PyBytes_FromStringAndSize, (const char *, Py_ssize_t))                    \
    X(int, PyBytes_AsStringAndSize, (PyObject *, char **, Py_ssize_t *))                    \
    X(PyObject *, PyDict_New, (void))                                                       \
    X(int, PyDict_SetItemString, (PyObject *, const char *, PyObject *))                    \
    X(PyObject *, PyDict_GetItemString, (PyObject *, const char *))                         \
    X(PyObject *, PyEval_GetBuiltins, (void))                                               \
    X(PyObject *, PyRun_StringFlags, (const char *, int, PyObject *, PyObject *, PyCompilerFlags *))

static struct {
#define API_FIELD(ret, name, args) ret(*name) args;
    PYTHON_API(API_FIELD)
#undef API_FIELD
    PyObject *none;
} py;

#define DECREF(o) py.Py_DecRef((PyObject *)(o))
#define XDECREF(o) do { if (o) py.Py_DecRef((PyObject *)(o)); } while (0)

/* Process-wide state: set once under init_lock, then read only. */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
/* Held (without the GIL) around the Python part of fmi2Instantiate: the GIL alone lets a
 * second thread see the slave module another thread is still executing (it switches
 * threads inside the import) and find no slave class in it. */
static pthread_mutex_t instantiate_lock = PTHREAD_MUTEX_INITIALIZER;
static int python_ready;             /* API resolved, interpreter running, helpers loaded */
static char python_failure[1024];    /* why Python cannot run in this process, if it cannot */
static PyObject *helpers;            /* namespace of HELPERS below */
static PyObject *load_slave_class, *describe_exception, *source_warnings;
static PyObject *s_setup_experiment, *s_enter_initialization_mode, *s_exit_initialization_mode,
    *s_terminate, *s_do_step, *s_get_real, *s_get_integer, *s_get_boolean, *s_get_string,
    *s_set_real, *s_set_integer, *s_set_boolean, *s_set_string, *s_get_fmu_state,
    *s_set_fmu_state, *s_to_bytes, *s_from_bytes, *s_get_log_queue, *s_status, *s_category, *s_msg,
    *s_fmu_time, *s_terminated;

/* Python code the wrapper needs; run once per process in a private namespace. */
static const char HELPERS[] =
    "import hashlib, importlib.util, os, sys, traceback\n"
    "\n"
    "EMBEDDED = ('mbdcore', 'controllers', 'fmu')\n"
    "_digests = {}  # folder -> source digest, computed once per process\n"
    "\n"
    "def recorded(resources):\n"
    "    # resources/flexcosim_env.txt as a dict\n"
    "    out = {}\n"
    "    with open(os.path.join(resources, 'flexcosim_env.txt'), encoding='utf-8') as f:\n"
    "        for line in f:\n"
    "            key, eq, value = line.rstrip('\\n').partition('=')\n"
    "            if eq and not key.startswith('#'):\n"
    "                out[key] = value\n"
    "    return out\n"
    "\n"
    "def source_digest(folder):\n"
    "    # the algorithm of fmu.fmi.build.source_digest\n"
    "    if folder not in _digests:\n"
    "        files = []\n"
    "        for root, dirs, names in os.walk(folder):\n"
    "            dirs[:] = [d for d in dirs if d != '__pycache__']\n"
    "            files += [os.path.join(root, n) for n in names if n.endswith(('.py', '.c', '.h'))]\n"
    "        digest = hashlib.sha256()\n"
    "        for rel in sorted(os.path.relpath(p, folder).replace(os.sep, '/') for p in files):\n"
    "            digest.update(rel.encode() + b'\\0')\n"
    "            with open(os.path.join(folder, rel), 'rb') as f:\n"
    "                digest.update(f.read() + b'\\0')\n"
    "        _digests[folder] = digest.hexdigest()\n"
    "    return _digests[folder]\n"
    "\n"
    "def source_warnings(resources):\n"
    "    # A process has one module per name: an FMU runs the embedded packages its host (or\n"
    "    # an FMU loaded before it) imported.  Other sources than its own: a warning each.\n"
    "    record, out = recorded(resources), []\n"
    "    for package in EMBEDDED:\n"
    "        expected, module = record.get('digest.' + package), sys.modules.get(package)\n"
    "        where = os.path.dirname(os.path.realpath(getattr(module, '__file__', None) or ''))\n"
    "        ours = os.path.realpath(os.path.join(resources, package))\n"
    "        if not expected or module is None or not where or where == ours:\n"
    "            continue\n"
    "        if source_digest(where) != expected:\n"
    "            out.append(f'this FMU runs the package {package!r} that this process imported from '\n"
    "                       f'{where}, whose sources differ from the copy embedded in the FMU at '\n"
    "                       f'{ours} (their source digests differ): results may differ from those of '\n"
    "                       f'the model the FMU was built from; run it in a process that has not '\n"
    "                       f'imported another {package} (a C host, or a Python process of its own)')\n"
    "    return out\n"
    "\n"
    "def load_slave_class(resources, module_name):\n"
    "    module_name = module_name.strip()\n"
    "    if not module_name.isidentifier():\n"
    "        raise ValueError(f'resources/slavemodule.txt should name the slave module, but '\n"
    "                         f'holds {module_name!r}')\n"
    "    path = os.path.join(resources, module_name + '.py')\n"
    "    if not os.path.isfile(path):\n"
    "        raise FileNotFoundError(f'resources/slavemodule.txt names module {module_name!r}, '\n"
    "                                f'but {path} does not exist')\n"
    "    if resources not in sys.path:\n"
    "        sys.path.insert(0, resources)\n"
    "    module = sys.modules.get(module_name)\n"
    "    same = module is not None and os.path.realpath(getattr(module, '__file__', None) or '')\\\n"
    "        == os.path.realpath(path)\n"
    "    if not same:\n"
    "        # Another FMU may have loaded a module of this name: keep it, load ours beside it.\n"
    "        spec = importlib.util.spec_from_file_location(module_name, path)\n"
    "        module = importlib.util.module_from_spec(spec)\n"
    "        registered = sys.modules.setdefault(module_name, module) is module\n"
    "        try:\n"
    "            spec.loader.exec_module(module)\n"
    "        except BaseException as exc:\n"
    "            if registered:\n"
    "                del sys.modules[module_name]\n"
    "            if isinstance(exc, ModuleNotFoundError) and exc.name and \\\n"
    "                    exc.name.partition('.')[0] not in EMBEDDED + (module_name,):\n"
    "                record = recorded(resources)\n"
    "                needs = record.get('requires') or 'numpy and scipy'\n"
    "                raise ModuleNotFoundError(\n"
    "                    f'this FMU needs the Python package {exc.name!r}, which the Python running '\n"
    "                    f'it ({sys.executable}, prefix {sys.prefix}) cannot import. The FMU needs '\n"
    "                    f'{needs}. It runs in the Python of a Python host, otherwise in the '\n"
    "                    f'environment it was built in ({record.get(\"executable\")}) or the one '\n"
    "                    f'FLEXCOSIM_PYTHONHOME names', name=exc.name) from exc\n"
    "            raise\n"
    "    classes = [c for c in vars(module).values() if isinstance(c, type)\n"
    "               and c.__module__ == module.__name__ and not getattr(c, '__abstractmethods__', None)\n"
    "               and any(b.__name__ == 'Fmi2Slave' for b in c.__mro__[1:])]\n"
    "    if not classes:\n"
    "        raise TypeError(f'{path} defines no Fmi2Slave subclass')\n"
    "    return max(classes, key=lambda c: (c.__name__ == module_name, len(c.__mro__)))\n"
    "\n"
    "def describe_exception(exc):\n"
    "    return ''.join(traceback.format_exception(exc)).rstrip()\n";

/* -- small utilities ------------------------------------------------------------------ */

static char *copy_string(const char *s) {
    size_t n = strlen(s ? s : "");
    char *out = malloc(n + 1);
    if (out) memcpy(out, s ? s : "", n + 1);
    return out;
}

static int file_exists(const char *path) {
    struct stat st;
    return path && path[0] && stat(path, &st) == 0;
}

/* A message waiting to be handed to the logger once the GIL is released. */
typedef struct Message {
    fmi2Status status;
    char *category;
    char *text;
    struct Message *next;
} Message;

/* The FMI 2.0 co-simulation states this wrapper tells apart (FMI 2.0 section 4.2.4).  A
 * refused (fmi2Discard) step leaves the slave at its last communication point, so the
 * instance stays in "step complete"; an fmi2Error leaves it usable (a refused value keeps
 * the old one), so there is no separate error state. */
enum {
    PHASE_INSTANTIATED = 1,
    PHASE_INITIALIZATION = 2,
    PHASE_STEP_COMPLETE = 4,
    PHASE_TERMINATED = 8,
    PHASE_ANY = 15
};

static const char *phase_name(int phase) {
    switch (phase) {
    case PHASE_INSTANTIATED: return "instantiated";
    case PHASE_INITIALIZATION: return "initialization mode";
    case PHASE_STEP_COMPLETE: return "step complete";
    case PHASE_TERMINATED: return "terminated";
    default: return "unknown";
    }
}

typedef struct {
    unsigned magic;
    int phase;                   /* one of PHASE_* */
    char *instance_name;
    fmi2CallbackFunctions functions;
    int logging_on;
    size_t n_categories;
    char **categories;
    char *resources;
    PyObject *slave_class, *slave, *log_queue, *kwargs;
    PyObject *strings;           /* keeps the values of the last fmi2GetString alive */
    double last_successful_time;
    Message *messages, *last_message;
} Component;

typedef struct {
    unsigned magic;
    PyObject *state;             /* what the slave's _get_fmu_state returned */
    PyObject *bytes;             /* its serialization, made on demand */
} StateBox;

static int category_enabled(const Component *c, fmi2Status status, const char *category) {
    if (status >= fmi2Error) return 1;
    if (!c->logging_on) return 0;
    if (c->n_categories == 0) return 1;
    for (size_t i = 0; i < c->n_categories; ++i)
        if (!strcmp(c->categories[i], category) || !strcmp(c->categories[i], "logAll")) return 1;
    return 0;
}

/* The logger takes a printf format, and '#' starts a variable reference: escape both. */
static void emit(const fmi2CallbackFunctions *f, const char *instance, fmi2Status status,
                 const char *category, const char *text) {
    if (!f || !f->logger) return;
    size_t n = strlen(text), extra = 0;
    for (size_t i = 0; i < n; ++i) extra += text[i] == '%' || text[i] == '#';
    char *escaped = malloc(n + extra + 1);
    if (!escaped) return;
    char *out = escaped;
    for (size_t i = 0; i < n; ++i) {
        if (text[i] == '%' || text[i] == '#') *out++ = text[i];
        *out++ = text[i];
    }
    *out = '\0';
    f->logger(f->componentEnvironment, instance ? instance : "", status, category, escaped);
    free(escaped);
}

static void queue_message(Component *c, fmi2Status status, const char *category, const char *text) {
    Message *m = calloc(1, sizeof *m);
    if (!m) return;
    m->status = status;
    m->category = copy_string(category);
    m->text = copy_string(text);
    if (c->last_message) c->last_message->next = m; else c->messages = m;
    c->last_message = m;
}

static void queue_format(Component *c, fmi2Status status, const char *fmt, ...) {
    char text[2048];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    queue_message(c, status, status >= fmi2Error ? "logStatusError" : "logAll", text);
}

/* Hand the queued messages to the host (without the GIL: the logger may block). */
static void flush_messages(Component *c) {
    Message *m = c->messages;
    c->messages = c->last_message = NULL;
    while (m) {
        Message *next = m->next;
        if (category_enabled(c, m->status, m->category))
            emit(&c->functions, c->instance_name, m->status, m->category, m->text);
        free(m->category);
        free(m->text);
        free(m);
        m = next;
    }
}

/* -- Python: loading and initialising --------------------------------------------------- */

typedef struct {
    char version[32], executable[PATH_MAX_LEN], prefix[PATH_MAX_LEN], stdlib[PATH_MAX_LEN],
        libpython[PATH_MAX_LEN], guid[128], module[256];
} Environment;

static void strip(char *s) {
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ')) s[--n] = '\0';
}

/* resources/flexcosim_env.txt: "key=value" lines written by fmu.fmi.build. */
static int read_environment(const char *resources, Environment *env, char *why, size_t nwhy) {
    char path[PATH_MAX_LEN + 64], line[PATH_MAX_LEN + 64];
    memset(env, 0, sizeof *env);
    snprintf(path, sizeof path, "%s/%s", resources, ENV_FILE);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, nwhy, "cannot read %s (%s): this FMU records there the Python environment "
                 "it was built for", path, strerror(errno));
        return 0;
    }
    while (fgets(line, sizeof line, f)) {
        strip(line);
        char *eq = strchr(line, '=');
        if (line[0] == '#' || !eq) continue;
        *eq = '\0';
        const char *key = line, *value = eq + 1;
#define FIELD(name) if (!strcmp(key, #name)) snprintf(env->name, sizeof env->name, "%s", value);
        FIELD(version) FIELD(executable) FIELD(prefix) FIELD(stdlib) FIELD(libpython) FIELD(guid)
#undef FIELD
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/slavemodule.txt", resources);
    f = fopen(path, "r");
    if (!f || !fgets(env->module, sizeof env->module, f)) {
        snprintf(why, nwhy, "cannot read %s: it names the Python module of the slave", path);
        if (f) fclose(f);
        return 0;
    }
    fclose(f);
    strip(env->module);
    if (!env->version[0] || !env->executable[0]) {
        snprintf(why, nwhy, "%s/%s lacks the version or executable of the Python environment",
                 resources, ENV_FILE);
        return 0;
    }
    return 1;
}

/* The prefix of a venv's base Python: "home = <prefix>/bin" in its pyvenv.cfg. */
static int venv_base(const char *cfg, char *base, size_t nbase) {
    char line[PATH_MAX_LEN + 64];
    FILE *f = fopen(cfg, "r");
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f)) {
        strip(line);
        char *eq = strchr(line, '=');
        if (!eq) continue;
        char *key_end = eq;
        while (key_end > line && key_end[-1] == ' ') --key_end;
        if ((size_t)(key_end - line) != 4 || strncmp(line, "home", 4)) continue;
        char *value = eq + 1;
        while (*value == ' ') ++value;
        snprintf(base, nbase, "%s", value);
        size_t n = strlen(base);
        while (n > 1 && base[n - 1] == '/') base[--n] = '\0';
        char *slash = strrchr(base, '/');
        if (slash && !strcmp(slash, "/bin")) *(slash == base ? slash + 1 : slash) = '\0';
        found = base[0] != '\0';
    }
    if (f) fclose(f);
    return found;
}

/* FLEXCOSIM_PYTHONHOME=<prefix of an environment> replaces the recorded one. */
static int apply_overrides(Environment *env, char *why, size_t nwhy) {
    const char *home = getenv("FLEXCOSIM_PYTHONHOME");
    const char *lib = getenv("FLEXCOSIM_LIBPYTHON");
    if (home && home[0]) {
        char candidate[PATH_MAX_LEN];
        snprintf(candidate, sizeof candidate, "%s/bin/python%s", home, env->version);
        if (!file_exists(candidate)) snprintf(candidate, sizeof candidate, "%s/bin/python3", home);
        if (!file_exists(candidate)) {
            snprintf(why, nwhy, "FLEXCOSIM_PYTHONHOME=%s has no bin/python%s or bin/python3",
                     home, env->version);
            return 0;
        }
        snprintf(env->executable, sizeof env->executable, "%s", candidate);
        snprintf(env->prefix, sizeof env->prefix, "%s", home);
        snprintf(candidate, sizeof candidate, "%s/pyvenv.cfg", home);
        char base[PATH_MAX_LEN];
        snprintf(base, sizeof base, "%s", home);
        if (file_exists(candidate)) {
            /* a venv: its base installation (pyvenv.cfg's "home", its bin folder) holds the
             * standard library and libpython, wherever the one recorded at build time went */
            env->stdlib[0] = '\0';
            if (!venv_base(candidate, base, sizeof base)) {
                snprintf(why, nwhy, "FLEXCOSIM_PYTHONHOME=%s is a virtual environment, but its "
                         "pyvenv.cfg names no \"home\" (the bin folder of its base Python)", home);
                return 0;
            }
        } else {
            snprintf(env->stdlib, sizeof env->stdlib, "%s/lib/python%s", home, env->version);
        }
        const char *names[] = {"lib/libpython%s.so.1.0", "lib/libpython%s.so", "lib64/libpython%s.so.1.0",
                               "lib/x86_64-linux-gnu/libpython%s.so.1.0"};
        int found = 0;
        for (int i = 0; i < 4 && !found; ++i) {
            char name[64];
            snprintf(name, sizeof name, names[i], env->version);
            snprintf(candidate, sizeof candidate, "%s/%s", base, name);
            if (file_exists(candidate)) {
                snprintf(env->libpython, sizeof env->libpython, "%s", candidate);
                found = 1;
            }
        }
        if (!found && !(lib && lib[0]) && !file_exists(env->libpython)) {
            snprintf(why, nwhy, "FLEXCOSIM_PYTHONHOME=%s: no libpython%s.so.1.0 in %s/lib (the %s), and "
                     "the one recorded at build time (%s) does not exist; set FLEXCOSIM_LIBPYTHON to the "
                     "libpython%s shared library of that Python (a Python built without --enable-shared "
                     "has none: such an environment can run this FMU in Python hosts only)",
                     home, env->version, base, strcmp(base, home) ? "base Python of this virtual "
                     "environment, from its pyvenv.cfg" : "environment's prefix",
                     env->libpython[0] ? env->libpython : "none", env->version);
            return 0;
        }
    }
    if (lib && lib[0]) snprintf(env->libpython, sizeof env->libpython, "%s", lib);
    return 1;
}

static int resolve_api(void *handle, char *why, size_t nwhy) {
#define API_RESOLVE(ret, name, args)                                                      \
    *(void **)(&py.name) = dlsym(handle, #name);                                          \
    if (!py.name) {                                                                       \
        snprintf(why, nwhy, "the Python library has no function %s", #name);             \
        return 0;                                                                         \
    }
    PYTHON_API(API_RESOLVE)
#undef API_RESOLVE
    py.none = (PyObject *)dlsym(handle, "_Py_NoneStruct");
    if (!py.none) {
        snprintf(why, nwhy, "the Python library has no _Py_NoneStruct");
        return 0;
    }
    return 1;
}

static int version_matches(const char *why_prefix, char *why, size_t nwhy) {
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.", PY_MAJOR_VERSION, PY_MINOR_VERSION);
    const char *running = py.Py_GetVersion();
    if (strncmp(running, expected, strlen(expected)) != 0) {
        snprintf(why, nwhy, "%s Python %.20s, but this FMU's binary was compiled for Python %d.%d",
                 why_prefix, running, PY_MAJOR_VERSION, PY_MINOR_VERSION);
        return 0;
    }
    return 1;
}

static int set_config_string(PyConfig *config, wchar_t **field, const char *value,
                             const char *what, char *why, size_t nwhy) {
    PyStatus status = py.PyConfig_SetBytesString(config, field, value);
    if (py.PyStatus_Exception(status)) {
        snprintf(why, nwhy, "cannot configure Python (%s = %s): %s", what, value,
                 status.err_msg ? status.err_msg : "unknown error");
        return 0;
    }
    return 1;
}

static PyObject *intern(const char *name) { return py.PyUnicode_InternFromString(name); }

/* Called with the GIL held. */
static int load_helpers(char *why, size_t nwhy) {
    helpers = py.PyDict_New();
    if (!helpers || py.PyDict_SetItemString(helpers, "__builtins__", py.PyEval_GetBuiltins()) < 0) {
        snprintf(why, nwhy, "cannot create the wrapper's Python namespace");
        return 0;
    }
    PyObject *done = py.PyRun_StringFlags(HELPERS, Py_file_input, helpers, helpers, NULL);
    if (!done) {
        py.PyErr_Clear();
        snprintf(why, nwhy, "the wrapper's Python helpers failed to run (is the standard library "
                 "of the recorded environment complete?)");
        return 0;
    }
    DECREF(done);
    load_slave_class = py.PyDict_GetItemString(helpers, "load_slave_class");
    describe_exception = py.PyDict_GetItemString(helpers, "describe_exception");
    source_warnings = py.PyDict_GetItemString(helpers, "source_warnings");
#define NAME(var, text) if (!(var = intern(text))) return 0;
    NAME(s_setup_experiment, "setup_experiment") NAME(s_enter_initialization_mode, "enter_initialization_mode")
    NAME(s_exit_initialization_mode, "exit_initialization_mode") NAME(s_terminate, "terminate")
    NAME(s_do_step, "do_step") NAME(s_get_real, "get_real") NAME(s_get_integer, "get_integer")
    NAME(s_get_boolean, "get_boolean") NAME(s_get_string, "get_string") NAME(s_set_real, "set_real")
    NAME(s_set_integer, "set_integer") NAME(s_set_boolean, "set_boolean") NAME(s_set_string, "set_string")
    NAME(s_get_fmu_state, "_get_fmu_state") NAME(s_set_fmu_state, "_set_fmu_state")
    NAME(s_to_bytes, "_fmu_state_to_bytes") NAME(s_from_bytes, "_fmu_state_from_bytes")
    NAME(s_get_log_queue, "_get_log_queue") NAME(s_status, "status") NAME(s_category, "category")
    NAME(s_msg, "msg") NAME(s_fmu_time, "_fmu_time")
    NAME(s_terminated, "_terminated")
#undef NAME
    return load_slave_class && describe_exception && source_warnings;
}

static __thread int thread_primed;

/* Take the GIL.  A thread Python does not know gets a thread state that it keeps, so
 * later calls only hand the GIL over (PyGILState_Ensure would otherwise create and
 * destroy a thread state on every call). */
static PyGILState_STATE enter_python(void) {
    if (!thread_primed) {
        if (!py.PyGILState_GetThisThreadState()) {
            py.PyGILState_Ensure();
            py.PyEval_SaveThread();
        }
        thread_primed = 1;
    }
    return py.PyGILState_Ensure();
}

static void leave_python(PyGILState_STATE gil) { py.PyGILState_Release(gil); }

/* Make Python usable in this process; on failure, why says what is wrong. */
static int start_python(const Environment *recorded, char *why, size_t nwhy) {
    pthread_mutex_lock(&init_lock);
    if (python_ready || python_failure[0]) goto done;

    Environment env = *recorded;
    if (!apply_overrides(&env, why, nwhy)) {
        pthread_mutex_unlock(&init_lock);
        return 0;  /* the next instantiation may come with other settings */
    }
    /* A Python host (fmpy): its interpreter, whichever library or executable holds it. */
    void *handle = RTLD_DEFAULT;
    int (*is_initialized)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    int host_python = is_initialized && is_initialized();
    if (!host_python) {
        const char *home = getenv("FLEXCOSIM_PYTHONHOME"), *lib = getenv("FLEXCOSIM_LIBPYTHON");
        if (lib && lib[0] && !file_exists(lib)) {
            snprintf(why, nwhy, "FLEXCOSIM_LIBPYTHON=%s does not exist; set it to the libpython%s "
                     "shared library of a Python %s environment with this project's dependencies "
                     "(or unset it)", lib, env.version, env.version);
            pthread_mutex_unlock(&init_lock);
            return 0;
        }
        if ((!env.libpython[0] || !file_exists(env.libpython)) && home && home[0]) {
            snprintf(why, nwhy, "the Python library %s (found from FLEXCOSIM_PYTHONHOME=%s) does "
                     "not exist; set FLEXCOSIM_LIBPYTHON to the libpython%s "
                     "shared library of that environment's Python", env.libpython[0] ? env.libpython
                     : "(none found)", home, env.version);
            pthread_mutex_unlock(&init_lock);
            return 0;
        }
        if (!env.libpython[0] || !file_exists(env.libpython)) {
            snprintf(why, nwhy, "the Python library %s of the environment this FMU was built for "
                     "(%s) does not exist; install that environment, or set FLEXCOSIM_PYTHONHOME "
                     "to the prefix of a Python %s environment with this project's dependencies "
                     "(or FLEXCOSIM_LIBPYTHON to its libpython)",
                     env.libpython[0] ? env.libpython : "(none recorded)", env.executable, env.version);
            pthread_mutex_unlock(&init_lock);
            return 0;
        }
        if (env.stdlib[0]) {
            char landmark[PATH_MAX_LEN + 16];
            snprintf(landmark, sizeof landmark, "%s/os.py", env.stdlib);
            if (!file_exists(landmark)) {
                snprintf(why, nwhy, "the Python standard library %s of the environment this FMU was "
                         "built for does not exist; set FLEXCOSIM_PYTHONHOME to the prefix of a "
                         "Python %s environment", env.stdlib, env.version);
                pthread_mutex_unlock(&init_lock);
                return 0;
            }
        }
        /* RTLD_GLOBAL: extension modules resolve the C API against this library. */
        handle = dlopen(env.libpython, RTLD_NOW | RTLD_GLOBAL);
        if (!handle) {
            snprintf(why, nwhy, "cannot load the Python library %s: %s", env.libpython, dlerror());
            pthread_mutex_unlock(&init_lock);
            return 0;
        }
    }
    if (!resolve_api(handle, why, nwhy) ||
        !version_matches(host_python ? "the host runs" : "the library holds", why, nwhy)) {
        pthread_mutex_unlock(&init_lock);
        return 0;
    }
    if (!py.Py_IsInitialized()) {
        PyConfig config;
        py.PyConfig_InitPythonConfig(&config);
        config.install_signal_handlers = 0;  /* the host owns SIGINT */
        config.use_environment = 0;          /* the host's PYTHONPATH is for its own Python */
        config.parse_argv = 0;
        config.configure_c_stdio = 0;
        /* The executable decides sys.prefix, a venv (pyvenv.cfg) and site-packages. */
        if (!set_config_string(&config, &config.program_name, env.executable, "program_name", why, nwhy) ||
            !set_config_string(&config, &config.executable, env.executable, "executable", why, nwhy) ||
            (getenv("FLEXCOSIM_PYTHONHOME") && env.stdlib[0] &&
             !set_config_string(&config, &config.home, env.prefix, "home", why, nwhy))) {
            py.PyConfig_Clear(&config);
            pthread_mutex_unlock(&init_lock);
            return 0;
        }
        PyStatus status = py.Py_InitializeFromConfig(&config);
        py.PyConfig_Clear(&config);
        if (py.PyStatus_Exception(status)) {
            snprintf(python_failure, sizeof python_failure, "Python %s (%s) failed to start: %s%s%s",
                     env.version, env.executable, status.func ? status.func : "",
                     status.func ? ": " : "", status.err_msg ? status.err_msg : "unknown error");
            goto done;
        }
        /* This thread holds the GIL and a thread state with a gilstate count of one: it
         * keeps the state (primed) and lets go of the GIL. */
        py.PyEval_SaveThread();
        thread_primed = 1;
    }
    PyGILState_STATE gil = enter_python();
    char helper_why[512] = "";
    if (!load_helpers(helper_why, sizeof helper_why))
        snprintf(python_failure, sizeof python_failure, "%s", helper_why[0] ? helper_why :
                 "cannot set up the wrapper's Python helpers");
    else
        python_ready = 1;
    leave_python(gil);
done:
    if (!python_ready) snprintf(why, nwhy, "%s", python_failure);
    pthread_mutex_unlock(&init_lock);
    return python_ready;
}

/* The pending Python exception as a logged fmi2Error (the GIL is held). */
static fmi2Status python_error(Component *c, const char *function) {
    PyObject *type = NULL, *value = NULL, *tb = NULL;
    py.PyErr_Fetch(&type, &value, &tb);
    py.PyErr_NormalizeException(&type, &value, &tb);
    if (tb && value) py.PyException_SetTraceback(value, tb);
    PyObject *text = value ? py.PyObject_CallFunctionObjArgs(describe_exception, value, NULL) : NULL;
    const char *utf8 = text ? py.PyUnicode_AsUTF8(text) : NULL;
    if (!utf8) py.PyErr_Clear();
    /* not queue_format: a traceback can be longer than its buffer, and its last line
     * (the exception) matters most */
    if (!utf8) utf8 = "(the exception could not be described)";
    size_t n = strlen(function) + strlen(utf8) + 40;
    char *message = malloc(n);
    if (message) {
        snprintf(message, n, "%s: Python raised an exception:\n%s", function, utf8);
        queue_message(c, fmi2Error, "logStatusError", message);
        free(message);
    }
    XDECREF(text);
    XDECREF(type);
    XDECREF(value);
    XDECREF(tb);
    return fmi2Error;
}

/* Move the slave's log queue to the component's messages (the GIL is held); returns
 * the worst status among them (fmi2OK if none). */
static fmi2Status drain_log_queue(Component *c) {
    fmi2Status worst = fmi2OK;
    if (!c->log_queue) return worst;
    Py_ssize_t n = py.PyList_Size(c->log_queue);
    if (n <= 0) {
        if (n < 0) py.PyErr_Clear();
        return worst;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject *item = py.PyList_GetItem(c->log_queue, i); /* borrowed */
        PyObject *status = py.PyObject_GetAttr(item, s_status);
        PyObject *category = py.PyObject_GetAttr(item, s_category);
        PyObject *msg = py.PyObject_GetAttr(item, s_msg);
        PyObject *text = msg ? py.PyObject_Str(msg) : NULL;
        PyObject *cat_text = category && category != py.none ? py.PyObject_Str(category) : NULL;
        long level = status ? py.PyLong_AsLong(status) : fmi2Error;
        const char *utf8 = text ? py.PyUnicode_AsUTF8(text) : NULL;
        const char *cat = cat_text ? py.PyUnicode_AsUTF8(cat_text) : NULL;
        if (py.PyErr_Occurred()) py.PyErr_Clear();
        if (level < fmi2OK || level > fmi2Pending) level = fmi2Error;
        if (level > worst && level <= fmi2Fatal) worst = (fmi2Status)level;
        queue_message(c, (fmi2Status)level, cat ? cat : "logAll",
                      utf8 ? utf8 : "(a message that could not be read)");
        XDECREF(status);
        XDECREF(category);
        XDECREF(msg);
        XDECREF(text);
        XDECREF(cat_text);
    }
    if (py.PyList_SetSlice(c->log_queue, 0, n, NULL) < 0) py.PyErr_Clear();
    return worst;
}

static PyObject *new_slave(Component *c) {
    PyObject *args = py.PyTuple_New(0);
    PyObject *slave = args ? py.PyObject_Call(c->slave_class, args, c->kwargs) : NULL;
    XDECREF(args);
    return slave;
}

/* -- resource location --------------------------------------------------------------- */

/* fmuResourceLocation as a directory (fmi_resources.h, shared with the C-source FMUs'
 * wrapper), which must exist. */
static int resource_path(const char *uri, char *out, size_t nout, char *why, size_t nwhy) {
    struct stat st;
    if (!fc_resource_path(uri, out, nout, why, nwhy)) return 0;
    if (stat(out, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, nwhy, "fmuResourceLocation %s: %s is not a directory", uri, out);
        return 0;
    }
    return 1;
}

/* -- FMI: instantiation ---------------------------------------------------------------- */

static void free_component(Component *c) {
    if (!c) return;
    flush_messages(c);
    for (size_t i = 0; i < c->n_categories; ++i) free(c->categories[i]);
    free(c->categories);
    free(c->instance_name);
    free(c->resources);
    c->magic = 0;
    free(c);
}

const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char *fmi2GetVersion(void) { return fmi2Version; }

fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                              fmi2String fmuResourceLocation,
                              const fmi2CallbackFunctions *functions, fmi2Boolean visible,
                              fmi2Boolean loggingOn) {
    char why[2048] = "", resources[PATH_MAX_LEN];
    const char *name = instanceName ? instanceName : "";
    if (!functions) return NULL;  /* nowhere to report anything */
    Environment env;
    if (fmuType != fmi2CoSimulation) {
        snprintf(why, sizeof why, "this FMU supports co-simulation only (fmuType %d requested)", (int)fmuType);
    } else if (resource_path(fmuResourceLocation, resources, sizeof resources, why, sizeof why) &&
               read_environment(resources, &env, why, sizeof why)) {
        if (env.guid[0] && (!fmuGUID || strcmp(env.guid, fmuGUID) != 0))
            snprintf(why, sizeof why, "fmuGUID %s does not match this FMU's %s", fmuGUID ? fmuGUID : "(null)", env.guid);
        else
            start_python(&env, why, sizeof why);
    }
    if (why[0]) {
        char text[2300];
        snprintf(text, sizeof text, "fmi2Instantiate failed: %s", why);
        emit(functions, name, fmi2Error, "logStatusError", text);
        return NULL;
    }

    Component *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->magic = COMPONENT_MAGIC;
    c->phase = PHASE_INSTANTIATED;
    c->instance_name = copy_string(name);
    c->resources = copy_string(resources);
    c->functions = *functions;
    c->logging_on = loggingOn != fmi2False;

    pthread_mutex_lock(&instantiate_lock);  /* before the GIL: never wait for it holding the GIL */
    PyGILState_STATE gil = enter_python();
    int ok = 0;
    PyObject *resources_str = py.PyUnicode_FromString(resources);
    PyObject *module_str = py.PyUnicode_FromString(env.module);
    c->kwargs = py.PyDict_New();
    if (resources_str && module_str && c->kwargs) {
        PyObject *visible_obj = py.PyBool_FromLong(visible != fmi2False);
        PyObject *name_str = py.PyUnicode_FromString(c->instance_name);
        ok = name_str && visible_obj &&
             py.PyDict_SetItemString(c->kwargs, "instance_name", name_str) == 0 &&
             py.PyDict_SetItemString(c->kwargs, "resources", resources_str) == 0 &&
             py.PyDict_SetItemString(c->kwargs, "visible", visible_obj) == 0;
        XDECREF(name_str);
        XDECREF(visible_obj);
        if (ok) c->slave_class = py.PyObject_CallFunctionObjArgs(load_slave_class, resources_str,
                                                                module_str, NULL);
        if (ok && c->slave_class) c->slave = new_slave(c);
        if (c->slave) {
            /* the embedded packages against those the process imported (a warning each) */
            PyObject *notes = py.PyObject_CallFunctionObjArgs(source_warnings, resources_str, NULL);
            Py_ssize_t n = notes ? py.PyList_Size(notes) : -1;
            for (Py_ssize_t i = 0; i < n; ++i) {
                const char *text = py.PyUnicode_AsUTF8(py.PyList_GetItem(notes, i));
                if (text) queue_message(c, fmi2Warning, "logStatusWarning", text);
            }
            if (n < 0 || py.PyErr_Occurred()) {
                py.PyErr_Clear();
                queue_format(c, fmi2Warning, "fmi2Instantiate: could not compare the embedded "
                             "sources with the packages this process imported");
            }
            XDECREF(notes);
        }
        if (c->slave) c->log_queue = py.PyObject_CallMethodObjArgs(c->slave, s_get_log_queue, NULL);
        ok = c->log_queue != NULL;
    }
    if (!ok) {
        if (py.PyErr_Occurred()) python_error(c, "fmi2Instantiate");
        else queue_format(c, fmi2Error, "fmi2Instantiate: out of memory");
    }
    drain_log_queue(c);
    XDECREF(resources_str);
    XDECREF(module_str);
    if (!ok) {
        XDECREF(c->log_queue);
        XDECREF(c->slave);
        XDECREF(c->slave_class);
        XDECREF(c->kwargs);
    }
    leave_python(gil);
    pthread_mutex_unlock(&instantiate_lock);
    if (!ok) {
        free_component(c);  /* flushes the messages: errors reach the logger in any case */
        return NULL;
    }
    flush_messages(c);
    return c;
}

static int valid(Component *c) { return c && c->magic == COMPONENT_MAGIC; }

/* A call the FMI 2.0 state machine does not allow in the instance's state. */
static fmi2Status wrong_phase(Component *c, const char *function, int allowed) {
    char states[128] = "";
    for (int p = 1; p < PHASE_ANY; p <<= 1)
        if (allowed & p) {
            size_t n = strlen(states);
            snprintf(states + n, sizeof states - n, "%s%s", n ? ", " : "", phase_name(p));
        }
    queue_format(c, fmi2Error, "%s is not allowed in state \"%s\" (FMI 2.0 allows it in: %s)",
                 function, phase_name(c->phase), states);
    flush_messages(c);
    return fmi2Error;
}

void fmi2FreeInstance(fmi2Component component) {
    Component *c = component;
    if (!valid(c)) return;
    PyGILState_STATE gil = enter_python();
    drain_log_queue(c);
    XDECREF(c->strings);
    XDECREF(c->log_queue);
    XDECREF(c->slave);
    XDECREF(c->slave_class);
    XDECREF(c->kwargs);
    leave_python(gil);
    free_component(c);
}

fmi2Status fmi2SetDebugLogging(fmi2Component component, fmi2Boolean loggingOn, size_t nCategories,
                               const fmi2String categories[]) {
    Component *c = component;
    if (!valid(c)) return fmi2Error;
    for (size_t i = 0; i < c->n_categories; ++i) free(c->categories[i]);
    free(c->categories);
    c->categories = NULL;
    c->n_categories = 0;
    c->logging_on = loggingOn != fmi2False;
    if (nCategories && categories) {
        c->categories = calloc(nCategories, sizeof *c->categories);
        if (!c->categories) return fmi2Error;
        for (size_t i = 0; i < nCategories; ++i) c->categories[c->n_categories++] = copy_string(categories[i]);
    }
    return fmi2OK;
}

/* A call into the slave: take the GIL, call, turn an exception into fmi2Error, hand the
 * messages over.  CALL_BEGIN declares `gil` and `status`. */
#define CALL_BEGIN_IN(component, allowed, function)                                          \
    Component *c = (component);                                                              \
    if (!valid(c)) return fmi2Error;                                                         \
    if (!(c->phase & (allowed))) return wrong_phase(c, function, allowed);                   \
    fmi2Status status = fmi2OK;                                                              \
    PyGILState_STATE gil = enter_python();

#define CALL_BEGIN(component) CALL_BEGIN_IN(component, PHASE_ANY, "")

#define GETTABLE (PHASE_INITIALIZATION | PHASE_STEP_COMPLETE | PHASE_TERMINATED)
#define SETTABLE (PHASE_INSTANTIATED | PHASE_INITIALIZATION | PHASE_STEP_COMPLETE)

#define CALL_END()                                                                           \
    drain_log_queue(c);                                                                      \
    leave_python(gil);                                                                       \
    flush_messages(c);                                                                       \
    return status;

/* result of a slave method that returns nothing interesting */
static fmi2Status done_call(Component *c, PyObject *result, const char *function) {
    if (!result) return python_error(c, function);
    DECREF(result);
    return fmi2OK;
}

fmi2Status fmi2SetupExperiment(fmi2Component component, fmi2Boolean toleranceDefined, fmi2Real tolerance,
                               fmi2Real startTime, fmi2Boolean stopTimeDefined, fmi2Real stopTime) {
    CALL_BEGIN_IN(component, PHASE_INSTANTIATED, "fmi2SetupExperiment")
    if (!isfinite(startTime) || (stopTimeDefined && !(stopTime >= startTime && !isnan(stopTime)))) {
        if (stopTimeDefined)
            queue_format(c, fmi2Error, "fmi2SetupExperiment: startTime = %.17g s, stopTime = %.17g s "
                         "refused: the start time must be finite and the stop time not before it",
                         startTime, stopTime);
        else
            queue_format(c, fmi2Error, "fmi2SetupExperiment: startTime = %.17g s refused: the start "
                         "time must be finite", startTime);
        status = fmi2Error;
        CALL_END()
    }
    PyObject *start = py.PyFloat_FromDouble(startTime);
    PyObject *stop = stopTimeDefined ? py.PyFloat_FromDouble(stopTime) : (py.Py_IncRef(py.none), py.none);
    PyObject *tol = toleranceDefined ? py.PyFloat_FromDouble(tolerance) : (py.Py_IncRef(py.none), py.none);
    PyObject *r = start && stop && tol
        ? py.PyObject_CallMethodObjArgs(c->slave, s_setup_experiment, start, stop, tol, NULL) : NULL;
    status = done_call(c, r, "fmi2SetupExperiment");
    c->last_successful_time = startTime;
    XDECREF(start);
    XDECREF(stop);
    XDECREF(tol);
    CALL_END()
}

fmi2Status fmi2EnterInitializationMode(fmi2Component component) {
    CALL_BEGIN_IN(component, PHASE_INSTANTIATED, "fmi2EnterInitializationMode")
    status = done_call(c, py.PyObject_CallMethodObjArgs(c->slave, s_enter_initialization_mode, NULL),
                       "fmi2EnterInitializationMode");
    if (status == fmi2OK) c->phase = PHASE_INITIALIZATION;
    CALL_END()
}

fmi2Status fmi2ExitInitializationMode(fmi2Component component) {
    CALL_BEGIN_IN(component, PHASE_INITIALIZATION, "fmi2ExitInitializationMode")
    status = done_call(c, py.PyObject_CallMethodObjArgs(c->slave, s_exit_initialization_mode, NULL),
                       "fmi2ExitInitializationMode");
    /* The slave builds the block here and logs (at fmi2Error) the parameter that keeps
     * it from being built: this call fails, and the instance stays in initialization mode
     * so that the host can set other values. */
    if (drain_log_queue(c) >= fmi2Error && status < fmi2Error) status = fmi2Error;
    if (status < fmi2Error) c->phase = PHASE_STEP_COMPLETE;
    CALL_END()
}

fmi2Status fmi2Terminate(fmi2Component component) {
    CALL_BEGIN_IN(component, PHASE_STEP_COMPLETE, "fmi2Terminate")
    status = done_call(c, py.PyObject_CallMethodObjArgs(c->slave, s_terminate, NULL), "fmi2Terminate");
    c->phase = PHASE_TERMINATED;
    CALL_END()
}

fmi2Status fmi2Reset(fmi2Component component) {
    /* pythonfmu's contract: a reset slave is a new instance of the class. */
    CALL_BEGIN_IN(component, PHASE_ANY, "fmi2Reset")
    drain_log_queue(c);
    PyObject *slave = new_slave(c);
    PyObject *queue = slave ? py.PyObject_CallMethodObjArgs(slave, s_get_log_queue, NULL) : NULL;
    if (!queue) {
        status = python_error(c, "fmi2Reset");
        XDECREF(slave);
    } else {
        DECREF(c->slave);
        DECREF(c->log_queue);
        c->slave = slave;
        c->log_queue = queue;
        c->last_successful_time = 0.0;
        c->phase = PHASE_INSTANTIATED;
    }
    CALL_END()
}

static PyObject *reference_list(const fmi2ValueReference vr[], size_t nvr) {
    PyObject *list = py.PyList_New((Py_ssize_t)nvr);
    for (size_t i = 0; list && i < nvr; ++i) {
        PyObject *item = py.PyLong_FromUnsignedLong(vr[i]);
        if (!item || py.PyList_SetItem(list, (Py_ssize_t)i, item) < 0) {
            DECREF(list);
            return NULL;
        }
    }
    return list;
}

/* get_<type>(vrs) -> list of nvr values; returns a new reference or NULL (logged). */
static PyObject *get_values(Component *c, PyObject *method, const fmi2ValueReference vr[], size_t nvr,
                            const char *function, fmi2Status *status) {
    PyObject *vrs = reference_list(vr, nvr);
    PyObject *values = vrs ? py.PyObject_CallMethodObjArgs(c->slave, method, vrs, NULL) : NULL;
    XDECREF(vrs);
    if (!values) {
        *status = python_error(c, function);
        return NULL;
    }
    /* an unknown value reference, or an output that cannot be computed: the slave logs
     * it (naming it) and fills in a placeholder; the call fails */
    if (drain_log_queue(c) >= fmi2Error) *status = fmi2Error;
    Py_ssize_t n = py.PyList_Size(values);
    if (n != (Py_ssize_t)nvr) {
        if (n < 0) py.PyErr_Clear();
        queue_format(c, fmi2Error, "%s: the slave returned %zd values for %zu value references",
                     function, n, nvr);
        DECREF(values);
        *status = fmi2Error;
        return NULL;
    }
    return values;
}

#define CHECK_ARRAYS(vr, nvr, value, function)                                              \
    if (nvr && (!vr || !value)) {                                                           \
        queue_format(c, fmi2Error, "%s: NULL array for %zu values", function, (size_t)nvr); \
        status = fmi2Error;                                                                 \
        CALL_END()                                                                          \
    }

fmi2Status fmi2GetReal(fmi2Component component, const fmi2ValueReference vr[], size_t nvr, fmi2Real value[]) {
    CALL_BEGIN_IN(component, GETTABLE, "fmi2GetReal")
    CHECK_ARRAYS(vr, nvr, value, "fmi2GetReal")
    PyObject *values = get_values(c, s_get_real, vr, nvr, "fmi2GetReal", &status);
    for (size_t i = 0; values && i < nvr; ++i) {
        value[i] = py.PyFloat_AsDouble(py.PyList_GetItem(values, (Py_ssize_t)i));
        if (value[i] == -1.0 && py.PyErr_Occurred()) {
            status = python_error(c, "fmi2GetReal");
            break;
        }
    }
    XDECREF(values);
    CALL_END()
}

fmi2Status fmi2GetInteger(fmi2Component component, const fmi2ValueReference vr[], size_t nvr, fmi2Integer value[]) {
    CALL_BEGIN_IN(component, GETTABLE, "fmi2GetInteger")
    CHECK_ARRAYS(vr, nvr, value, "fmi2GetInteger")
    PyObject *values = get_values(c, s_get_integer, vr, nvr, "fmi2GetInteger", &status);
    for (size_t i = 0; values && i < nvr; ++i) {
        long v = py.PyLong_AsLong(py.PyList_GetItem(values, (Py_ssize_t)i));
        if (v == -1 && py.PyErr_Occurred()) {
            status = python_error(c, "fmi2GetInteger");
            break;
        }
        if (v < INT32_MIN || v > INT32_MAX) {
            queue_format(c, fmi2Error, "fmi2GetInteger: value %ld of reference %u exceeds 32 bits", v, vr[i]);
            status = fmi2Error;
            break;
        }
        value[i] = (fmi2Integer)v;
    }
    XDECREF(values);
    CALL_END()
}

fmi2Status fmi2GetBoolean(fmi2Component component, const fmi2ValueReference vr[], size_t nvr, fmi2Boolean value[]) {
    CALL_BEGIN_IN(component, GETTABLE, "fmi2GetBoolean")
    CHECK_ARRAYS(vr, nvr, value, "fmi2GetBoolean")
    PyObject *values = get_values(c, s_get_boolean, vr, nvr, "fmi2GetBoolean", &status);
    for (size_t i = 0; values && i < nvr; ++i) {
        int v = py.PyObject_IsTrue(py.PyList_GetItem(values, (Py_ssize_t)i));
        if (v < 0) {
            status = python_error(c, "fmi2GetBoolean");
            break;
        }
        value[i] = v ? fmi2True : fmi2False;
    }
    XDECREF(values);
    CALL_END()
}

fmi2Status fmi2GetString(fmi2Component component, const fmi2ValueReference vr[], size_t nvr, fmi2String value[]) {
    CALL_BEGIN_IN(component, GETTABLE, "fmi2GetString")
    CHECK_ARRAYS(vr, nvr, value, "fmi2GetString")
    PyObject *values = get_values(c, s_get_string, vr, nvr, "fmi2GetString", &status);
    PyObject *texts = values ? py.PyList_New((Py_ssize_t)nvr) : NULL;
    for (size_t i = 0; texts && i < nvr; ++i) {
        PyObject *text = py.PyObject_Str(py.PyList_GetItem(values, (Py_ssize_t)i));
        const char *utf8 = text ? py.PyUnicode_AsUTF8(text) : NULL;
        if (!utf8) {
            XDECREF(text);
            status = python_error(c, "fmi2GetString");
            break;
        }
        py.PyList_SetItem(texts, (Py_ssize_t)i, text);  /* the list keeps the text alive */
        value[i] = utf8;
    }
    if (texts && status == fmi2OK) {
        /* valid until the next fmi2GetString on this instance */
        XDECREF(c->strings);
        c->strings = texts;
    } else {
        XDECREF(texts);
    }
    XDECREF(values);
    CALL_END()
}

/* set_<type>(vrs, values) with values made by make(i) */
#define SET_VALUES(method, function, make)                                                  \
    CALL_BEGIN_IN(component, SETTABLE, function)                                            \
    CHECK_ARRAYS(vr, nvr, value, function)                                                  \
    PyObject *vrs = reference_list(vr, nvr);                                                \
    PyObject *values = vrs ? py.PyList_New((Py_ssize_t)nvr) : NULL;                         \
    for (size_t i = 0; values && i < nvr; ++i) {                                            \
        PyObject *item = make;                                                              \
        if (!item || py.PyList_SetItem(values, (Py_ssize_t)i, item) < 0) {                  \
            DECREF(values);                                                                 \
            values = NULL;                                                                  \
        }                                                                                   \
    }                                                                                       \
    PyObject *r = values ? py.PyObject_CallMethodObjArgs(c->slave, method, vrs, values, NULL) : NULL; \
    status = done_call(c, r, function);                                                     \
    /* a value the slave refused (NaN, out of range: it logs an error and keeps the old  \
     * value) makes the setter return fmi2Error, as the standard asks */                  \
    if (drain_log_queue(c) >= fmi2Error && status < fmi2Error) status = fmi2Error;          \
    XDECREF(vrs);                                                                           \
    XDECREF(values);                                                                        \
    CALL_END()

fmi2Status fmi2SetReal(fmi2Component component, const fmi2ValueReference vr[], size_t nvr, const fmi2Real value[]) {
    SET_VALUES(s_set_real, "fmi2SetReal", py.PyFloat_FromDouble(value[i]))
}

fmi2Status fmi2SetInteger(fmi2Component component, const fmi2ValueReference vr[], size_t nvr, const fmi2Integer value[]) {
    SET_VALUES(s_set_integer, "fmi2SetInteger", py.PyLong_FromLong(value[i]))
}

fmi2Status fmi2SetBoolean(fmi2Component component, const fmi2ValueReference vr[], size_t nvr, const fmi2Boolean value[]) {
    SET_VALUES(s_set_boolean, "fmi2SetBoolean", py.PyBool_FromLong(value[i] != fmi2False))
}

fmi2Status fmi2SetString(fmi2Component component, const fmi2ValueReference vr[], size_t nvr, const fmi2String value[]) {
    SET_VALUES(s_set_string, "fmi2SetString", py.PyUnicode_FromString(value[i] ? value[i] : ""))
}

/* -- FMU state ------------------------------------------------------------------------- */

static StateBox *state_box(Component *c, fmi2FMUstate state, const char *function) {
    StateBox *box = state;
    if (!box || box->magic != STATE_MAGIC) {
        queue_format(c, fmi2Error, "%s: not an FMU state of this FMU", function);
        return NULL;
    }
    return box;
}

/* Store a new state object in *FMUstate, reusing the box the host passes back. */
static fmi2Status store_state(Component *c, PyObject *state, fmi2FMUstate *FMUstate) {
    StateBox *box = *FMUstate;
    if (box && box->magic == STATE_MAGIC) {
        XDECREF(box->state);
        XDECREF(box->bytes);
    } else {
        box = calloc(1, sizeof *box);
        if (!box) {
            DECREF(state);
            queue_format(c, fmi2Error, "out of memory for an FMU state");
            return fmi2Error;
        }
        box->magic = STATE_MAGIC;
    }
    box->state = state;
    box->bytes = NULL;
    *FMUstate = box;
    return fmi2OK;
}

fmi2Status fmi2GetFMUstate(fmi2Component component, fmi2FMUstate *FMUstate) {
    CALL_BEGIN(component)
    PyObject *state = FMUstate ? py.PyObject_CallMethodObjArgs(c->slave, s_get_fmu_state, NULL) : NULL;
    if (!FMUstate) {
        queue_format(c, fmi2Error, "fmi2GetFMUstate: FMUstate is NULL");
        status = fmi2Error;
    } else if (!state) {
        status = python_error(c, "fmi2GetFMUstate");
    } else if (state == py.none) {
        DECREF(state);
        queue_format(c, fmi2Error, "fmi2GetFMUstate: the slave could not save its state");
        status = fmi2Error;
    } else {
        status = store_state(c, state, FMUstate);
    }
    CALL_END()
}

fmi2Status fmi2SetFMUstate(fmi2Component component, fmi2FMUstate FMUstate) {
    CALL_BEGIN(component)
    StateBox *box = state_box(c, FMUstate, "fmi2SetFMUstate");
    PyObject *r = box ? py.PyObject_CallMethodObjArgs(c->slave, s_set_fmu_state, box->state, NULL) : NULL;
    if (!box) {
        status = fmi2Error;
    } else if (!r) {
        status = python_error(c, "fmi2SetFMUstate");
    } else {
        /* BlockSlave returns False (and logs why) instead of raising. */
        if (r != py.none && py.PyObject_IsTrue(r) == 0) status = fmi2Error;
        DECREF(r);
    }
    CALL_END()
}

fmi2Status fmi2FreeFMUstate(fmi2Component component, fmi2FMUstate *FMUstate) {
    CALL_BEGIN(component)
    if (FMUstate && *FMUstate) {
        StateBox *box = state_box(c, *FMUstate, "fmi2FreeFMUstate");
        if (box) {
            XDECREF(box->state);
            XDECREF(box->bytes);
            box->magic = 0;
            free(box);
            *FMUstate = NULL;
        } else {
            status = fmi2Error;
        }
    }
    CALL_END()
}

/* The state's bytes (made once per state); NULL on failure (logged). */
static PyObject *state_bytes(Component *c, StateBox *box, const char *function, fmi2Status *status) {
    if (!box->bytes) {
        box->bytes = py.PyObject_CallMethodObjArgs(c->slave_class, s_to_bytes, box->state, NULL);
        if (!box->bytes) {
            *status = python_error(c, function);
            return NULL;
        }
    }
    char *data;
    Py_ssize_t size;
    if (py.PyBytes_AsStringAndSize(box->bytes, &data, &size) < 0) {
        *status = python_error(c, function);
        DECREF(box->bytes);
        box->bytes = NULL;
    }
    return box->bytes;
}

fmi2Status fmi2SerializedFMUstateSize(fmi2Component component, fmi2FMUstate FMUstate, size_t *size) {
    CALL_BEGIN(component)
    StateBox *box = state_box(c, FMUstate, "fmi2SerializedFMUstateSize");
    PyObject *bytes = box ? state_bytes(c, box, "fmi2SerializedFMUstateSize", &status) : NULL;
    if (!box) status = fmi2Error;
    if (bytes && size) {
        char *data;
        Py_ssize_t n;
        py.PyBytes_AsStringAndSize(bytes, &data, &n);
        *size = (size_t)n;
    }
    CALL_END()
}

fmi2Status fmi2SerializeFMUstate(fmi2Component component, fmi2FMUstate FMUstate, fmi2Byte serializedState[],
                                 size_t size) {
    CALL_BEGIN(component)
    StateBox *box = state_box(c, FMUstate, "fmi2SerializeFMUstate");
    PyObject *bytes = box ? state_bytes(c, box, "fmi2SerializeFMUstate", &status) : NULL;
    if (!box) status = fmi2Error;
    if (bytes) {
        char *data;
        Py_ssize_t n;
        py.PyBytes_AsStringAndSize(bytes, &data, &n);
        if ((size_t)n > size || !serializedState) {
            queue_format(c, fmi2Error, "fmi2SerializeFMUstate: the state needs %zd bytes, the "
                         "buffer has %zu (ask fmi2SerializedFMUstateSize)", n, size);
            status = fmi2Error;
        } else {
            memcpy(serializedState, data, (size_t)n);
        }
    }
    CALL_END()
}

fmi2Status fmi2DeSerializeFMUstate(fmi2Component component, const fmi2Byte serializedState[], size_t size,
                                   fmi2FMUstate *FMUstate) {
    CALL_BEGIN(component)
    PyObject *bytes = serializedState ? py.PyBytes_FromStringAndSize(serializedState, (Py_ssize_t)size) : NULL;
    PyObject *state = bytes ? py.PyObject_CallMethodObjArgs(c->slave_class, s_from_bytes, bytes, NULL) : NULL;
    if (!FMUstate || !serializedState) {
        queue_format(c, fmi2Error, "fmi2DeSerializeFMUstate: NULL argument");
        status = fmi2Error;
        XDECREF(state);
    } else if (!state) {
        status = python_error(c, "fmi2DeSerializeFMUstate");
    } else if (state == py.none) {
        DECREF(state);
        queue_format(c, fmi2Error, "fmi2DeSerializeFMUstate: these %zu bytes are not a serialized "
                     "state of this FMU", size);
        status = fmi2Error;
    } else {
        *FMUstate = NULL;
        status = store_state(c, state, FMUstate);
    }
    XDECREF(bytes);
    CALL_END()
}

/* -- stepping ---------------------------------------------------------------------------- */

fmi2Status fmi2DoStep(fmi2Component component, fmi2Real currentCommunicationPoint,
                      fmi2Real communicationStepSize, fmi2Boolean noSetFMUStatePriorToCurrentPoint) {
    (void)noSetFMUStatePriorToCurrentPoint;
    CALL_BEGIN_IN(component, PHASE_STEP_COMPLETE, "fmi2DoStep")
    /* The step must start where the slave is (after a step, a restored state, a reset). */
    PyObject *now_obj = py.PyObject_CallMethodObjArgs(c->slave, s_fmu_time, NULL);
    double now = now_obj ? py.PyFloat_AsDouble(now_obj) : NAN;
    XDECREF(now_obj);
    if (py.PyErr_Occurred()) {
        status = python_error(c, "fmi2DoStep");
        CALL_END()
    }
    if (!isfinite(currentCommunicationPoint) ||
        !(fabs(currentCommunicationPoint - now) <= 1e-9 * (1.0 + fabs(now)))) {
        queue_format(c, fmi2Error, "fmi2DoStep: currentCommunicationPoint = %.17g s refused: it "
                     "must be finite and equal the time the FMU is at, %.17g s (the end of the last "
                     "step, the start time or the time of a restored FMU state)",
                     currentCommunicationPoint, now);
        status = fmi2Error;
        CALL_END()
    }
    PyObject *t = py.PyFloat_FromDouble(currentCommunicationPoint);
    PyObject *h = py.PyFloat_FromDouble(communicationStepSize);
    PyObject *r = t && h ? py.PyObject_CallMethodObjArgs(c->slave, s_do_step, t, h, NULL) : NULL;
    if (!r) {
        status = python_error(c, "fmi2DoStep");
    } else {
        int advanced = py.PyObject_IsTrue(r);
        if (advanced < 0) status = python_error(c, "fmi2DoStep");
        else if (!advanced) status = fmi2Discard;  /* the slave says why in its log */
        else c->last_successful_time = currentCommunicationPoint + communicationStepSize;
        DECREF(r);
    }
    XDECREF(t);
    XDECREF(h);
    CALL_END()
}

/* Functions this FMU does not provide: an error with a message. */
static fmi2Status unsupported(fmi2Component component, const char *function, const char *reason) {
    Component *c = component;
    if (!valid(c)) return fmi2Error;
    queue_format(c, fmi2Error, "%s is not supported: %s", function, reason);
    flush_messages(c);
    return fmi2Error;
}

fmi2Status fmi2CancelStep(fmi2Component c) {
    return unsupported(c, "fmi2CancelStep", "fmi2DoStep never returns fmi2Pending");
}

fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                       const fmi2Integer order[], const fmi2Real value[]) {
    (void)vr; (void)nvr; (void)order; (void)value;
    return unsupported(c, "fmi2SetRealInputDerivatives", "canInterpolateInputs is false");
}

fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                        const fmi2Integer order[], fmi2Real value[]) {
    (void)vr; (void)nvr; (void)order; (void)value;
    return unsupported(c, "fmi2GetRealOutputDerivatives", "maxOutputDerivativeOrder is 0");
}

fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown_ref[], size_t nUnknown,
                                        const fmi2ValueReference vKnown_ref[], size_t nKnown,
                                        const fmi2Real dvKnown[], fmi2Real dvUnknown[]) {
    (void)vUnknown_ref; (void)nUnknown; (void)vKnown_ref; (void)nKnown; (void)dvKnown; (void)dvUnknown;
    return unsupported(c, "fmi2GetDirectionalDerivative", "providesDirectionalDerivative is false");
}

fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *value) {
    (void)s; (void)value;
    return valid(c) ? fmi2Discard : fmi2Error;  /* only asked after fmi2Pending, never returned */
}

fmi2Status fmi2GetRealStatus(fmi2Component component, const fmi2StatusKind s, fmi2Real *value) {
    Component *c = component;
    if (!valid(c) || !value) return fmi2Error;
    if (s != fmi2LastSuccessfulTime) return fmi2Discard;
    *value = c->last_successful_time;
    return fmi2OK;
}

fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *value) {
    (void)s; (void)value;
    return valid(c) ? fmi2Discard : fmi2Error;
}

/* fmi2Terminated, which a host may ask after fmi2Discard (FMI 2.0 section 4.2.3): the slave
 * says whether the model cannot go on (true: a hard limit, or the same step refused again
 * unchanged) or a shorter step may pass (false).  fmpy retries a step it was told may pass
 * with the same size, for ever; the second identical refusal answers true. */
fmi2Status fmi2GetBooleanStatus(fmi2Component component, const fmi2StatusKind s, fmi2Boolean *value) {
    if (!value) return fmi2Error;
    if (s != fmi2Terminated) return valid((Component *)component) ? fmi2Discard : fmi2Error;
    CALL_BEGIN_IN(component, PHASE_STEP_COMPLETE | PHASE_TERMINATED, "fmi2GetBooleanStatus")
    PyObject *r = py.PyObject_CallMethodObjArgs(c->slave, s_terminated, NULL);
    int terminated = r ? py.PyObject_IsTrue(r) : -1;
    XDECREF(r);
    if (terminated < 0) status = python_error(c, "fmi2GetBooleanStatus");
    else *value = terminated ? fmi2True : fmi2False;
    CALL_END()
}

fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *value) {
    (void)s; (void)value;
    return valid(c) ? fmi2Discard : fmi2Error;
}
