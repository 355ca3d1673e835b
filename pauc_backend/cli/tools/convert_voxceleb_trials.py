"""convert-voxceleb-trials: a VoxCeleb1 trial list (O, E or H) as Kaldi trials, with the
utterance keys of egs/voxceleb/v2 (local/make_voxceleb1_v2.pl)."""

from pauc_backend.cli.framework.kaldi_cli import Tool
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import open_output, outputs, streams
from pauc_backend.kaldi_io.lines import read_line_file
from pauc_backend.voxceleb import convert_trials, split_lines

USAGE = """
Convert a VoxCeleb1 trial list (lines "1|0 <path1> <path2>": the lists O, E and H, cleaned
or not) into Kaldi trials "<enroll> <test> target|nontarget", with Kaldi's egs/voxceleb/v2
keys: id10270/x6uYqmx31kE/00001.wav becomes id10270-x6uYqmx31kE-00001 (any folders before
the speaker are dropped, as is the extension). Trials keep the list's order; a trial listed
twice is an error. With --utt2spk the utterances of the list are also written as
"<utt> <speaker>" lines (sorted), e.g. to check that a dump of embeddings covers them.

Usage: convert-voxceleb-trials [options] <voxceleb-list-rxfilename> <trials-wxfilename>
 e.g.: convert-voxceleb-trials vox1_H_cleaned.txt data/voxceleb1_test/trials_H
"""

tool = Tool("convert-voxceleb-trials", USAGE, docs="docs/recipes-voxceleb.md")
tool.register("utt2spk", "", "If set, write the utterances of the list with their speakers to "
              "this wxfilename")


def run(opts, args):
    list_rx, trials_wx = args
    if opts.utt2spk:
        outputs.check_output(opts.utt2spk)
    data, start = read_line_file(list_rx, what="VoxCeleb list")   # lines of at most 1 MiB
    try:
        text = bytes(data[start:]).decode("utf-8")
    except UnicodeDecodeError as err:
        raise KaldiError("%s is not valid UTF-8 (byte %d)" % (streams.printable(list_rx),
                                                             err.start)) from None
    lines, speakers = [], {}
    counts = {"target": 0, "nontarget": 0}
    for enroll, test, label, spk1, spk2 in convert_trials(split_lines(text),
                                                          streams.printable(list_rx)):
        lines.append("%s %s %s\n" % (enroll, test, label))
        counts[label] += 1
        speakers[enroll], speakers[test] = spk1, spk2
    if not lines:
        raise KaldiError("No trials in %s; %s not written" % (streams.printable(list_rx),
                                                             trials_wx))
    with open_output(trials_wx) as out:
        out.write("".join(lines).encode("utf-8"))
    if opts.utt2spk:
        with open_output(opts.utt2spk) as out:
            out.write("".join("%s %s\n" % (u, speakers[u]) for u in sorted(speakers))
                      .encode("utf-8"))
    tool.log.log("Converted %d trials (%d target, %d nontarget) of %d utterances." % (
        len(lines), counts["target"], counts["nontarget"], len(speakers)))
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=2, outputs=-1)
