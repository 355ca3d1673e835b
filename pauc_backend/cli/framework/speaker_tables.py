"""spk2utt -> rows of a vector table, with the warnings of Kaldi's ivector-mean/-compute-plda;
either form of a speaker table (utt2spk, spk2utt) where the other is expected (issue 37)."""

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
        # only reached when ``is_utt2spk`` could not tell: no speaker has two utterances
        raise KaldiError("%s looks like an utt2spk table in which every speaker has one "
                         "utterance (its keys are utterances of %s): give spk2utt there, or an "
                         "utt2spk table with several utterances per speaker (the tools read "
                         "either form)" % (table, vectors))
    raise KaldiError("Only %d of the %d utterances listed in %s have a vector in %s: wrong "
                     "spk2utt or vector table?" % (found, total, table, vectors))


def is_utt2spk(table, keys=None):
    """Whether ``table``, read as spk2utt (``{first token: [the others]}``), is an utt2spk
    table. Every line must have exactly two tokens (a spk2utt line with several utterances
    settles it); then, with ``keys`` (the vector table's keys: a set or dict), when more of
    the first tokens than of the second are vector keys; without them (train-plda streams its
    vectors), when a second token repeats: a speaker with several utterances, which as
    spk2utt would be one utterance listed under several speakers, each with only it. Left
    undecided (one utterance per speaker, no keys) it stays spk2utt, and ``check_lookups``
    names the mistake if it was one."""
    if not table or any(len(tokens) != 1 for tokens in table.values()):
        return False
    if keys is not None:
        return (sum(key in keys for key in table)
                > sum(tokens[0] in keys for tokens in table.values()))
    return len({tokens[0] for tokens in table.values()}) < len(table)


def as_spk2utt(log, table, rspecifier, keys=None):
    """``(spk2utt, name)``: ``table`` (read from ``rspecifier`` as spk2utt) itself, or, when
    ``is_utt2spk``, its inversion as Kaldi's utils/utt2spk_to_spk2utt.pl makes it (speakers in
    order of first appearance, each speaker's utterances in file order), with one LOG line;
    ``name`` names the table in later messages (saying how it was read)."""
    if keys is not None and not isinstance(keys, (set, frozenset, dict)):
        keys = set(keys)
    if not is_utt2spk(table, keys):
        return table, rspecifier
    spk2utt = {}
    for utt, (spk,) in table.items():
        spk2utt.setdefault(spk, []).append(utt)
    log.log("Read %s as utt2spk (every line '<utterance> <speaker>'): %d utterances of %d "
            "speakers" % (rspecifier, len(table), len(spk2utt)))
    return spk2utt, "%s (read as utt2spk)" % rspecifier


def read_spk2utt(log, rspecifier, keys=None):
    """A spk2utt table from ``rspecifier``, which may hold utt2spk instead (``as_spk2utt``):
    ``(spk2utt, name)``."""
    return as_spk2utt(log, read_token_vector_table(rspecifier), rspecifier, keys)


def read_utt2spk(rspecifier, log=None):
    """An utt2spk table (utterance -> one token). A spk2utt table given in its place (a line
    with several utterances: unambiguous) is read as one, as Kaldi's
    utils/spk2utt_to_utt2spk.pl converts it, with one LOG line (``log``) saying so; an
    utterance it lists twice is one ERROR."""
    try:
        return read_token_table(rspecifier)
    except KaldiError as err:
        try:
            table = read_token_vector_table(rspecifier)
        except KaldiError:
            raise err from None
        if not any(len(tokens) > 1 for tokens in table.values()):
            raise
    utt2spk = {}
    for spk, utts in table.items():
        for utt in utts:
            if utt in utt2spk:
                raise KaldiError("%s, read as spk2utt (a line has several utterances), lists "
                                 "utterance %s twice" % (rspecifier, utt))
            utt2spk[utt] = spk
    if log is not None:
        log.log("Read %s as spk2utt (a line lists several utterances): %d utterances of %d "
                "speakers" % (rspecifier, len(utt2spk), len(table)))
    return utt2spk


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
