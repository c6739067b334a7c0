"""Test-session settings.

OpenBLAS's own thread pool fights the other processes of a 2-core machine (dense solves
of ~100x100 took 10-100x longer under load); the suite's linear algebra is small, so one
BLAS thread per process is both faster and steadier.  Set before numpy is imported.
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
