"""make-calibration-trials: target and non-target trials for training a calibration or QMF,
drawn from labelled utterances (short/long duration mixes with --utt2dur, as WeSpeaker's
generate_calibration_trial.py)."""

import numpy as np

from pauc_backend.cli.framework.kaldi_cli import Tool
from pauc_backend.cli.framework.speaker_tables import read_utt2spk
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import open_output, read_float_table
from pauc_backend.models.calibration_trials import calibration_trials

USAGE = """
Draw trials "<utt1> <utt2> target|nontarget" from the utterances of <utt2spk> for training
train-calibration (QMF): with --utt2dur, --num-pairs target and --num-pairs non-target trials
for each duration mix (short-short, short-long, long-long), as WeSpeaker's
generate_calibration_trial.py; without it, one mix of all utterances. Seeded (--seed). The
speakers must be ones the back-end was NOT trained on.

Usage:  make-calibration-trials [options] <utt2spk-rspecifier> <trials-wxfilename>
e.g.: make-calibration-trials --utt2dur=ark:data/cal/utt2dur ark:data/cal/utt2spk data/cal/trials
""".strip("\n")

tool = Tool("make-calibration-trials", USAGE, docs="docs/tool-reference.md#make-calibration-trials")
tool.register("utt2dur", "", "Rspecifier of the utterances' durations in seconds: draw "
              "short-short, short-long and long-long trials")
tool.register("num-pairs", 5000, "Target and non-target trials per duration mix",
              bounds=(">0",))
tool.register("short-duration", 2.0, "Shortest duration used (seconds, exclusive)",
              bounds=(">=0",))
tool.register("long-duration", 6.0, "Durations from here on are long, below it short (seconds)",
              bounds=(">0",))
tool.register("seed", 0, "Seed of the random draws")



def _check(opts):
    if opts.short_duration >= opts.long_duration:
        raise KaldiError("Invalid options: --short-duration=%g must be below --long-duration=%g"
                         % (opts.short_duration, opts.long_duration))


tool.check(_check)


def run(opts, args):
    utt2spk_rspecifier, trials_wx = args
    utt2spk = read_utt2spk(utt2spk_rspecifier, tool.log)
    if not utt2spk:
        raise KaldiError("No utterances in %s" % utt2spk_rspecifier)
    utts = list(utt2spk)
    durations = None
    if opts.utt2dur:
        table = read_float_table(opts.utt2dur)
        missing = [u for u in utts if u not in table]
        if missing:
            raise KaldiError("Utterance '%s' of %s has no duration in %s (%d of %d have none)"
                             % (missing[0], utt2spk_rspecifier, opts.utt2dur, len(missing),
                                len(utts)))
        durations = np.array([table[u] for u in utts])
        if not np.isfinite(durations).all():
            raise KaldiError("Duration of '%s' in %s is not finite"
                             % (utts[int(np.flatnonzero(~np.isfinite(durations))[0])],
                                opts.utt2dur))
    rows1, rows2, is_target, mix = calibration_trials(
        np.array(list(utt2spk.values())), durations, opts.num_pairs,
        (opts.short_duration, opts.long_duration), opts.seed)
    if not is_target.any() or is_target.all():
        raise KaldiError("Cannot draw both target and non-target trials from %s (%d utterances "
                         "of %d speakers%s)" % (utt2spk_rspecifier, len(utts),
                                                len(set(utt2spk.values())),
                                                " in the duration ranges" if opts.utt2dur
                                                else ""))
    keys = np.array(utts)
    key1, key2 = keys[rows1], keys[rows2]
    order = np.lexsort((key2, key1))
    labels = np.where(is_target, "target", "nontarget")[order]
    with open_output(trials_wx) as out:
        out.write("".join("%s %s %s\n" % row for row in zip(key1[order], key2[order], labels))
                  .encode("utf-8"))
    for name in dict.fromkeys(mix.tolist()):
        here = mix == name
        found = (int(np.count_nonzero(here & is_target)), int(np.count_nonzero(here & ~is_target)))
        tool.log.log("%s: %d target and %d non-target trials" % (name, *found))
        if min(found) < opts.num_pairs:
            tool.log.warning("%s: only %d target and %d non-target distinct trials could be "
                             "drawn (asked for %d of each)" % (name, *found, opts.num_pairs))
    tool.log.log("Wrote %d trials (%d target) from %d utterances of %d speakers to %s"
                 % (is_target.size, int(is_target.sum()), len(utts), len(set(utt2spk.values())),
                    trials_wx))
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=2, outputs=-1)


if __name__ == "__main__":
    raise SystemExit(main())
