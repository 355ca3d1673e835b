"""make-synthetic-vectors: a seeded synthetic corpus as Kaldi data directories (the demo's data)."""

import os

from pauc_backend.cli.framework.kaldi_cli import Tool
from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.kaldi_io import open_output, write_vector_table

USAGE = """
Write a seeded synthetic speaker-verification corpus (PLDA-like, heavy-tailed within-speaker
noise, an in-domain shift for adapt/enroll/test) as <out-dir>/{train,adapt,enroll,test}/
{xvector.ark,xvector.scp,spk2utt,utt2spk} and <out-dir>/trials (enroll_spk test_utt
target|nontarget); --durations=true adds utt2dur files, --num-dev-speakers=N a development
evaluation. The same --seed gives the same files.

Usage:  make-synthetic-vectors [options] <out-dir>
e.g.: make-synthetic-vectors --seed=777 --dim=80 data
"""

tool = Tool("make-synthetic-vectors", USAGE, docs="docs/tool-reference.md#make-synthetic-vectors")
tool.register("seed", 777, "Seed of numpy's default_rng")
tool.register("dim", 80, "Dimension of the vectors")
tool.register("num-train-speakers", 400, "Labelled out-of-domain training speakers")
tool.register("num-adapt-speakers", 150, "Speakers of the unlabelled in-domain adaptation set")
tool.register("num-eval-speakers", 80, "Evaluation speakers (enrolled and tested)")
tool.register("within-dof", 5.0, "Degrees of freedom of the Student-t within-speaker noise "
              "(> 2; 'inf' for Gaussian noise)")
tool.register("shift-scale", 1.0, "Standard deviation of the in-domain mean shift")
tool.register("num-dev-speakers", 0, "Speakers of a development evaluation (dev_enroll, "
              "dev_test, dev_trials; 0: none)", bounds=(">=0",))
tool.register("durations", False, "Give each utterance a duration (utt2dur) that scales its "
              "within-speaker noise")


def _write_lines(path, lines):
    with open_output(path) as stream:
        stream.write("".join(line + "\n" for line in lines).encode("utf-8"))


def _write_set(out_dir, name, data):
    set_dir = os.path.join(out_dir, name)
    os.makedirs(set_dir, exist_ok=True)
    ark, scp = os.path.join(set_dir, "xvector.ark"), os.path.join(set_dir, "xvector.scp")
    write_vector_table("ark,scp:%s,%s" % (ark, scp), data.keys, data.X)
    spk2utt = data.spk2utt()
    _write_lines(os.path.join(set_dir, "spk2utt"),
                 ["%s %s" % (spk, " ".join(utts)) for spk, utts in sorted(spk2utt.items())])
    _write_lines(os.path.join(set_dir, "utt2spk"),
                 ["%s %s" % pair for pair in sorted(zip(data.keys, data.labels))])
    if data.durations is not None:
        _write_lines(os.path.join(set_dir, "utt2dur"),
                     ["%s %g" % pair for pair in zip(data.keys, data.durations.tolist())])
    tool.log.log("Wrote %d vectors of dim %d, %d speakers, to %s" % (
        len(data.keys), data.X.shape[1], len(spk2utt), set_dir))


def run(opts, args):
    out_dir = args[0]
    corpus = make_speaker_corpus(seed=opts.seed, dim=opts.dim,
                                 num_train_speakers=opts.num_train_speakers,
                                 num_adapt_speakers=opts.num_adapt_speakers,
                                 num_eval_speakers=opts.num_eval_speakers,
                                 within_dof=opts.within_dof, shift_scale=opts.shift_scale,
                                 durations=opts.durations,
                                 num_dev_speakers=opts.num_dev_speakers)
    os.makedirs(out_dir, exist_ok=True)
    for name in ("train", "adapt", "enroll", "test"):
        _write_set(out_dir, name, getattr(corpus, name))
    _write_trials(os.path.join(out_dir, "trials"), corpus.trial_enroll, corpus.trial_test,
                  corpus.trial_target)
    if corpus.dev is not None:
        enroll, test, trial_enroll, trial_test, trial_target = corpus.dev
        _write_set(out_dir, "dev_enroll", enroll)
        _write_set(out_dir, "dev_test", test)
        _write_trials(os.path.join(out_dir, "dev_trials"), trial_enroll, trial_test,
                      trial_target)
    return 0


def _write_trials(path, trial_enroll, trial_test, trial_target):
    labels = ["target" if t else "nontarget" for t in trial_target]
    _write_lines(path, ["%s %s %s" % row for row in zip(trial_enroll, trial_test, labels)])
    tool.log.log("Wrote %d trials (%d target) to %s" % (len(labels), int(trial_target.sum()),
                                                        path))


def main(argv=None):
    return tool.main(run, argv, num_args=1)


if __name__ == "__main__":
    raise SystemExit(main())
