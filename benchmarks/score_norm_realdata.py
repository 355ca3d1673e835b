"""When does cohort score normalisation help? EER / minDCF / pAUC of every scoring tool of
recipes/etri, without and with z/t/s/as-norm, on a recipe directory (stages 0-4 done).

The cohort is the training speakers' mean vectors (compute-vector-mean over train/spk2utt of
the raw vectors), taken through each system's enrollment pipeline (train mean, LDA, length
norm; PLDA-latent systems through transform-plda-latent), so it lies in the same space as the
system's inputs and counts as one utterance per speaker. Only training data enter the cohort.
Prints one markdown table. By hand (not a test), e.g.:

    recipes/etri/run.sh --dir /tmp/etri --stop-stage 4
    python benchmarks/score_norm_realdata.py /tmp/etri [--top-n 20,50,100]
"""

import argparse
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(REPO, "bin")


def sh(command):
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run(["bash", "-o", "pipefail", "-c", command], env=env, check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir", help="--dir of recipes/etri/run.sh (holds data/ and exp/)")
    parser.add_argument("--top-n", default="20,50,100")
    parser.add_argument("--systems", default="cosine,plda,pauc_lnorm,pauc_plda")
    parser.add_argument("--methods", default="none,z,t,s", help="besides as at each --top-n")
    args = parser.parse_args()
    data, exp = os.path.join(args.dir, "data"), os.path.join(args.dir, "exp")
    out = os.path.join(exp, "score_norm")
    os.makedirs(out, exist_ok=True)
    trials = os.path.join(data, "trials")
    lda = ("ark:compute-vector-mean ark:{d}/train/spk2utt scp:{d}/train/xvector.scp ark:- | "
           "subtract-vector-mean {e}/mean.vec ark:- ark:- | "
           "transform-vectors {e}/transform.mat ark:- ark:- |").format(d=data, e=exp)
    sh("normalize-vector-length --scaleup=false '%s' ark:%s/cohort_lnorm.ark" % (lda, out))
    sh("normalize-vector-length '%s' ark:%s/cohort_plda_in.ark" % (lda, out))
    sh("transform-plda-latent %s/plda 'ark:normalize-vector-length ark:%s/cohort_plda_in.ark "
       "ark:- |' ark:%s/cohort_plda_latent.ark" % (exp, out, out))
    enroll_lda = ("ark:subtract-vector-mean {e}/mean.vec scp:{e}/enroll_spk_xvector.scp ark:- |"
                  " transform-vectors {e}/transform.mat ark:- ark:- | normalize-vector-length "
                  "ark:- ark:- |").format(e=exp)
    test_lda = ("ark:subtract-vector-mean {e}/mean.vec scp:{d}/test/xvector.scp ark:- | "
                "transform-vectors {e}/transform.mat ark:- ark:- | normalize-vector-length "
                "ark:- ark:- |").format(e=exp, d=data)
    systems = {
        "cosine": ("score-cosine-trials {norm} \"cut -d' ' -f1,2 %s |\" scp:%s/lnorm/enroll.scp "
                   "scp:%s/lnorm/test.scp {out}" % (trials, exp, exp), "cohort_lnorm"),
        "plda": ("score-plda-trials {norm} --num-utts=ark:%s/enroll_num_utts.ark %s/plda '%s' "
                 "'%s' \"cut -d' ' -f1,2 %s |\" {out}" % (exp, exp, enroll_lda, test_lda,
                                                         trials), "cohort_plda_in"),
        "pauc_lnorm": ("score-pauc-trials {norm} %s/metrics/pauc_lnorm scp:%s/lnorm/enroll.scp "
                       "scp:%s/lnorm/test.scp %s {out}" % (exp, exp, exp, trials),
                       "cohort_lnorm"),
        "pauc_plda": ("score-pauc-trials {norm} %s/metrics/pauc_plda "
                      "scp:%s/plda_latent/enroll.scp scp:%s/plda_latent/test.scp %s {out}"
                      % (exp, exp, exp, trials), "cohort_plda_latent"),
    }
    configs = [(method, None) for method in args.methods.split(",")] + [
        ("as", int(n)) for n in args.top_n.split(",")]
    print("| System | norm | EER(%) | minDCF(0.01) | pAUC[0,0.01] |")
    print("|---|---|---|---|---|")
    for name in args.systems.split(","):
        command, cohort = systems[name]
        for method, top_n in configs:
            norm = "" if method == "none" else "--score-norm=%s --cohort=ark:%s/%s.ark" % (
                method, out, cohort)
            if top_n:
                norm += " --top-n=%d" % top_n
            scores = os.path.join(out, "%s_%s%s" % (name, method, top_n or ""))
            sh(command.format(norm=norm, out=scores))
            summary = json.loads(sh("compute-eer-pauc --report=json %s %s" % (scores, trials)))
            label = method if top_n is None else "%s top-%d" % (method, top_n)
            print("| %s | %s | %.2f | %.4f | %.4f |" % (
                name, label, 100 * summary["eer"], summary["min_dcf"][0]["min_dcf"],
                summary["pauc"]))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
