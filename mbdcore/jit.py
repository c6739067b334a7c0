"""Compiled kernels: ``njit``, numba's compiler with its on-disk cache kept outside the
installed package.

numba's default cache goes to ``__pycache__`` beside the source.  In an installed
package those files are not the installer's: ``pip uninstall`` leaves them behind, the
left-over folder then shadows a later editable install as an empty namespace package,
and a read-only install cannot cache at all.  The cache therefore lives in the user's
cache folder (``$XDG_CACHE_HOME/flexcosim/numba``, else ``~/.cache/flexcosim/numba``,
else a per-user folder in the temporary directory), unless ``NUMBA_CACHE_DIR`` names
one.  Only this project's kernels are redirected: numba's setting is restored after
each decoration, so other libraries in the same process keep their own behaviour.
"""
from __future__ import annotations

import os
import tempfile

import numba

__all__ = ["njit", "CACHE_DIR"]


def _writable(path: str) -> bool:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def _cache_dir() -> str:
    if numba.config.CACHE_DIR:             # NUMBA_CACHE_DIR: the user's choice
        return numba.config.CACHE_DIR
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "flexcosim", "numba")
    if not _writable(path):
        user = getattr(os, "getuid", lambda: "user")()
        path = os.path.join(tempfile.gettempdir(), f"flexcosim-numba-{user}")
    return path


#: Folder of the compiled-kernel cache of this project.
CACHE_DIR = _cache_dir()


def _cached(compiler, options):
    options.setdefault("cache", True)

    def decorate(f):
        # numba chooses the cache folder when the function is decorated.
        saved = numba.config.CACHE_DIR
        numba.config.CACHE_DIR = CACHE_DIR
        try:
            return compiler(**options)(f)
        finally:
            numba.config.CACHE_DIR = saved

    return decorate


def njit(func=None, **options):
    """``numba.njit`` with ``cache=True`` and the cache in :data:`CACHE_DIR`.

    Use as ``@njit`` or ``@njit(fastmath=True, ...)``.
    """
    decorate = _cached(numba.njit, options)
    return decorate if func is None else decorate(func)

