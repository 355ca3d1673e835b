# How the recipe runs its jobs, with Kaldi's run.pl syntax ([JOB=1:N] <log> <command>).
# The default runs them on this machine; with a Kaldi checkout, "run.pl", "queue.pl --mem 4G"
# or "slurm.pl" (from egs/wsj/s5/utils) work the same way.
export train_cmd="utils/local_run.sh"
