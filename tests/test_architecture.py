"""The layer picture of docs/architecture.md, checked on the source.

The project's import graph is read with ``ast`` (imports inside functions included, so
a lazy import cannot hide a cycle).  Layers, lowest first; a module may import its own
layer and the layers below it, never above:

    mbdcore (blocks, jit) < mbdcore.integrators < mbdcore.dae < mbdcore.multibody
    < mbdcore.spatial < mbdcore.models < fmu.fmi < fmu.cosim < controllers.laws < controllers.evaluation
    < controllers.design
    < flexcosim (application: command line, demo)

Looking a module up by name (``importlib.import_module``) is the application's
(``flexcosim.catalog.resolve``: its commands and models, imported only when a command
runs), the system files' Python blocks' (``fmu.cosim.file_rules``) and the C kernels' extension
modules' (``mbdcore.native``) alone; the application's
names (``flexcosim.catalog.LOOKUPS``) count as imports of ``flexcosim.cli``, so the
rules below see them.
"""
from __future__ import annotations

import ast
import fnmatch
import importlib
import importlib.util
import tomllib
from pathlib import Path

import pytest

from flexcosim.catalog import LOOKUPS

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("mbdcore", "fmu", "controllers", "flexcosim")

#: Layers, lowest first; a module belongs to the longest prefix that names it.
LAYERS = (
    "mbdcore",
    "mbdcore.integrators",
    "mbdcore.dae",
    "mbdcore.multibody",
    "mbdcore.spatial",
    "mbdcore.models",
    "fmu",
    "fmu.fmi",
    "fmu.cosim",
    "controllers",
    "controllers.laws",
    "controllers.evaluation",
    "controllers.design",
    "flexcosim",
)


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[module_name(path)] = path
    return found


MODULES = project_modules()


class Import:
    def __init__(self, source, target, names, inside_function, line):
        self.source, self.target, self.names = source, target, names
        self.inside_function, self.line = inside_function, line

    def __repr__(self):
        where = " (inside a function)" if self.inside_function else ""
        return f"{self.source}:{self.line} imports {self.target}{where}"


def imports_of(module: str, path: Path, modules=MODULES) -> list[Import]:
    """Project imports of one module; ``from a.b import c`` counts as an import of the
    module ``a.b.c`` when there is one, else of ``a.b``."""
    tree = ast.parse(path.read_text())
    is_package = path.name == "__init__.py"
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                      ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] in PACKAGES:
                        found.append(Import(module, alias.name, [], inner, child.lineno))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = module.split(".")
                    keep = len(parts) - child.level + (1 if is_package else 0)
                    base = ".".join(parts[:keep] + ([base] if base else []))
                if base.split(".")[0] in PACKAGES:
                    names = [a.name for a in child.names]
                    for name in names:
                        target = f"{base}.{name}" if f"{base}.{name}" in modules else base
                        found.append(Import(module, target, [name], inner, child.lineno))
            visit(child, inner)

    visit(tree, False)
    return found


#: Modules that may import a module by name, and what they look up
BY_NAME = {"flexcosim.catalog": "the application's commands and models (LOOKUPS)",
           "fmu.cosim.file_rules": "a system file's Python blocks (the project's own by default, "
                             "others with --allow-python-blocks)",
           "mbdcore.native": "a C kernel's extension module (kernel_library): no Python inside"}

#: The application's lookups by name, as imports of its entry point
LOOKED_UP = [Import("flexcosim.cli", ref.partition(":")[0], [ref.partition(":")[2]], False, 0)
             for ref in LOOKUPS]

ALL_IMPORTS = [imp for m, p in MODULES.items() for imp in imports_of(m, p)] + LOOKED_UP


def lookups_by_name(path: Path) -> list[int]:
    """Lines of a module that import a module by a computed name:
    ``importlib.import_module(...)``, ``import_module(...)``, ``__import__(...)``."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in ("import_module", "__import__"):
                lines.append(node.lineno)
    return lines


def private_accesses(path: Path) -> list[tuple[int, str]]:
    """``obj._x`` in a module where ``obj`` is not the class's own: not ``self``, ``cls``,
    ``super()``, an enclosing class or a base of the innermost one by name, nor -- in a
    function nested in a method, as the ``set_x(block, x)`` closures of a
    ``VectorState`` -- another instance of a class that defines ``_x`` itself.
    ``__dunder__`` names are public."""

    def own_names(cls: ast.ClassDef) -> set[str]:
        names = set()
        for node in ast.walk(cls):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                  and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                names.add(node.attr)
        return names

    found = []

    def visit(node, classes, depth):
        for child in ast.iter_child_nodes(node):
            inner, deeper = classes, depth
            if isinstance(child, ast.ClassDef):
                bases = {b.id for b in child.bases if isinstance(b, ast.Name)}
                inner, deeper = classes + [(child.name, bases, own_names(child))], 0
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                deeper = depth + 1
            if isinstance(child, ast.Attribute) and child.attr.startswith("_") \
                    and not child.attr.endswith("__"):
                v = child.value
                name = v.id if isinstance(v, ast.Name) else None
                own = (name in ("self", "cls")
                       or (isinstance(v, ast.Call) and getattr(v.func, "id", None) == "super")
                       or any(name == c for c, _, _ in classes)
                       or bool(classes and name in classes[-1][1])
                       or bool(classes and depth >= 2 and child.attr in classes[-1][2]))
                if not own:
                    found.append((child.lineno, ast.unparse(child)))
            visit(child, inner, deeper)

    visit(ast.parse(path.read_text()), [], 0)
    return found


def layer_of(module: str) -> int:
    best = -1
    for i, prefix in enumerate(LAYERS):
        if module == prefix or module.startswith(prefix + "."):
            if best < 0 or len(prefix) > len(LAYERS[best]):
                best = i
    if best < 0:
        raise AssertionError(f"{module} belongs to no layer of {LAYERS}")
    return best


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node, or with a self-loop
    (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, result = {}, {}, set(), [], []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    result.append(sorted(component))
    return result


def module_graph(imports) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for imp in imports:
        if imp.target != imp.source:
            graph.setdefault(imp.source, set()).add(imp.target)
    return graph


#: Private attributes read or written across classes that remain, each with its reason
#: (module, expression): why.
PRIVATE_ACROSS = {
    ("fmu.fmi.slave", "sys._getframe"):
        "the standard library's frame access (CPython's documented sys._getframe)",
    ("mbdcore.cimage", "obj._fields_"):
        "ctypes' documented list of a structure's members, read to write it as C",
}


# -- the checker can fail -------------------------------------------------------------
def test_cycle_finder_finds_direct_and_indirect_cycles_and_nothing_in_a_tree():
    assert cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_import_reader_sees_lazy_and_relative_imports(tmp_path):
    pkg = tmp_path / "mbdcore"
    pkg.mkdir()
    (pkg / "a.py").write_text("def f():\n    from .b import g\n    return g\n")
    (pkg / "b.py").write_text("from mbdcore.a import f\n")
    modules = {"mbdcore.a": pkg / "a.py", "mbdcore.b": pkg / "b.py"}
    found_a = imports_of("mbdcore.a", pkg / "a.py", modules)
    found_b = imports_of("mbdcore.b", pkg / "b.py", modules)
    assert [(i.target, i.inside_function) for i in found_a] == [("mbdcore.b", True)]
    assert cycles(module_graph(found_a + found_b)) == [["mbdcore.a", "mbdcore.b"]]


def test_lookup_finder_sees_every_spelling(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import importlib\nfrom importlib import import_module\n"
                    "a = importlib.import_module('x')\nb = import_module('y')\n"
                    "c = __import__('z')\nd = importlib.util.find_spec('w')\n")
    assert lookups_by_name(path) == [3, 4, 5]


def test_private_access_finder_sees_other_objects_only(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(
        "class A:\n"
        "    _k = 1\n"
        "    def f(self, other):\n"
        "        self._a = other._b + A._k + super()._c\n"
        "        def set_x(block):\n"
        "            block._a = 0\n"
        "        return set_x, (lambda b: b._zz)\n"
        "class B(A):\n"
        "    _k = A._k + 1\n"
        "x = A()._a\n")
    assert private_accesses(path) == [(4, "other._b"), (7, "b._zz"), (10, "A()._a")]


# -- the project ------------------------------------------------------------------------
def test_no_project_import_inside_a_function():
    lazy = [imp for imp in ALL_IMPORTS if imp.inside_function]
    assert lazy == [], "imports inside functions (move them to the top of the module)"


def test_only_the_application_and_system_files_import_by_name():
    found = {m: lookups_by_name(p) for m, p in MODULES.items()}
    assert {m: lines for m, lines in found.items() if lines and m not in BY_NAME} == {}


def test_every_lookup_by_name_names_a_project_module():
    assert LOOKED_UP, "flexcosim.catalog.LOOKUPS is empty"
    assert [imp for imp in LOOKED_UP if imp.target not in MODULES] == []


def test_no_module_cycles():
    assert cycles(module_graph(ALL_IMPORTS)) == []


def test_no_package_cycles():
    top = {}
    sub = {}
    for imp in ALL_IMPORTS:
        top.setdefault(imp.source.split(".")[0], set()).add(imp.target.split(".")[0])
        sub.setdefault(LAYERS[layer_of(imp.source)], set()).add(LAYERS[layer_of(imp.target)])
    for graph in (top, sub):
        for node in graph:
            graph[node].discard(node)
    assert cycles(top) == []
    assert cycles(sub) == []


def test_imports_go_downward_only():
    upward = [imp for imp in ALL_IMPORTS if layer_of(imp.target) > layer_of(imp.source)]
    assert upward == []


def test_mbdcore_knows_nothing_of_fmi_controllers_or_the_application():
    outside = [imp for imp in ALL_IMPORTS
               if imp.source.startswith("mbdcore") and not imp.target.startswith("mbdcore")]
    assert outside == []


def test_no_private_name_is_imported_from_another_module():
    private = [(imp, imp.names) for imp in ALL_IMPORTS
               if any(n.startswith("_") for n in imp.names)]
    assert private == []


def test_no_private_attribute_is_used_across_classes():
    found = {(m, text): line for m, p in MODULES.items() for line, text in private_accesses(p)}
    unexpected = {f"{m}:{line}: {text}" for (m, text), line in found.items()
                  if (m, text) not in PRIVATE_ACROSS}
    assert unexpected == set(), "a private attribute of another object (make it public)"
    assert set(PRIVATE_ACROSS) <= set(found), "PRIVATE_ACROSS lists what is gone"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not m.endswith("__main__")))
def test_every_module_declares_what_it_offers(module):
    mod = importlib.import_module(module)
    declared = getattr(mod, "__all__", None)
    assert declared is not None, f"{module} has no __all__"
    missing = [name for name in declared if not hasattr(mod, name)
               and importlib.util.find_spec(f"{module}.{name}") is None]
    assert missing == [], f"{module}.__all__ names what it does not define"


def test_architecture_document_names_every_layer():
    text = (ROOT / "docs" / "architecture.md").read_text()
    absent = [layer for layer in LAYERS if f"`{layer}`" not in text]
    assert absent == []


def test_every_data_file_of_a_package_is_installed():
    """A non-editable install (the README's first command) copies only what
    pyproject's package-data names: every other file inside a package must match it."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]
    missing = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*"):
            # compiled extensions are build products, installed by the build itself
            if path.is_dir() or path.suffix in (".py", ".pyc", ".so", ".pyd") \
                    or "__pycache__" in path.parts:
                continue
            rel = path.relative_to(ROOT)
            # setuptools matches each package's patterns (its own key and "*", which
            # applies to every package) against paths relative to the package's folder
            owners = [d for d in rel.parents if (ROOT / d / "__init__.py").exists()]
            if not any(fnmatch.fnmatch(inside, g) and inside.count("/") == g.count("/")
                       for d in owners
                       for inside in [rel.relative_to(d).as_posix()]
                       for g in data.get(d.as_posix().replace("/", "."), []) + data.get("*", [])):
                missing.append(rel.as_posix())
    assert not missing, f"not in [tool.setuptools.package-data]: {missing}"


# ---------------------------------------------------------------------------------
# The tests' own shape: they mirror the packages, and share helpers through support/
# ---------------------------------------------------------------------------------
TESTS = ROOT / "tests"


def imported_by_test_file(path: Path) -> set[str]:
    """Top-level names of every module a test file imports (inside functions too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
    return names


def test_no_test_module_imports_another_test_module():
    """What tests share is in tests/support; a test module importing another (its
    fixtures, its helper classes) ties their fates together and runs the other's
    module-level code."""
    local = {p.stem for p in TESTS.rglob("*.py") if "support" not in p.relative_to(TESTS).parts}
    local |= {p.name for p in TESTS.rglob("*") if p.is_dir()} - {"support"}
    offenders = {str(p.relative_to(TESTS)): sorted(n for n in imported_by_test_file(p)
                                                    if n in local or n.startswith("."))
                 for p in TESTS.rglob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_test_folders_mirror_the_packages():
    """tests/test_<package>/<subpackage>/ holds the tests of <package>.<subpackage>: a
    folder that names no package of the project is a misplaced test."""
    for folder in TESTS.rglob("test_*"):
        if not folder.is_dir():
            continue
        parts = folder.relative_to(TESTS).parts
        package = ".".join((parts[0].removeprefix("test_"),) + parts[1:])
        assert importlib.util.find_spec(package) is not None, \
            f"tests/{'/'.join(parts)} names no package ({package})"
    stray = [p.name for p in TESTS.glob("*.py") if p.name not in (
        "conftest.py", "test_architecture.py", "test_docs.py")]   # the last two: no package
    assert stray == [], "shared helpers belong in tests/support"
