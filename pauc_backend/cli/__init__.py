"""Command-line tools, one module per tool, plus kaldi_cli (the shared Kaldi conventions).

Each tool's ``main(argv)`` is a plain function that leaves process-wide state alone; the console
scripts and ``bin/`` launchers go through ``entry.main``, which sets what a separate Kaldi-like
process needs (one BLAS thread, signal handling) before the tool is imported.
"""
