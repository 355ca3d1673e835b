"""Kaldi I/O: rx/wxfilenames, r/wspecifiers, vectors, matrices, ``<Plda>``, tables, trials, scores.

Byte-compatible with Kaldi (src/util/kaldi-io.cc, kaldi-table.cc, base/io-funcs.cc); numpy only.
Every failure is a ``KaldiError`` naming the file (and key, byte offset or line) and the problem.
"""

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io.codec import ByteCursor, read_object, write_object
from pauc_backend.kaldi_io.objects import (read_matrix, read_plda, read_vector, write_matrix,
                                           write_plda, write_vector)
from pauc_backend.kaldi_io.specifiers import (RSpecifier, WSpecifier, classify_rspecifier,
                                              classify_wspecifier, parse_rspecifier,
                                              parse_wspecifier)
from pauc_backend.kaldi_io.outputs import open_output
from pauc_backend.kaldi_io.streams import (classify_rxfilename, classify_wxfilename, open_input,
                                           read_all)
from pauc_backend.kaldi_io.tables import (HOLDERS, RandomAccessTableReader,
                                          SequentialTableReader, TableWriter, read_int32_table,
                                          read_float_table, read_script, read_token_table,
                                          read_token_vector_table, read_vector_table,
                                          write_float_table, write_int32_table,
                                          write_token_table,
                                          write_token_vector_table, write_vector_table)
from pauc_backend.kaldi_io.vector_stream import VectorChunk, VectorChunkWriter, iter_vector_chunks
from pauc_backend.kaldi_io.trials import format_scores, read_scores, read_trials, write_scores

__all__ = [
    "KaldiError", "ByteCursor", "read_object", "write_object",
    "read_vector", "write_vector", "read_matrix", "write_matrix", "read_plda", "write_plda",
    "RSpecifier", "WSpecifier", "classify_rspecifier", "classify_wspecifier",
    "parse_rspecifier", "parse_wspecifier",
    "classify_rxfilename", "classify_wxfilename", "open_input", "open_output", "read_all",
    "HOLDERS", "SequentialTableReader", "RandomAccessTableReader", "TableWriter",
    "read_vector_table", "write_vector_table", "read_int32_table", "write_int32_table",
    "read_float_table", "write_float_table",
    "read_token_table", "write_token_table", "read_token_vector_table",
    "write_token_vector_table", "read_script",
    "read_trials", "read_scores", "write_scores", "format_scores",
    "VectorChunk", "VectorChunkWriter", "iter_vector_chunks",
]
