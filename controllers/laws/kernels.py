"""The control laws written in C (``native/``), loaded through ctypes.

A law that also runs in a C-source FMU is written once, in C: the Python block calls the
compiled function (:func:`mbdcore.native.load_kernel`: built once per machine into the
user's cache), the FMU compiles the same text in.  Here: the quintic reference and the
joint PD law with the rigid arm's feedforward (``native/joint_laws.c``, which uses
``mbdcore/models/native/rigid_arm.c``), the sampled PID (``native/pid.c``), the LQG/LQI
state feedback (``native/lqg.c``, also with the rigid arm), the notch filter
(``native/notch.c``) and the antenna servo cascade with its pointing reference
(``native/antenna_servo.c``).
"""
from __future__ import annotations

import ctypes
from pathlib import Path

from mbdcore.models.rigid_arm import RIGID_ARM_C_SOURCE
from mbdcore.native import C_ARRAY, kernel_library

__all__ = ["JOINT_LAWS_C_SOURCE", "JOINT_LAWS_C_SOURCES", "joint_laws", "PID_C_SOURCE",
           "pid_law", "LQG_C_SOURCES", "lqg_law", "NOTCH_C_SOURCE", "notch_law",
           "ANTENNA_SERVO_C_SOURCE", "antenna_servo_law"]

#: The joint-space laws in C.
JOINT_LAWS_C_SOURCE = Path(__file__).resolve().parent / "native" / "joint_laws.c"
#: What the laws compile from, in order (the rigid arm's inverse dynamics first).
JOINT_LAWS_C_SOURCES = (RIGID_ARM_C_SOURCE, JOINT_LAWS_C_SOURCE)

#: The sampled PID in C.
PID_C_SOURCE = Path(__file__).resolve().parent / "native" / "pid.c"

#: The LQG/LQI law in C, after the rigid arm it uses for the feedforward.
LQG_C_SOURCES = (RIGID_ARM_C_SOURCE, Path(__file__).resolve().parent / "native" / "lqg.c")

#: The notch filter in C.
NOTCH_C_SOURCE = Path(__file__).resolve().parent / "native" / "notch.c"

#: The antenna servo cascade and its pointing reference in C.
ANTENNA_SERVO_C_SOURCE = Path(__file__).resolve().parent / "native" / "antenna_servo.c"

_D = ctypes.c_double

#: The compiled joint laws (``quintic``, ``joint_pd_torques``), typed; cached per process.
joint_laws = kernel_library(JOINT_LAWS_C_SOURCES, "joint_laws", {
    "quintic": ([_D, _D, _D, _D, C_ARRAY], None),
    "shaped_quintic": ([ctypes.c_int, C_ARRAY, C_ARRAY, _D, _D, _D, _D, C_ARRAY], None),
    "joint_pd_torques": ([C_ARRAY] * 5, None),
})

#: The compiled PID (``pid_check``, ``pid_tracking_time``, ``pid_output``,
#: ``pid_update``), typed; cached per process.
pid_law = kernel_library(PID_C_SOURCE, "pid", {
    "pid_check": ([C_ARRAY, ctypes.c_char_p, ctypes.c_size_t], ctypes.c_int),
    "pid_tracking_time": ([C_ARRAY], _D),
    "pid_output": ([C_ARRAY] * 3, _D),
    "pid_update": ([C_ARRAY] * 3 + [_D], None),
})

#: The compiled LQG/LQI law (``lqg_table_length``, ``lqg_torques``, ``lqg_update``),
#: typed; cached per process.
lqg_law = kernel_library(LQG_C_SOURCES, "lqg", {
    "lqg_table_length": ([C_ARRAY], ctypes.c_long),
    "lqg_torques": ([C_ARRAY] * 7, None),
    "lqg_update": ([C_ARRAY] * 5, None),
})

#: The compiled notch filter (``notch_coefficients``, ``notch_output``, ``notch_update``),
#: typed; cached per process.
notch_law = kernel_library(NOTCH_C_SOURCE, "notch", {
    "notch_coefficients": ([C_ARRAY, C_ARRAY, ctypes.c_char_p, ctypes.c_size_t], ctypes.c_int),
    "notch_output": ([C_ARRAY, C_ARRAY, _D], _D),
    "notch_update": ([C_ARRAY, C_ARRAY, _D], None),
})

#: The compiled antenna servo (``servo_n_params``, ``servo_outputs``, ``servo_update``,
#: ``pointing_reference``), typed; cached per process.
antenna_servo_law = kernel_library(ANTENNA_SERVO_C_SOURCE, "antenna_servo", {
    "servo_n_params": ([], ctypes.c_int),
    "servo_outputs": ([C_ARRAY] * 4, None),
    "servo_update": ([C_ARRAY] * 3 + [_D], None),
    "pointing_reference": ([C_ARRAY, _D, C_ARRAY], None),
})
