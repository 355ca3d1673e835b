"""The command-line layer: thin Kaldi-style tools over the library.

- ``tools/``: one module per tool (``train_plda.py`` is ``train-plda``); a tool only parses its
  options, reads, calls the library (models/, metrics/, persist/) and writes. No tool imports
  another tool.
- ``framework/``: Kaldi's conventions (``kaldi_cli``: ParseOptions, LOG/WARNING/ERROR lines, exit
  codes), the console entry point (``entry``: the one place that changes process-wide state:
  one BLAS thread, signal handling) and the input plumbing the tools share (the trial loop of
  the scoring tools, spk2utt/utt2spk lookups).
- ``options/``: option groups registered by several tools, as Kaldi's ``PldaConfig::Register``:
  PLDA (``plda``), score normalisation (``score_norm``), evaluation extras (``evaluation``).

Each tool's ``main(argv)`` is a plain function that leaves process-wide state alone; the console
scripts and ``bin/`` launchers go through ``framework.entry.main``.
"""
