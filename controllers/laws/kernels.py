"""The control laws written in C (``native/``), loaded through ctypes.

A law that also runs in a C-source FMU is written once, in C: the Python block calls the
compiled function (:func:`mbdcore.native.load_kernel`: built once per machine into the
user's cache), the FMU compiles the same text in.  Here: the quintic reference and the
joint PD law with the rigid arm's feedforward (``native/joint_laws.c``, which uses
``mbdcore/models/native/rigid_arm.c``) and the sampled PID (``native/pid.c``).
"""
from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from mbdcore.models.rigid_arm import RIGID_ARM_C_SOURCE
from mbdcore.native import load_kernel

__all__ = ["JOINT_LAWS_C_SOURCE", "JOINT_LAWS_C_SOURCES", "joint_laws", "PID_C_SOURCE",
           "pid_law"]

#: The joint-space laws in C.
JOINT_LAWS_C_SOURCE = Path(__file__).resolve().parent / "native" / "joint_laws.c"
#: What the laws compile from, in order (the rigid arm's inverse dynamics first).
JOINT_LAWS_C_SOURCES = (RIGID_ARM_C_SOURCE, JOINT_LAWS_C_SOURCE)

#: The sampled PID in C.
PID_C_SOURCE = Path(__file__).resolve().parent / "native" / "pid.c"

_ARRAY = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")


def joint_laws() -> ctypes.CDLL:
    """The compiled joint laws (``quintic``, ``joint_pd_torques``) with their signatures."""
    lib = load_kernel(JOINT_LAWS_C_SOURCES, "joint_laws")
    if not getattr(lib, "_flexcosim_typed", False):
        d = ctypes.c_double
        lib.quintic.argtypes = [d, d, d, d, _ARRAY]
        lib.quintic.restype = None
        lib.joint_pd_torques.argtypes = [_ARRAY] * 5
        lib.joint_pd_torques.restype = None
        lib._flexcosim_typed = True
    return lib


def pid_law() -> ctypes.CDLL:
    """The compiled PID (``pid_check``, ``pid_tracking_time``, ``pid_output``,
    ``pid_update``) with their signatures."""
    lib = load_kernel(PID_C_SOURCE, "pid")
    if not getattr(lib, "_flexcosim_typed", False):
        lib.pid_check.argtypes = [_ARRAY, ctypes.c_char_p, ctypes.c_size_t]
        lib.pid_check.restype = ctypes.c_int
        lib.pid_tracking_time.argtypes = [_ARRAY]
        lib.pid_tracking_time.restype = ctypes.c_double
        lib.pid_output.argtypes = [_ARRAY, _ARRAY, _ARRAY]
        lib.pid_output.restype = ctypes.c_double
        lib.pid_update.argtypes = [_ARRAY, _ARRAY, _ARRAY, ctypes.c_double]
        lib.pid_update.restype = None
        lib._flexcosim_typed = True
    return lib

