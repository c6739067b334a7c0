"""controllers: control laws for the two-link flexible arm and the antenna drives, and
control design on python-control (linearisation, LQR/LQG, PID tuning, margins,
validation in co-simulation).  Imports :mod:`mbdcore` and :mod:`fmu`; see
``docs/architecture.md``."""

__all__ = ["antenna", "computed_torque", "design", "input_shaping", "ioadapters", "joint_pd",
           "lqr", "metrics", "notch", "pid", "trajectory", "tuning", "validation"]
