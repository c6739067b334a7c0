"""flexcosim: the application layer (command line, the closed-loop demo) above
:mod:`mbdcore`, :mod:`fmu` and :mod:`controllers`; see ``docs/architecture.md``."""

__all__ = ["cli", "demo"]
