"""spk2utt -> rows of a vector table, with the warnings of Kaldi's ivector-mean/-compute-plda."""

from collections import namedtuple

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import read_token_table, read_token_vector_table

SpeakerRows = namedtuple("SpeakerRows", "speakers rows sizes labels num_spk_err num_utt_err")


MAX_WARNINGS = 100  # missing-utterance warnings printed before one summary line
MIN_FOUND = 0.5  # below this fraction of utterances found (and >= MIN_MISSING missing): error
MIN_MISSING = 20


def check_lookups(spk2utt, position, spk2utt_name=None, vectors_name=None):
    """KaldiError saying what is probably wrong when most spk2utt utterances have no vector
    (e.g. utt2spk given where spk2utt is expected), instead of one WARNING per utterance."""
    total = sum(len(utts) for utts in spk2utt.values())
    found = sum(utt in position for utts in spk2utt.values() for utt in utts)
    check_lookup_counts(spk2utt, total, found, len(position),
                        lambda: sum(spk in position for spk in spk2utt),
                        spk2utt_name, vectors_name)


def check_lookup_counts(spk2utt, total, found, num_vectors, count_speaker_keys,
                        spk2utt_name=None, vectors_name=None):
    """``check_lookups`` from counts (for vectors that were streamed, not kept): ``total``
    utterances listed, ``found`` of them with a vector, ``num_vectors`` read;
    ``count_speaker_keys()``: how many speakers of spk2utt were keys of the vectors (called
    only when every list has one utterance)."""
    if not total:
        return
    missing = total - found
    if found and (found >= MIN_FOUND * total or missing < MIN_MISSING):
        return
    table = spk2utt_name or "the spk2utt table"
    vectors = vectors_name or "the vectors"
    if not num_vectors:
        raise KaldiError("No vectors read from %s (empty input)" % vectors)
    if (all(len(utts) == 1 for utts in spk2utt.values())
            and count_speaker_keys() > found):
        raise KaldiError("%s looks like an utt2spk table (its keys are utterances of %s and "
                         "each has one token): give spk2utt there (utils/utt2spk_to_spk2utt.pl "
                         "makes it)" % (table, vectors))
    raise KaldiError("Only %d of the %d utterances listed in %s have a vector in %s: wrong "
                     "spk2utt or vector table?" % (found, total, table, vectors))


def read_utt2spk(rspecifier):
    """An utt2spk table (utterance -> one token); a spk2utt table given in its place (several
    tokens per line) is named as such, with the script that converts it, instead of the
    reader's "expected newline" at the second token."""
    try:
        return read_token_table(rspecifier)
    except KaldiError as err:
        try:
            table = read_token_vector_table(rspecifier)
        except KaldiError:
            raise err from None
        if any(len(tokens) > 1 for tokens in table.values()):
            raise KaldiError("%s looks like a spk2utt table (a line has several utterances): "
                             "give utt2spk there (utils/spk2utt_to_utt2spk.pl makes it)"
                             % rspecifier) from None
        raise


def gather_speakers(log, spk2utt, position, spk2utt_name=None, vectors_name=None):
    """Rows of each speaker's vectors, in spk2utt order; ``position`` maps utterance -> row.

    As Kaldi: an utterance with no vector gives ``WARNING No iVector present in input for
    utterance U``; a speaker left with none is dropped with ``WARNING Not producing output for
    speaker S ...``; a speaker with an empty list is an error. ``speakers`` are the kept ones,
    ``labels`` (0..len(speakers)-1) gives each row's speaker.
    """
    if not isinstance(position, dict):
        position = {key: row for row, key in enumerate(position)}
    check_lookups(spk2utt, position, spk2utt_name, vectors_name)
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
                    if num_utt_err < MAX_WARNINGS:
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
    if num_utt_err > MAX_WARNINGS:
        log.warning("... and %d more utterances with no iVector (%d in all; not listed)"
                    % (num_utt_err - MAX_WARNINGS, num_utt_err))
    labels = np.repeat(np.arange(len(sizes)), sizes)
    return SpeakerRows(speakers, np.asarray(rows, dtype=np.intp), np.asarray(sizes, dtype=np.intp),
                       labels, num_spk_err, num_utt_err)
