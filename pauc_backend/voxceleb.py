"""VoxCeleb1 trial lists (``1|0 <path> <path>``, lists O, E and H) as Kaldi trials.

Keys follow Kaldi's egs/voxceleb/v2 (local/make_voxceleb1_v2.pl): the path
``id10270/x6uYqmx31kE/00001.wav`` is utterance ``id10270-x6uYqmx31kE-00001`` (speaker, YouTube
recording and segment joined by ``-``, the extension dropped), and label 1 is ``target``.
"""

from pauc_backend.errors import KaldiError

LABELS = {"1": "target", "0": "nontarget", "target": "target", "nontarget": "nontarget"}


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
        fields = line.split()
        if len(fields) != 3:
            raise KaldiError("Line %d of %s has %d fields; expected '1|0 <path> <path>': %s"
                             % (number, name, len(fields), line.strip()[:200]))
        label = LABELS.get(fields[0])
        if label is None:
            raise KaldiError("Line %d of %s: label '%s' is not 1 or 0" % (number, name,
                                                                          fields[0]))
        keys = []
        for path in fields[1:]:
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
