"""plot-auto-choice: the automatic back-end's choice as a picture (every candidate's figure on
every source of evidence, with its standard error)."""

from pauc_backend.cli.framework.kaldi_cli import Tool
from pauc_backend.persist.auto_backend import read_choice

USAGE = """
Draws what train-pauc-auto chose and why, from the model directory's choice.txt: one panel
per source of evidence (the training folds; with --adapt the pseudo-speaker trials; with
--dev-trials the development trials), each rated candidate's pAUC with its standard-error
bar, the chosen candidate a filled star, the do-no-harm baselines open squares, the panel of
the source that rated marked "(rates)". The format follows the extension (.png or .pdf).

Usage: plot-auto-choice [options] <model-dir> <plot-wxfilename>
e.g.: plot-auto-choice exp/pauc_auto exp/pauc_auto_choice.png
"""

tool = Tool("plot-auto-choice", USAGE, docs="docs/auto-backend.md")
tool.register("title", "", "Title of the plot (default: the model directory)")


def run(opts, args):
    model_dir, out = args
    from pauc_backend import plotting
    plotting.check_plot_name(out)
    rows = read_choice(model_dir)
    plotting.plot_choice(rows, out, opts.title or model_dir)
    sources = sorted({r["source"] for r in rows})
    chosen = next((r for r in rows if "chosen" in r["role"]), None)
    tool.log.log("Wrote the choice among %d candidates on %d source%s (%s) to %s%s" % (
        len({(r["candidate"], r["lda_dim"]) for r in rows}), len(sources),
        "" if len(sources) == 1 else "s", ", ".join(sources), out,
        "; chosen %s (LDA %s)" % (chosen["candidate"], chosen["lda_dim"]) if chosen else ""))
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=2)
