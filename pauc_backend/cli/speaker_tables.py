"""spk2utt -> rows of a vector table, with the warnings of Kaldi's ivector-mean/-compute-plda."""

from collections import namedtuple

import numpy as np

from pauc_backend.errors import KaldiError

SpeakerRows = namedtuple("SpeakerRows", "speakers rows sizes labels num_spk_err num_utt_err")


def gather_speakers(log, spk2utt, position, spk2utt_name=None):
    """Rows of each speaker's vectors, in spk2utt order; ``position`` maps utterance -> row.

    As Kaldi: an utterance with no vector gives ``WARNING No iVector present in input for
    utterance U``; a speaker left with none is dropped with ``WARNING Not producing output for
    speaker S ...``; a speaker with an empty list is an error. ``speakers`` are the kept ones,
    ``labels`` (0..len(speakers)-1) gives each row's speaker.
    """
    if not isinstance(position, dict):
        position = {key: row for row, key in enumerate(position)}
    speakers, rows, sizes = [], [], []
    num_spk_err = num_utt_err = 0
    for spk, utts in spk2utt.items():
        if not utts:
            where = " in %s" % spk2utt_name if spk2utt_name else ""
            raise KaldiError("Speaker with no utterances: %s%s" % (spk, where))
        found = [position.get(utt, -1) for utt in utts]
        if min(found) < 0:
            for utt, row in zip(utts, found):
                if row < 0:
                    log.warning("No iVector present in input for utterance %s" % utt)
                    num_utt_err += 1
            found = [row for row in found if row >= 0]
        if not found:
            log.warning("Not producing output for speaker %s since no utterances had iVectors"
                        % spk)
            num_spk_err += 1
            continue
        speakers.append(spk)
        rows.extend(found)
        sizes.append(len(found))
    labels = np.repeat(np.arange(len(sizes)), sizes)
    return SpeakerRows(speakers, np.asarray(rows, dtype=np.intp), np.asarray(sizes, dtype=np.intp),
                       labels, num_spk_err, num_utt_err)
