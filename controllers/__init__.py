"""controllers: control laws for the two-link flexible arm and the antenna drives
(:mod:`controllers.laws`), and control design and evaluation on python-control
(:mod:`controllers.design`).  Imports :mod:`mbdcore` and :mod:`fmu`; see
``docs/architecture.md``."""

__all__ = ["laws", "design"]
