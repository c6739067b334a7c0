"""Compiled C kernels of the project, loaded with ctypes.

A model whose equations are written in C (so that the same code also runs in a C-source
FMU, without Python) ships the C file in the package; :func:`load_kernel` compiles it once
per machine into the user's cache folder, keyed by a hash of the source and the compiler
command (``$XDG_CACHE_HOME/flexcosim/kernels``, else ``~/.cache/flexcosim/kernels``, else a
per-user folder in the temporary directory; ``FLEXCOSIM_KERNEL_DIR`` overrides), and loads
it.  Nothing is written inside the installed package.  A C compiler (``$CC``, else ``cc``
or ``gcc``) is needed the first time; without one, :class:`KernelError` says so.
"""
from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

import numpy as np

__all__ = ["KernelError", "load_kernel", "kernel_library", "kernel_dir", "KERNEL_FLAGS",
           "C_ARRAY", "C_INTS", "optional_address"]

#: Flags of every kernel build (part of the cache key).
KERNEL_FLAGS = ("-std=c99", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra")

_LOADED: dict = {}   # by content hash and by request

#: Says when a kernel is compiled (INFO): the first use on a machine takes seconds.
logger = logging.getLogger(__name__)

#: ctypes type of a C-contiguous float64 array argument (``const double *``).
C_ARRAY = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
#: ctypes type of a C-contiguous int32 array argument (``const int *``).
C_INTS = np.ctypeslib.ndpointer(dtype=np.int32, flags="C_CONTIGUOUS")


def optional_address(array) -> int | None:
    """The address of a C-contiguous float64 array, or None (a NULL pointer): how an
    optional array goes to a kernel argument typed ``ctypes.c_void_p``."""
    return None if array is None else array.ctypes.data


class KernelError(RuntimeError):
    """A compiled kernel could not be built or loaded (the message says why)."""


def kernel_dir() -> Path:
    """The folder of the compiled kernels."""
    override = os.environ.get("FLEXCOSIM_KERNEL_DIR")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(base) / "flexcosim" / "kernels"
    try:
        path.mkdir(parents=True, exist_ok=True)
        if os.access(path, os.W_OK | os.X_OK):
            return path
    except OSError:
        pass
    user = getattr(os, "getuid", lambda: "user")()
    return Path(tempfile.gettempdir()) / f"flexcosim-kernels-{user}"


def _compiler() -> str:
    for candidate in (os.environ.get("CC"), "cc", "gcc"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    raise KernelError("no C compiler found (set CC, or install gcc): the compiled models "
                      "(the flexible arm) are built from C once per machine")


def load_kernel(sources, name: str, headers: tuple = ()) -> ctypes.CDLL:
    """The compiled C ``sources`` (a path, or several compiled as one translation unit in
    that order), including ``headers`` by their file names; built if the cache lacks it,
    loaded once per process."""
    sources = [Path(sources)] if isinstance(sources, (str, Path)) else [Path(s) for s in sources]
    request = (tuple(map(str, sources)), name, tuple(map(str, headers)))
    if request in _LOADED:          # the same files again in this process: no disk access
        return _LOADED[request]
    code = b"".join(f"#line 1 \"{s}\"\n".encode() + s.read_bytes() + b"\n" for s in sources)
    text = code + b"".join(Path(h).read_bytes() for h in headers)
    includes = [f"-I{d}" for d in dict.fromkeys(str(Path(h).resolve().parent) for h in headers)]
    cc = _compiler()
    key = hashlib.sha256(text + " ".join((cc, *KERNEL_FLAGS, sys.platform)).encode()).hexdigest()[:16]
    if key in _LOADED:
        _LOADED[request] = _LOADED[key]
        return _LOADED[key]
    folder = kernel_dir()
    folder.mkdir(parents=True, exist_ok=True)
    library = folder / f"{name}-{key}.so"
    if not library.exists():
        logger.info("compiling %s into %s (once per machine)",
                    ", ".join(s.name for s in sources), library)
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            unit = Path(tmp) / f"{name}.c"
            unit.write_bytes(code)
            built = Path(tmp) / library.name
            done = subprocess.run([cc, *KERNEL_FLAGS, *includes, str(unit), "-o", str(built),
                                   "-lm"], capture_output=True, text=True)
            if done.returncode != 0:
                raise KernelError(f"compiling {', '.join(map(str, sources))} failed:\n"
                                  f"{done.stderr.strip()}")
            os.replace(built, library)       # atomic: concurrent builds cannot clash
    try:
        _LOADED[key] = _LOADED[request] = ctypes.CDLL(str(library))
    except OSError as exc:
        raise KernelError(f"cannot load {library}: {exc}") from None
    return _LOADED[key]


def kernel_library(sources, name: str, signatures: dict, headers: tuple = ()):
    """A loader of a kernel with typed functions: ``loader()`` returns the library
    (:func:`load_kernel`) with ``signatures`` = {function: (argtypes, restype)} applied,
    built and typed once per process (the loader is cached, so a hot path calling it
    pays a function call, no hashing or file access)."""
    @cache
    def loader():
        lib = load_kernel(sources, name, headers)
        for function, (argtypes, restype) in signatures.items():
            f = getattr(lib, function)
            f.argtypes, f.restype = list(argtypes), restype
        return lib
    return loader

