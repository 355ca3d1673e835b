"""import-vectors: embeddings from .npy/.npz files, a folder of .npy files or bracket-less text
into a Kaldi table of vectors (what Kaldi's copy-vector and every back-end tool read)."""

from pauc_backend.cli.framework.kaldi_cli import Tool
from pauc_backend.embedding_files import FORMATS, read_embeddings
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import classify_wspecifier, write_vector_table

USAGE = """
Import speaker embeddings written by other toolkits as a Kaldi table of float vectors (FV), in
the input's order: --format=npy (one 2-D array, a vector per row, keys from --keys), npz,
npy-dir (a folder of <key>.npy) or text (lines <key> <v1> <v2> ...); auto picks by extension.
Keys must be Kaldi tokens, each once; vectors with NaN or Inf are refused; VoxCeleb path keys
become egs/voxceleb/v2's keys (a LOG line says so).

Usage: import-vectors [options] <embeddings-in> <vector-wspecifier>
 e.g.: import-vectors --keys=utt_list embeddings.npy ark,scp:xvector.ark,xvector.scp
   import-vectors embeddings.npz ark:- | copy-vector ark:- ark,t:-
"""

tool = Tool("import-vectors", USAGE, docs="docs/tool-reference.md#import-vectors")
tool.register("format", "auto", "Input format", choices=FORMATS)
tool.register("keys", "", "rxfilename of the keys in row order, one per line (the first "
              "field, so a wav.scp or utt2spk in that order also serves); needed for npy")
tool.register("npz-keys", "", "Name of the array of keys in an .npz (default: the only "
              "string array)")
tool.register("npz-vectors", "", "Name of the array of vectors in an .npz (default: the only "
              "2-D array)")
tool.register("map-voxceleb-keys", True, "Write keys that are VoxCeleb paths "
              "(id10270/x6uYqmx31kE/00001.wav) as egs/voxceleb/v2 utterance keys "
              "(id10270-x6uYqmx31kE-00001), as convert-voxceleb-trials writes them; false keeps "
              "every key as it is")


def run(opts, args):
    source, wspecifier = args
    if classify_wspecifier(wspecifier) is None:
        raise KaldiError("Invalid wspecifier %s: the output is a table (e.g. ark:out.ark or "
                         "ark,scp:out.ark,out.scp)" % wspecifier)
    keys, X, description = read_embeddings(source, opts.format, opts.keys or None,
                                           opts.npz_keys, opts.npz_vectors,
                                           opts.map_voxceleb_keys, tool.log.log)
    if not len(keys):
        raise KaldiError("No vectors in %s; %s not written" % (description, wspecifier))
    write_vector_table(wspecifier, keys, X)
    tool.log.log("Imported %d vectors of dimension %d from %s" % (len(keys), X.shape[1],
                                                                 description))
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=2, outputs=-1)
