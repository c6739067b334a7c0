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
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["KernelError", "load_kernel", "kernel_dir", "KERNEL_FLAGS"]

#: Flags of every kernel build (part of the cache key).
KERNEL_FLAGS = ("-std=c99", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra")

_LOADED: dict[str, ctypes.CDLL] = {}


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


def load_kernel(source: Path, name: str, headers: tuple = ()) -> ctypes.CDLL:
    """The compiled ``source`` (a C file including ``headers`` by their file names),
    built if the cache lacks it, loaded once per process."""
    text = Path(source).read_bytes() + b"".join(Path(h).read_bytes() for h in headers)
    includes = [f"-I{d}" for d in dict.fromkeys(str(Path(h).resolve().parent) for h in headers)]
    cc = _compiler()
    key = hashlib.sha256(text + " ".join((cc, *KERNEL_FLAGS, sys.platform)).encode()).hexdigest()[:16]
    if key in _LOADED:
        return _LOADED[key]
    folder = kernel_dir()
    folder.mkdir(parents=True, exist_ok=True)
    library = folder / f"{name}-{key}.so"
    if not library.exists():
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            built = Path(tmp) / library.name
            done = subprocess.run([cc, *KERNEL_FLAGS, *includes, str(source), "-o", str(built),
                                   "-lm"],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise KernelError(f"compiling {source} failed:\n{done.stderr.strip()}")
            os.replace(built, library)       # atomic: concurrent builds cannot clash
    try:
        _LOADED[key] = ctypes.CDLL(str(library))
    except OSError as exc:
        raise KernelError(f"cannot load {library}: {exc}") from None
    return _LOADED[key]
