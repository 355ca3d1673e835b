"""VoxCeleb1 trial lists (``1|0 <path> <path>``, lists O, E and H) as Kaldi trials.

Keys follow Kaldi's egs/voxceleb/v2 (local/make_voxceleb1_v2.pl): the path
``id10270/x6uYqmx31kE/00001.wav`` is utterance ``id10270-x6uYqmx31kE-00001`` (speaker, YouTube
recording and segment joined by ``-``, the extension dropped), and label 1 is ``target``.
"""

import re

from pauc_backend.errors import KaldiError

LABELS = {"1": "target", "0": "nontarget", "target": "target", "nontarget": "nontarget"}
_WHITESPACE = re.compile(r"[ \t\n\v\f\r]+")    # Kaldi splits on ASCII whitespace only
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")        # never in a Kaldi key (IsToken)


def _show(text, limit=200):
    """``text`` for a message: as is when printable, else its repr (a NUL stays visible)."""
    text = text[:limit]
    return text if text.isprintable() else repr(text)


def split_lines(text):
    """The lines of a list as Kaldi reads them: split at ``\n`` only (not at the other line
    breaks of Unicode), a final newline ending the last line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def utterance_key(path):
    """``[...]/<speaker>/<recording>/<segment>.<ext>`` -> ``<speaker>-<recording>-<segment>``;
    None if the path has fewer than three parts."""
    parts = path.replace("\\", "/").split("/")
    if len(parts) < 3 or not all(parts[-3:]):
        return None
    speaker, recording, name = parts[-3:]
    stem, dot, ext = name.rpartition(".")
    if dot and stem and "/" not in ext:
        name = stem
    return "%s-%s-%s" % (speaker, recording, name)


def convert_trials(lines, name="the list"):
    """Yield ``(enroll, test, target|nontarget, speaker1, speaker2)`` for each line of a
    VoxCeleb list; KaldiError naming the line for a bad field count, label or path, or a trial
    listed twice."""
    seen = {}
    for number, line in enumerate(lines, 1):
        fields = [field for field in _WHITESPACE.split(line) if field]
        if len(fields) != 3:
            raise KaldiError("Line %d of %s has %d fields; expected '1|0 <path> <path>': %s"
                             % (number, name, len(fields), _show(line.strip())))
        label = LABELS.get(fields[0])
        if label is None and fields[2] in LABELS:
            raise KaldiError(_kaldi_form(number, name, fields))
        if label is None:
            raise KaldiError("Line %d of %s: label %s is not 1 or 0" % (
                number, name, _show("'%s'" % fields[0])))
        keys = []
        for path in fields[1:]:
            control = _CONTROL.search(path)
            if control:
                raise KaldiError("Line %d of %s: path %s contains the control character %r, "
                                 "which a Kaldi key cannot hold; fix the list" % (
                                     number, name, repr(path[:200]), control.group()))
            key = utterance_key(path)
            if key is None:
                raise KaldiError("Line %d of %s: path '%s' is not <speaker>/<recording>/"
                                 "<segment>.wav" % (number, name, path))
            keys.append(key)
        pair = (keys[0], keys[1])
        if pair in seen:
            raise KaldiError("Trial '%s %s' appears twice in %s (lines %d and %d)" % (
                pair[0], pair[1], name, seen[pair], number))
        seen[pair] = number
        speakers = [path.replace("\\", "/").split("/")[-3] for path in fields[1:]]
        yield keys[0], keys[1], label, speakers[0], speakers[1]


def _kaldi_form(number, name, fields):
    """The message for a line with its label last: Kaldi trials already, or paths in the
    wrong order."""
    where = "Line %d of %s (%s) has its label last, as Kaldi's trials (<enroll> <test> " \
        "target|nontarget) do, where a VoxCeleb list has it first ('1|0 <path> <path>')" % (
            number, name, _show(" ".join(fields)))
    if all(utterance_key(field) is not None and "/" in field for field in fields[:2]):
        return where + ": put the label first (awk '{print $3, $1, $2}') and convert again"
    return (where + ": the file needs no conversion; give it to the scorers and "
            "compute-eer-pauc as the trials file as it is")
