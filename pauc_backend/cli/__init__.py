"""Command-line tools, one module per tool, plus kaldi_cli (the shared Kaldi conventions)."""
