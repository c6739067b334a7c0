"""The C structures Python filled for compiled kernels, written out as C99 for a
C-source FMU.

A compiled model in process is a graph of ctypes structures (a ``newton_t`` whose
``terms_ctx`` points at a ``system_terms_t``, whose ``plan_data`` points at a
``plan_t``, ...) with pointers into numpy arrays, into other structures and to
functions of the kernels.  :class:`CImage` finds every memory region those pointers
reach (the arrays and structures held by the objects given as ``owners``), and writes

* C declarations of static storage for each region (``double R3[40];``, ``int R4[12];``,
  ``plan_t R5;``, a typed array of function or structure pointers), so nothing is
  allocated;
* a function ``image_setup(const double *table)`` that fills them from one flat table
  of numbers (:attr:`CImage.table`: every array's values, ints exactly as doubles, every
  scalar member of every structure; an array of zeros, a kernel's scratch mostly, is
  cleared instead) and sets every pointer (to a region plus an offset,
  a structure, a function by its name, or NULL).

So the code holds the structure (sizes, offsets, which pointer goes where) and no number
that a parameter decides; the numbers travel as a table (``CModel.tables``).  A pointer
to memory none of the owners holds, a structure or function of unknown C type, or an
offset that is not a whole element is a :class:`ImageError` naming the member.
"""
from __future__ import annotations

import ctypes
import gc
import sys

import numpy as np

from mbdcore.codegen import CModelError

__all__ = ["CImage", "ImageError", "kernel_functions"]


class ImageError(CModelError):
    """A structure graph that cannot be written as C (module docstring): the model has no
    C form (a kernel structure this module does not know, e.g. the spatial cables')."""


def kernel_functions(modules) -> dict:
    """address -> C name of every function of the kernel extension modules named in
    ``modules`` that are loaded (their ``ADDRESSES``; one not loaded has no function a
    structure could point to)."""
    names = {}
    for module in modules:
        mod = sys.modules.get(module)
        if mod is None:
            continue
        for name, address in mod.ADDRESSES.items():
            names[int(address)] = name
    return names


def _regions(owners):
    """The numpy arrays and ctypes objects reachable from ``owners``: (start address,
    size in bytes, object), the arrays by their outermost base; and the addresses of
    the empty arrays (a pointer to one is never read: NULL in C)."""
    seen, stack, found, empty = set(), list(owners), {}, set()
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            base = obj
            while isinstance(base.base, np.ndarray):
                base = base.base
            if base.size and base.flags.c_contiguous:
                found[base.ctypes.data] = (base.ctypes.data, base.nbytes, base)
            elif not base.size:
                empty.add(base.ctypes.data)
            continue
        if isinstance(obj, (ctypes.Structure, ctypes.Array)):
            found.setdefault(ctypes.addressof(obj), (ctypes.addressof(obj),
                                                     ctypes.sizeof(obj), obj))
            stack.extend(getattr(obj, "__dict__", {}).values())
            continue
        if isinstance(obj, (str, bytes, int, float, bool, type(None), type)) or \
                callable(obj) and not hasattr(obj, "__dict__"):
            continue
        if isinstance(obj, (dict, list, tuple, set, frozenset)) or \
                type(obj).__module__.startswith(("mbdcore", "fmu", "controllers")):
            stack.extend(gc.get_referents(obj))
    return sorted(found.values(), key=lambda r: r[0]), empty


class CImage:
    """The structures reachable from ``roots`` as C (module docstring).

    Parameters
    ----------
    roots : dict of str to ctypes.Structure
        The structures the model's code names (``{"newton": ..., "scheme": ...}``):
        each becomes a region whose C name is :meth:`name` of its address.
    owners : list
        Objects that hold every array and structure the pointers reach.
    struct_types : dict of str to str
        The C type of each ctypes structure class, by class name (else the class's own
        ``c_type`` attribute, where a kernel's module declares it).
    functions : dict of int to str
        Function addresses to their C names (:func:`kernel_functions`).
    pointer_arrays : dict of (str, str) to str
        The C element type of a ctypes array of pointers, by (C type of the structure
        that points at it, member name): ``("system_terms_t", "body_fn"):
        "body_force_fn"``.
    casts : dict of (str, str) to str
        The C type a function is cast to where a member's pointer type names its
        argument as ``const void *`` and the function its own structure (``("system_terms_t",
        "plan"): "plan_fn"``: the same call as in process, where C gets the address).
    """

    def __init__(self, roots: dict, owners, struct_types: dict, functions: dict,
                 pointer_arrays: dict, casts: dict | None = None):
        self._regions, self._empty = _regions(list(owners) + list(roots.values()))
        self._starts = np.array([r[0] for r in self._regions], dtype=np.uint64)
        self.struct_types, self.functions = struct_types, functions
        self.pointer_arrays, self.casts = pointer_arrays, dict(casts or {})
        self._names: dict[int, str] = {}      # region start -> C name
        self._types: dict[int, str] = {}      # region start -> element C type
        self._order: list[int] = []
        self.table: list[float] = []
        self._statements: list[str] = []
        self.roots = {}
        for name, st in roots.items():
            self.roots[name] = self._visit(ctypes.addressof(st), name, None)
        self.table = np.array(self.table, dtype=float)

    # -- regions -------------------------------------------------------------------
    def _region(self, address: int, what: str):
        k = int(np.searchsorted(self._starts, np.uint64(address), side="right")) - 1
        if k >= 0:
            start, size, obj = self._regions[k]
            # an array's end too (a pointer past its last element, where its count is 0)
            if start <= address < start + size or \
                    address == start + size and isinstance(obj, np.ndarray):
                return start, obj
        raise ImageError(f"{what}: a pointer to memory no owner holds ({address:#x})")

    def _visit(self, address: int, what: str, element: str | None) -> str:
        """The C expression of a pointer to ``address`` (a region, visited once)."""
        start, obj = self._region(address, what)
        if start not in self._names:
            name = f"R{len(self._names)}"
            self._names[start] = name
            self._order.append(start)
            self._emit(start, name, obj, what, element)
        name = self._names[start]
        if isinstance(obj, np.ndarray):
            size = obj.dtype.itemsize
            if (address - start) % size:
                raise ImageError(f"{what}: a pointer into an element of {name}")
            offset = (address - start) // size
            return name if offset == 0 else f"{name} + {offset}"
        if address != start:
            raise ImageError(f"{what}: a pointer into the middle of a structure")
        return name if isinstance(obj, ctypes.Array) else f"&{name}"

    def _emit(self, start, name, obj, what, element):
        at = len(self.table)
        if isinstance(obj, np.ndarray):
            flat = obj.ravel()
            if obj.dtype in (np.float64, np.int32) and not flat.any():
                # zeros (scratch, mostly): cleared, not carried in the table
                kind = "double" if obj.dtype == np.float64 else "int"
                self._types[start] = f"static {kind} {name}[{flat.size}];"
                self._statements.append(
                    f"    memset({name}, 0, {flat.size} * sizeof({kind}));")
                return
            if obj.dtype == np.float64:
                self._types[start] = f"static double {name}[{flat.size}];"
                self._statements.append(
                    f"    memcpy({name}, table + {at}, {flat.size} * sizeof(double));")
            elif obj.dtype == np.int32:
                self._types[start] = f"static int {name}[{flat.size}];"
                self._statements.append(f"    for (k = 0; k < {flat.size}; ++k) "
                                        f"{name}[k] = (int)table[{at} + k];")
            else:
                raise ImageError(f"{what}: an array of {obj.dtype} (float64 or int32 only)")
            self.table.extend(float(x) for x in flat)
            return
        if isinstance(obj, ctypes.Array):
            if element is None:
                raise ImageError(f"{what}: an array of pointers of unknown C type")
            self._types[start] = f"static {element} {name}[{len(obj)}];"
            for k, value in enumerate(obj):
                self._statements.append(f"    {name}[{k}] = "
                                        f"{self._pointer(value, f'{what}[{k}]', None)};")
            return
        ctype = self.struct_types.get(type(obj).__name__, getattr(type(obj), "c_type", None))
        if ctype is None:
            raise ImageError(f"{what}: a structure {type(obj).__name__} of unknown C type")
        self._types[start] = f"static {ctype} {name};"
        for field, kind in obj._fields_:
            value = getattr(obj, field)
            if kind is ctypes.c_void_p:
                elem = self.pointer_arrays.get((ctype, field))
                target = self._pointer(value, f"{ctype}.{field}", elem)
                if (ctype, field) in self.casts and value in self.functions:
                    target = f"({self.casts[ctype, field]}){target}"
                self._statements.append(f"    {name}.{field} = {target};")
            elif kind in (ctypes.c_int, ctypes.c_double):
                cast = "(int)" if kind is ctypes.c_int else ""
                self._statements.append(f"    {name}.{field} = {cast}table[{len(self.table)}];")
                self.table.append(float(value))
            else:
                raise ImageError(f"{ctype}.{field}: a member of type {kind.__name__}")

    def _pointer(self, value, what, element) -> str:
        if not value:
            return "NULL"
        if value in self.functions:
            return self.functions[value]
        if value in self._empty:
            return "NULL"
        return self._visit(int(value), what, element)

    # -- what the model's code uses --------------------------------------------------
    def name(self, array) -> str:
        """The C expression of a pointer to the first element of ``array`` (a numpy
        array the image holds)."""
        return self._visit(array.ctypes.data, "array", None)

    def declarations(self) -> str:
        return "\n".join(self._types[s] for s in self._order)

    def setup_function(self, name: str = "image_setup") -> str:
        """``static void NAME(const double *table)``: fills the regions and sets the
        pointers."""
        return (f"static void {name}(const double *table)\n{{\n    int k;\n    (void)k;\n"
                + "\n".join(self._statements) + "\n}\n")
