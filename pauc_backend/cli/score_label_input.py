"""Former home of compute-eer's input parser: it now lives in ``kaldi_io.numbers`` (kept so that
old imports work; no code here)."""

from pauc_backend.kaldi_io.numbers import (_parse_lines_exactly, kaldi_string_to_float,  # noqa
                                           parse_decimal_tokens, parse_score_labels,
                                           read_score_labels)
