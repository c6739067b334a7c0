"""The control laws written in C (``native/``), compiled with the package.

A law that also runs in a C-source FMU is written once, in C: the Python block calls the
compiled function (an extension module built with the package, loaded by
:func:`mbdcore.native.kernel_library`), the FMU compiles the same text in.  Here: the quintic reference and the
joint PD law with the rigid arm's feedforward (``native/joint_laws.c``, which uses
``mbdcore/models/native/rigid_arm.c``), the sampled PID (``native/pid.c``), the LQG/LQI
state feedback (``native/lqg.c``, also with the rigid arm), the notch filter
(``native/notch.c``) and the antenna servo cascade with its pointing reference
(``native/antenna_servo.c``).
"""
from __future__ import annotations

from functools import cache
from pathlib import Path

from mbdcore.cbuild import TABLE_LAYOUT_HEADER
from mbdcore.models.rigid_arm import RIGID_ARM_C_SOURCE
from mbdcore.native import TableLayout, kernel_library, table_layout

__all__ = ["JOINT_LAWS_C_SOURCE", "JOINT_LAWS_C_SOURCES", "joint_laws", "PID_C_SOURCE",
           "pid_law", "LQG_C_SOURCES", "lqg_law", "NOTCH_C_SOURCE", "notch_law",
           "ANTENNA_SERVO_C_SOURCE", "antenna_servo_law", "LAWS_C_HEADERS",
           "pid_layout", "notch_layout", "servo_layout", "pointing_layout", "pd_layout",
           "lqg_layout", "lqg_input_layout", "lqg_settings_layout"]

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


#: The header every law's C includes: the macros of its table's layout.
LAWS_C_HEADERS = (TABLE_LAYOUT_HEADER,)

#: The compiled joint laws (``quintic``, ``joint_pd_torques``), checked against
#: the installed sources; cached per process.
joint_laws = kernel_library("controllers.laws._joint_laws", JOINT_LAWS_C_SOURCES,
                            LAWS_C_HEADERS)

#: The compiled PID (``pid_check``, ``pid_tracking_time``, ``pid_output``,
#: ``pid_update``), checked against
#: the installed sources; cached per process.
pid_law = kernel_library("controllers.laws._pid", PID_C_SOURCE, LAWS_C_HEADERS)

#: The compiled LQG/LQI law (``lqg_table_length``, ``lqg_torques``, ``lqg_update``),
#: checked against
#: the installed sources; cached per process.
lqg_law = kernel_library("controllers.laws._lqg", LQG_C_SOURCES, LAWS_C_HEADERS)

#: The compiled notch filter (``notch_coefficients``, ``notch_output``, ``notch_update``),
#: checked against
#: the installed sources; cached per process.
notch_law = kernel_library("controllers.laws._notch", NOTCH_C_SOURCE, LAWS_C_HEADERS)

#: The compiled antenna servo (``servo_outputs``, ``servo_update``,
#: ``pointing_reference``), checked against
#: the installed sources; cached per process.
antenna_servo_law = kernel_library("controllers.laws._antenna_servo", ANTENNA_SERVO_C_SOURCE,
                                   LAWS_C_HEADERS)


@cache
def pid_layout() -> TableLayout:
    """The PID's parameter table, ``PID_LAYOUT`` of pid.c (its one declaration)."""
    return table_layout(pid_law, "PID_LAYOUT")


@cache
def notch_layout() -> TableLayout:
    """The notch filter's parameters, ``NOTCH_LAYOUT`` of notch.c."""
    return table_layout(notch_law, "NOTCH_LAYOUT")


@cache
def servo_layout() -> TableLayout:
    """The antenna servo's parameters, ``SERVO_LAYOUT`` of antenna_servo.c."""
    return table_layout(antenna_servo_law, "SERVO_LAYOUT")


@cache
def pointing_layout() -> TableLayout:
    """The pointing reference's parameters, ``POINTING_LAYOUT`` of antenna_servo.c."""
    return table_layout(antenna_servo_law, "POINTING_LAYOUT")


@cache
def pd_layout() -> TableLayout:
    """The joint PD law's gains, ``PD_LAYOUT`` of joint_laws.c."""
    return table_layout(joint_laws, "PD_LAYOUT")


@cache
def lqg_layout() -> TableLayout:
    """The LQG/LQI design's table, ``LQG_LAYOUT`` of lqg.c."""
    return table_layout(lqg_law, "LQG_LAYOUT")


@cache
def lqg_input_layout() -> TableLayout:
    """The LQG/LQI law's inputs u in the order C reads them, ``LQG_INPUT_LAYOUT`` of lqg.c."""
    return table_layout(lqg_law, "LQG_INPUT_LAYOUT")


@cache
def lqg_settings_layout() -> TableLayout:
    """The LQG/LQI law's settings, ``LQG_SETTINGS_LAYOUT`` of lqg.c."""
    return table_layout(lqg_law, "LQG_SETTINGS_LAYOUT")
