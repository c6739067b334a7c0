"""The one build path of the project's C: kernels, the FMI wrapper, C-source FMU binaries.

Standard library only, so that ``setup.py`` loads this file by its path while the package
is being built (before numpy or anything else is importable), and the installed package
uses the same code at run time.

* **Kernels** (every ``native/`` folder's C that Python calls) are compiled when the
  package is built (``pip install .``, ``pip wheel .``), never at run time: each is a
  CPython extension module whose bindings are generated here from the C source itself.
  A function the C file marks with its API macro (``ARM_API int arm_rhs(const double
  *tab, ...)``) is parsed (:func:`api_functions`) and gets a wrapper
  (:func:`binding_source`) that takes a C-contiguous buffer of the right item type (a
  numpy array, a ``bytearray``, a ctypes object), an address (an int) or None for a
  pointer, and a Python number for a scalar; so the declaration exists once, in C.  The
  module also carries the digest of the sources it was built from (:func:`source_digest`),
  which ``mbdcore.native`` compares with the installed sources before first use, and the
  addresses of its functions (for C code that calls another kernel through a pointer).
* **Table layouts**: a kernel's numeric table is declared once, as an X-macro list of its
  fields in the C source (``#define ARM_LAYOUT(X) X(INT, nm, 1) X(ARRAY, phi1, nq1 * nm)
  ...``, the macros of ``mbdcore/native/table_layout.h``), from which C gets its struct
  and reader; :func:`table_layouts` reads the same list, and the module carries it
  (``TABLE_LAYOUTS``) with functions per table that return what C made of it (the
  members' offsets in its struct, ``table_struct_<TABLE>``; what its reader reads from
  a table, field by field, ``table_echo_<TABLE>``), so that Python packs by name
  (``mbdcore.native.TableLayout``) what C reads by name.
* **C-source FMU binaries** and test programs: :func:`compile_shared` runs the C
  compiler (``$CC``, else ``cc`` or ``gcc``) where one exists; :func:`find_compiler` says
  whether one does.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CParameter", "CFunction", "api_functions", "binding_source", "source_digest",
           "TableField", "table_layouts", "TABLE_LAYOUT_HEADER", "TABLE_KINDS",
           "STRUCT_KINDS", "POINTER_KINDS", "TABLE_INT_LIMIT", "find_compiler", "compile_shared", "CompileError",
           "C99_FLAGS", "NOT_CODE", "code_files", "skeleton_digest", "Platform", "PLATFORMS"]

#: Flags of every C99 build (kernels' sources are C99; a C FMU's build line uses them too).
C99_FLAGS = ("-std=c99", "-O2", "-Wall", "-Wextra")


class CompileError(RuntimeError):
    """A C compilation failed, or no compiler is there (the message says which)."""


# -- what a kernel exports -----------------------------------------------------------------

_SCALARS = {"double": "d", "float": "d", "int": "i", "long": "l", "size_t": "n",
            "long long": "L", "unsigned": "I", "unsigned int": "I"}
# item type of a pointer argument: (buffer format characters accepted, item size)
_POINTEES = {"double": ("d", 8), "int": ("i", 4), "char": ("bBc", 1), "void": ("", 0)}


@dataclass(frozen=True)
class CParameter:
    """One parameter of an exported C function: its name, its C type without ``const``,
    and for a pointer whether the function may write through it."""

    name: str
    ctype: str
    pointer: bool
    writable: bool

    @property
    def pointee(self) -> str:
        """The pointed-to type for a buffer check (``void`` for structs and ``void *``)."""
        return self.ctype if self.ctype in _POINTEES else "void"


@dataclass(frozen=True)
class CFunction:
    """An exported C function: name, return type, parameters, variadic or not."""

    name: str
    restype: str
    parameters: tuple
    variadic: bool = False


_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def _parameter(text: str, function: str) -> CParameter:
    words = text.replace("*", " * ").split()
    const = "const" in words
    words = [w for w in words if w != "const"]
    stars = words.count("*")
    words = [w for w in words if w != "*"]
    if len(words) < 2 or stars > 1:
        raise ValueError(f"{function}: cannot bind parameter {text.strip()!r} "
                         "(a named scalar or a single pointer is needed)")
    name, ctype = words[-1], " ".join(words[:-1])
    if not stars and ctype not in _SCALARS:
        raise ValueError(f"{function}: parameter {name!r} of type {ctype!r} is not a "
                         f"bindable scalar ({', '.join(_SCALARS)}) or pointer")
    return CParameter(name, ctype, bool(stars), bool(stars) and not const)


def api_functions(source: str, macro: str) -> list[CFunction]:
    """The functions of C ``source`` marked with ``macro`` (``ARM_API``), parsed from
    their definitions: the C file is the one declaration of a kernel's interface."""
    text = _COMMENT.sub(" ", source)
    functions = []
    pattern = re.compile(rf"^\s*{re.escape(macro)}\s+([\w\s\*]+?)\b(\w+)\s*\(([^)]*)\)\s*\{{", re.M)
    for match in pattern.finditer(text):
        restype, name, params = (" ".join(match.group(1).split()), match.group(2),
                                 " ".join(match.group(3).split()))
        restype = restype.replace(" *", "*").strip()
        if restype not in ("void", *_SCALARS, "const char*"):
            raise ValueError(f"{name}: return type {restype!r} cannot be bound")
        parts = [p.strip() for p in params.split(",")] if params not in ("", "void") else []
        variadic = bool(parts) and parts[-1] == "..."
        if variadic:
            parts = parts[:-1]
        functions.append(CFunction(name, restype, tuple(_parameter(p, name) for p in parts),
                                   variadic))
    if not functions:
        raise ValueError(f"no function marked {macro} in the source")
    return functions


# -- numeric tables declared once --------------------------------------------------------

#: The macros that turn a table's X-macro list into C (struct members, reader, echo).
TABLE_LAYOUT_HEADER = Path(__file__).resolve().parent / "native" / "table_layout.h"

#: Field kinds of a flat table: an integer stored as a double, a number, an array of
#: numbers.
TABLE_KINDS = ("INT", "REAL", "ARRAY")
#: The further kinds of a layout that declares a C struct only: an array the kernel
#: writes (scratch), an array of C ints, an array of C ints the kernel writes, an
#: untyped address, a function pointer (its C type in the size's place).
STRUCT_KINDS = ("WORK", "INTS", "IWORK", "ADDRESS", "FN")
#: The kinds of a struct's fields that point to ``size`` elements.
POINTER_KINDS = ("ARRAY", "WORK", "INTS", "IWORK")
#: The largest magnitude of an INT field (``TABLE_INT_LIMIT`` of the header): a size, a
#: product of up to three INT fields, stays within a C long.
TABLE_INT_LIMIT = 10**6

_TABLE_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+_LAYOUT)\(X\)[ \t]*((?:[^\n]*\\\n)*[^\n]*)", re.M)
_SIZE_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_]\w*)|([-+*()]))")


@dataclass(frozen=True)
class TableField:
    """One field of a table layout: its kind (:data:`TABLE_KINDS`), name, and size, an
    integer C expression of earlier INT fields (``"1"`` for INT and REAL)."""

    kind: str
    name: str
    size: str


def _entries(body: str, table: str) -> list[list[str]]:
    """The argument lists of the X(...) entries of a macro body, split at top-level
    commas; anything else in the body is refused naming the table."""
    entries, i = [], 0
    while True:
        while i < len(body) and body[i].isspace():
            i += 1
        if i == len(body):
            return entries
        if not body.startswith("X(", i):
            raise ValueError(f"table {table}: expected X(kind, name, size) at "
                             f"{body[i:i + 30]!r}")
        depth, args, start, i = 1, [], i + 2, i + 2
        while depth:
            if i == len(body):
                raise ValueError(f"table {table}: unbalanced brackets")
            c = body[i]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            if (c == "," and depth == 1) or depth == 0:
                args.append(body[start:i].strip())
                start = i + 1
            i += 1
        entries.append(args)


def _check_size(size: str, ints: set, table: str, name: str) -> str:
    """``size`` normalised, if it is an expression of integers, earlier INT fields
    ``ints``, + - * and brackets (so C and Python evaluate it alike)."""
    tokens, pos = [], 0
    while pos < len(size):
        match = _SIZE_TOKEN.match(size, pos)
        if not match or match.end() == pos:
            raise ValueError(f"table {table}: the size of field {name!r}, {size!r}, is not "
                             "an expression of integers, earlier INT fields, + - * ()")
        number, word, op = match.groups()
        if word is not None and word not in ints:
            raise ValueError(f"table {table}: the size of field {name!r} uses {word!r}, "
                             "which is no earlier INT field")
        tokens.append(number or word or op)
        pos = match.end()
    if not tokens:
        raise ValueError(f"table {table}: field {name!r} has no size")
    return " ".join(tokens).replace("( ", "(").replace(" )", ")")


def table_layouts(source: str) -> dict[str, tuple]:
    """The table layouts declared in C ``source``: every ``#define NAME_LAYOUT(X)`` macro, an
    X-macro list ``X(kind, name, size) ...`` (``mbdcore/native/table_layout.h``), as
    name -> tuple of :class:`TableField` in order; a malformed list is a ValueError
    naming the table and the field."""
    layouts = {}
    for match in _TABLE_MACRO.finditer(_COMMENT.sub(" ", source)):
        table, body = match.group(1), match.group(2).replace("\\\n", " ")
        fields, ints = [], set()
        for args in _entries(body, table):
            if len(args) != 3:
                raise ValueError(f"table {table}: X({', '.join(args)}) needs kind, name, size")
            kind, name, size = args
            if kind not in TABLE_KINDS + STRUCT_KINDS:
                raise ValueError(f"table {table}: field {name!r} has kind {kind!r}; "
                                 f"accepted: {', '.join(TABLE_KINDS + STRUCT_KINDS)}")
            if not re.fullmatch(r"[A-Za-z_]\w*", name) or name.startswith("tl_"):
                raise ValueError(f"table {table}: {name!r} is no field name (a C identifier "
                                 "not starting with tl_)")
            if any(f.name == name for f in fields):
                raise ValueError(f"table {table}: field {name!r} is declared twice")
            if kind == "FN":
                if not re.fullmatch(r"[A-Za-z_]\w*", size):
                    raise ValueError(f"table {table}: the FN field {name!r} needs its C "
                                     f"function pointer type, not {size!r}")
                fields.append(TableField(kind, name, size))
                continue
            size = _check_size(size, ints, table, name)
            if kind not in POINTER_KINDS and size != "1":
                raise ValueError(f"table {table}: the {kind} field {name!r} has size {size!r}; "
                                 "a scalar's size is 1")
            fields.append(TableField(kind, name, size))
            if kind == "INT":
                ints.add(name)
        if not fields:
            raise ValueError(f"table {table}: no field")
        layouts[table] = tuple(fields)
    return layouts


def _table_checks(table: str, fields) -> tuple[str, list]:
    """C of the functions by which the module's layouts are checked against the C that
    ``table_layout.h`` makes of them: ``table_struct_<table>(out)``, the offset of each
    member of the struct and its size; for a flat table (no struct-only kind)
    ``table_echo_<table>(tab, out)``, what the reader reads from ``tab``, field by field."""
    out = CParameter("out", "double", True, True)
    code = (f"typedef struct {{ {table}(TABLE_MEMBER) }} fc_{table}_t;\n"
            f"#define TABLE_STRUCT fc_{table}_t\n"
            f"static long table_struct_{table}(double *tl_out) {{\n"
            f"    {table}(TABLE_OFFSET)\n"
            f"    return (long)sizeof(fc_{table}_t);\n}}\n"
            "#undef TABLE_STRUCT\n")
    functions = [CFunction(f"table_struct_{table}", "long", (out,))]
    if all(f.kind in TABLE_KINDS for f in fields):
        code += (f"TABLE_READER({table}, fc_{table}_t, fc_read_{table})\n"
                 f"static long table_echo_{table}(const double *tl_tab, double *tl_out) {{\n"
                 f"    fc_{table}_t fields, *tl_s = &fields;\n"
                 f"    long n = fc_read_{table}(tl_tab, tl_s);\n"
                 f"    if (n) {{ {table}(TABLE_ECHO) }}\n"
                 "    return n;\n}\n")
        functions.append(CFunction(f"table_echo_{table}", "long",
                                   (CParameter("tab", "double", True, False), out)))
    return code, functions


def source_digest(paths) -> str:
    """SHA-256 (hex, 16 characters) of the files' bytes in order: the identity of a
    kernel's sources, built into its module and checked against the installed files."""
    digest = hashlib.sha256()
    for path in paths:
        data = Path(path).read_bytes()
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()[:16]


#: The files of a C-source FMU's ``sources/`` that are not its code: its numbers, which
#: ``fmu.fmi.export_c`` keeps apart so that exports of one model structure share their
#: code, and the build description.
NOT_CODE = ("model_data.c", "buildDescription.xml")


def code_files(folder) -> dict:
    """The code of a C FMU: every file of its ``sources/`` ``folder`` but
    :data:`NOT_CODE`, by name."""
    return {p.name: p for p in sorted(Path(folder).iterdir())
            if p.is_file() and p.name not in NOT_CODE}


def skeleton_digest(files) -> str:
    """The identity of a C FMU's code, from its files by name (:func:`code_files`, or
    the same names mapped to the package's files): exports with the same digest differ
    in their numbers only, so one binary serves them all (the binaries compiled with
    the package are found by it)."""
    files = dict(files)
    digest = hashlib.sha256()
    for name in sorted(files):
        data = Path(files[name]).read_bytes()
        digest.update(name.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()[:16]


# -- the generated CPython module -------------------------------------------------------------

_PRELUDE = r'''/* Generated by mbdcore.cbuild: the CPython bindings of a kernel's API functions.
   Do not edit; the declarations are the C sources' own. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* A pointer argument: None (NULL), an int (an address) or a C-contiguous buffer whose
   items are of the declared type ("" accepts any); a writable one where C writes. */
static int fc_pointer(PyObject *o, const char *fn, const char *arg, const char *formats,
                      Py_ssize_t itemsize, int writable, Py_buffer *view, int *held,
                      void **out) {
    *held = 0;
    if (o == Py_None) { *out = NULL; return 0; }
    if (PyLong_Check(o)) {
        *out = PyLong_AsVoidPtr(o);
        return PyErr_Occurred() ? -1 : 0;
    }
    if (PyObject_GetBuffer(o, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT
                           | (writable ? PyBUF_WRITABLE : 0)) < 0) {
        PyErr_Format(PyExc_TypeError, "%s: argument '%s' must be a C-contiguous%s buffer, "
                     "an address or None, not %.80s", fn, arg, writable ? " writable" : "",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    *held = 1;
    if (itemsize) {
        const char *f = view->format ? view->format : "B";
        if (*f == '<' || *f == '=' || *f == '@') ++f;
        if (view->itemsize != itemsize || f[0] == 0 || f[1] != 0 || !strchr(formats, f[0])) {
            PyErr_Format(PyExc_TypeError, "%s: argument '%s' has items of format '%s' "
                         "(%zd bytes); expected '%s' of %zd bytes", fn, arg, view->format,
                         view->itemsize, formats, itemsize);
            PyBuffer_Release(view);
            *held = 0;
            return -1;
        }
    }
    *out = view->buf;
    return 0;
}

static int fc_double(PyObject *o, double *out) {
    *out = PyFloat_AsDouble(o);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

static int fc_integer(PyObject *o, long long lo, long long hi, const char *fn,
                      const char *arg, long long *out) {
    PyObject *index = PyNumber_Index(o);
    if (!index) return -1;
    *out = PyLong_AsLongLong(index);
    Py_DECREF(index);
    if (*out == -1 && PyErr_Occurred()) return -1;
    if (*out < lo || *out > hi) {
        PyErr_Format(PyExc_OverflowError, "%s: argument '%s' = %lld is out of the range of "
                     "its C type", fn, arg, *out);
        return -1;
    }
    return 0;
}
'''

_LIMITS = {"int": ("INT_MIN", "INT_MAX"), "long": ("LONG_MIN", "LONG_MAX"),
           "size_t": ("0", "LLONG_MAX"), "long long": ("LLONG_MIN", "LLONG_MAX"),
           "unsigned": ("0", "UINT_MAX"), "unsigned int": ("0", "UINT_MAX")}


def _wrapper(f: CFunction) -> str:
    n = len(f.parameters)
    lines = [f"static PyObject *fc_{f.name}(PyObject *self, PyObject *const *args, "
             "Py_ssize_t nargs) {",
             "    (void)self;",
             f"    if (nargs != {n}) {{",
             f'        PyErr_Format(PyExc_TypeError, "{f.name}() takes {n} arguments '
             '(%zd given)", nargs);',
             "        return NULL;", "    }"]
    if any(p.pointer for p in f.parameters):
        k = sum(p.pointer for p in f.parameters)
        lines += [f"    Py_buffer views[{k}]; int held[{k}] = {{0}}; int i;"]
    decl, call, convert = [], [], []
    slot = 0
    for i, p in enumerate(f.parameters):
        if p.pointer:
            formats, size = _POINTEES[p.pointee]
            decl.append(f"    void *a{i};")
            convert.append(
                f'    if (fc_pointer(args[{i}], "{f.name}", "{p.name}", "{formats}", {size}, '
                f"{int(p.writable)}, &views[{slot}], &held[{slot}], &a{i}) < 0) goto done;")
            call.append(f"a{i}")
            slot += 1
        elif p.ctype in ("double", "float"):
            decl.append(f"    double a{i};")
            convert.append(f"    if (fc_double(args[{i}], &a{i}) < 0) goto done;")
            call.append(f"({p.ctype})a{i}")
        else:
            lo, hi = _LIMITS[p.ctype]
            decl.append(f"    long long a{i};")
            convert.append(f'    if (fc_integer(args[{i}], {lo}, {hi}, "{f.name}", "{p.name}", '
                           f"&a{i}) < 0) goto done;")
            call.append(f"({p.ctype})a{i}")
    lines += decl + ["    PyObject *result = NULL;"] + convert
    invocation = f"{f.name}({', '.join(call)})"
    result = {"void": f"    {invocation};\n    result = Py_NewRef(Py_None);",
              "double": f"    result = PyFloat_FromDouble((double){invocation});",
              "float": f"    result = PyFloat_FromDouble((double){invocation});",
              "const char*": f"    {{ const char *s = {invocation}; "
                             "result = s ? PyUnicode_FromString(s) : Py_NewRef(Py_None); }"}
    lines.append(result.get(f.restype, f"    result = PyLong_FromLongLong((long long){invocation});"))
    if any(p.pointer for p in f.parameters):
        lines += ["done:", f"    for (i = 0; i < {slot}; ++i) if (held[i]) PyBuffer_Release(&views[i]);"]
    else:
        lines += ["    goto done;", "done:"]
    lines += ["    return result;", "}", ""]
    return "\n".join(lines)


def _declaration(p: CParameter) -> str:
    const = "const " if p.pointer and not p.writable else ""
    return f"{const}{p.ctype}{' *' if p.pointer else ' '}{p.name}"


def binding_source(module: str, sources, api_macros, headers=(), digest: str = "") -> str:
    """The C text of the extension module ``module`` (a dotted name): ``sources`` included
    in order as one translation unit, a wrapper per function marked by one of
    ``api_macros``, ``SOURCE_DIGEST`` (of ``sources`` then ``headers``: the files the
    build read) and ``ADDRESSES`` (name -> address of every API function)."""
    sources = [Path(s) for s in sources]
    functions = []
    for source in sources:
        text = source.read_text()
        for macro in api_macros:
            if re.search(rf"^\s*{re.escape(macro)}\s", _COMMENT.sub(" ", text), re.M):
                functions += api_functions(text, macro)
    if not functions:
        raise ValueError(f"{module}: no API function in {', '.join(map(str, sources))}")
    layouts = {}
    for source in sources:
        layouts.update(table_layouts(source.read_text()))
    short = module.rsplit(".", 1)[-1]
    digest = digest or source_digest([*sources, *headers])
    parts = [_PRELUDE, "#include <limits.h>", ""]
    parts += [f'#include "{s.name}"' for s in sources]
    parts.append("")
    for table, fields in layouts.items():   # after the sources, whose headers define the macros
        code, checks = _table_checks(table, fields)
        parts.append(code)
        functions += checks
    text = json.dumps({t: [[f.kind, f.name, f.size] for f in fields]
                       for t, fields in layouts.items()})
    layouts_c = text.replace("\\", "\\\\").replace('"', '\\"')
    parts += [_wrapper(f) for f in functions if not f.variadic]
    methods = [f'    {{"{f.name}", (PyCFunction)(void (*)(void))fc_{f.name}, METH_FASTCALL, '
               f'"{f.restype} {f.name}({", ".join(map(_declaration, f.parameters))})"}},'
               for f in functions if not f.variadic]
    addresses = "\n".join(
        f'    if (!(v = PyLong_FromVoidPtr((void *)&{f.name})) || '
        f'PyDict_SetItemString(d, "{f.name}", v) < 0) {{ Py_XDECREF(v); goto fail; }}\n'
        "    Py_DECREF(v);" for f in functions)
    parts.append(f"""static PyMethodDef fc_methods[] = {{
{chr(10).join(methods)}
    {{NULL, NULL, 0, NULL}}
}};

static struct PyModuleDef fc_module = {{
    PyModuleDef_HEAD_INIT, "{module}", "Compiled kernel of {', '.join(s.name for s in sources)}.",
    -1, fc_methods, NULL, NULL, NULL, NULL
}};

PyMODINIT_FUNC PyInit_{short}(void) {{
    PyObject *m = PyModule_Create(&fc_module), *d = NULL, *v = NULL;
    if (!m) return NULL;
    if (PyModule_AddStringConstant(m, "SOURCE_DIGEST", "{digest}") < 0) goto fail;
    if (PyModule_AddStringConstant(m, "TABLE_LAYOUTS", "{layouts_c}") < 0) goto fail;
    if (!(d = PyDict_New())) goto fail;
{addresses}
    if (PyModule_AddObject(m, "ADDRESSES", d) < 0) goto fail;
    return m;
fail:
    Py_XDECREF(d);
    Py_DECREF(m);
    return NULL;
}}
""")
    return "\n".join(parts)


# -- compiling at run time (C-source FMUs, test programs) -----------------------------------

@dataclass(frozen=True)
class Platform:
    """An FMI platform a shared library can be built for here: its name in an FMU's
    ``binaries/`` folder, the variable that names its compiler and the compilers tried
    after it, the library's suffix and the flags that make one."""

    name: str
    compiler_variable: str
    compilers: tuple[str, ...]
    suffix: str
    shared_flags: tuple[str, ...]
    install_hint: str


#: The platforms of a C-source FMU's binaries: this machine's (64-bit Linux) and 64-bit
#: Windows, cross-compiled with MinGW-w64 where it is installed (Debian's ``mingw-w64``).
#: The Windows DLL links the C runtime statically where it can (``-static-libgcc``), so it
#: imports only KERNEL32.dll and msvcrt.dll, which every Windows has.
PLATFORMS = {
    "linux64": Platform("linux64", "CC", ("cc", "gcc"), ".so",
                        ("-shared", "-fPIC", "-fvisibility=hidden"),
                        "set CC, or install gcc or clang"),
    "win64": Platform("win64", "CC_WIN64", ("x86_64-w64-mingw32-gcc",), ".dll",
                      ("-shared", "-static-libgcc"),
                      "set CC_WIN64, or install MinGW-w64 (Debian: apt install mingw-w64)"),
}


def find_compiler(platform: str = "linux64") -> str | None:
    """The C compiler building for ``platform`` here (:data:`PLATFORMS`: for this
    machine ``$CC``, else ``cc``, else ``gcc``; for win64 ``$CC_WIN64``, else
    ``x86_64-w64-mingw32-gcc``), or None."""
    target = PLATFORMS[platform]
    for candidate in (os.environ.get(target.compiler_variable), *target.compilers):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    return None


def compile_shared(sources, output, *, include_dirs=(), flags=C99_FLAGS, libraries=("m",),
                   cwd=None, shared: bool = True, warnings_are_errors: bool = False,
                   platform: str = "linux64") -> Path:
    """Compile C ``sources`` into the shared library (or, ``shared=False``, the program)
    ``output`` for ``platform`` (:data:`PLATFORMS`; default this machine) with its
    compiler here; :class:`CompileError` names what failed."""
    target = PLATFORMS[platform]
    compiler = find_compiler(platform)
    if compiler is None:
        raise CompileError(f"no C compiler for {platform} found ({target.install_hint})")
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(f"{output.name}.{os.getpid()}.tmp")
    command = [compiler, *flags, *(target.shared_flags if shared else ()),
               *(f"-I{d}" for d in include_dirs), *map(str, sources), "-o", str(partial),
               *(f"-l{lib}" for lib in libraries)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
    if done.returncode != 0 or (warnings_are_errors and done.stderr.strip()):
        partial.unlink(missing_ok=True)
        raise CompileError(f"compiling {', '.join(Path(s).name for s in sources)} "
                           f"{'failed' if done.returncode else 'warned'}:\n"
                           f"{' '.join(command)}\n{done.stderr.strip()}")
    os.replace(partial, output)     # atomic: a concurrent reader never sees half a file
    return output
