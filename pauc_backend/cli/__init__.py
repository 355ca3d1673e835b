"""Command-line tools, one module per tool, plus kaldi_cli (the shared Kaldi conventions).

Tools run one BLAS thread per process unless the user says otherwise, as Kaldi's binaries do:
recipes get parallelism from jobs (``--nj``, pipes), and on a loaded machine multi-threaded
OpenBLAS spins (measured: train-plda 19.8 s multi-threaded vs 2.5 s single-threaded on a busy
2-core box). This runs before any tool imports numpy; export OPENBLAS_NUM_THREADS to override.
"""

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
