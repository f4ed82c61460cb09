"""What a ``kbgraph`` command sets before numpy loads OpenBLAS (imported first by the CLI).

Why: OpenBLAS starts its worker threads when numpy is imported, and each spins 2**28 cycles
(~0.1 s of a core) waiting for work before it sleeps. A command never runs a multi-threaded
product (queries run on one BLAS thread: ``retrieval/_blas.py``), so the spin was pure cost:
``python -c "import numpy"`` took 0.19 CPU-s on 2 cores against 0.10 with the spin cut, a
sixth of a cold ``kbgraph search --mode bm25``. 4 (OpenBLAS's minimum: 2**4 cycles) sends an
idle thread to sleep at once; the threads, their number and a product's speed stay as they
were. A value the user set wins; other BLAS builds ignore the variable. Library users'
processes are left alone: this module is imported by the CLI only.
"""

from __future__ import annotations

import os

THREAD_TIMEOUT = "OPENBLAS_THREAD_TIMEOUT"

os.environ.setdefault(THREAD_TIMEOUT, "4")
