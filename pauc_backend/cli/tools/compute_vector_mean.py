"""compute-vector-mean: per-speaker or global mean of vectors (twin of Kaldi's ivector-mean)."""

import numpy as np

from pauc_backend.cli.framework.kaldi_cli import Tool, format_float
from pauc_backend.cli.framework.vector_input import streamed_sum
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import (read_token_vector_table, read_vector_table, write_int32_table,
                                   write_vector, write_vector_table)
from pauc_backend.models.preprocessing import nonfinite_rows, speaker_mean_stats, speaker_means

USAGE = """
With 3 or 4 arguments, averages vectors over all the utterances of each speaker
using the spk2utt file (float32, in spk2utt order, exactly as ivector-mean).
Input the spk2utt file and a set of vectors indexed by utterance; output is vectors
indexed by speaker.  If 4 arguments are given, the extra argument is a table for the
number of utterances per speaker (useful for PLDA scoring).  If 2 arguments are given,
computes the mean of all input vectors (in double) and writes out the mean vector.

Usage: compute-vector-mean <spk2utt-rspecifier> <vector-rspecifier> <vector-wspecifier> [<num-utt-wspecifier>]
or: compute-vector-mean <vector-rspecifier> <mean-wxfilename>
e.g.: compute-vector-mean ark:data/enroll/spk2utt scp:data/enroll/xvector.scp ark:exp/enroll_spk_xvector.ark ark,t:exp/enroll_num_utts.ark
or: compute-vector-mean scp:data/adapt/xvector.scp exp/mean.vec
See also: subtract-vector-mean
"""

tool = Tool("compute-vector-mean", USAGE)
tool.register("binary", False, "If true, write output in binary (only applicable when writing "
              "files, not archives/tables).")


def read_finite(rspecifier):
    keys, X = read_vector_table(rspecifier)
    bad = nonfinite_rows(X)
    if bad.size:
        raise KaldiError("Vector for key %s in %s contains NaN or infinity"
                         % (keys[bad[0]], rspecifier))
    return keys, X


def global_form(opts, vector_rspecifier, mean_wxfilename):
    """Streamed: a running double sum over chunks (the same additions in the same order as
    ivector-mean's ``sum.AddVec(1.0, ivector)``), then ``sum * (1.0 / N)``."""
    total, count, _ = streamed_sum(vector_rspecifier)
    if not count:
        raise KaldiError("No iVectors read from %s" % vector_rspecifier)
    write_vector(mean_wxfilename, total * (1.0 / count), binary=opts.binary)
    return 0


def speaker_form(spk2utt_rspecifier, vector_rspecifier, vector_wspecifier, num_utts_wspecifier):
    # imported here: the global form (a streamed sum) should start as fast as ivector-mean
    from pauc_backend.cli.framework.speaker_tables import as_spk2utt, gather_speakers
    from pauc_backend.cli.framework.trial_scoring import index_keys
    log = tool.log
    spk2utt = read_token_vector_table(spk2utt_rspecifier)
    keys, X = read_finite(vector_rspecifier)
    position = index_keys(keys, "Duplicate key %%s in %s" % vector_rspecifier.replace("%", "%%"))
    spk2utt, spk2utt_name = as_spk2utt(log, spk2utt, spk2utt_rspecifier, position)
    gathered = gather_speakers(log, spk2utt, position, spk2utt_name, vector_rspecifier)
    speakers, num_spk_err, num_utt_err = (gathered.speakers, gathered.num_spk_err,
                                          gathered.num_utt_err)
    utt_lists = np.split(gathered.rows, np.cumsum(gathered.sizes)[:-1]) if speakers else []
    if not speakers:
        raise KaldiError("No speaker of %s has a vector in %s; %s not written"
                         % (spk2utt_rspecifier, vector_rspecifier, vector_wspecifier))
    means, num_utts = speaker_means(X, utt_lists)
    write_vector_table(vector_wspecifier, speakers, means)
    if num_utts_wspecifier:
        write_int32_table(num_utts_wspecifier, speakers, num_utts.tolist())
    log.log("Computed mean of %d speakers (%d with no utterances), consisting of %d utterances "
            "(%d absent from input)." % (len(speakers), num_spk_err, int(num_utts.sum()),
                                         num_utt_err))
    if speakers:
        mean_length, norm_spk_length = speaker_mean_stats(means)
        log.log("Norm of mean of speakers is %s, root-mean-square speaker-iVector length "
                "divided by sqrt(dim) is %s" % (format_float(mean_length),
                                                format_float(norm_spk_length)))
    return 0 if speakers else 1


def run(opts, args):
    if len(args) == 2:
        return global_form(opts, *args)
    return speaker_form(*(list(args) + [""])[:4])


def _outputs(args):
    """The mean (and count) outputs of either form of the command line."""
    return args[1:] if len(args) == 2 else args[2:]


def main(argv=None):
    return tool.main(run, argv, num_args=(2, 3, 4), outputs=_outputs)
