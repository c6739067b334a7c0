"""flexcosim: the application layer (command line, the closed-loop demo) above
:mod:`mbdcore`, :mod:`fmu` and :mod:`controllers`; see ``docs/architecture.md``."""

__all__ = ["__version__", "arguments", "catalog", "cli", "commands", "console", "demo"]

#: the one place the version is written (pyproject.toml reads it from here)
__version__ = "0.1.0"
