"""train-lda and train-plda read their vectors once, as a stream (issue 27, item 3).

The same table given as an archive, a script, standard input fed through a pipe (no seek) or a
command's output gives the same model file byte for byte (the statistics are accumulated in
blocks that do not depend on where the reader's chunks end); a table in another order
(speakers interleaved) gives the same model up to the rounding of the summation order. Kaldi's own
results on these tables are pinned by test_vector_tools.py, test_plda_tools.py and the interop
twins; here the forms of input are compared with each other.
"""

import numpy as np
import pytest
from conftest import run_tool

from pauc_backend.kaldi_io import read_matrix, read_plda, read_vector_table, write_vector_table


DIM, SPEAKERS, PER_SPEAKER = 256, 400, 30  # 12,000 vectors: 3 blocks of 4,096 rows, 3 chunks


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """A table larger than one block of the statistics and one chunk of the reader, as an
    archive and a script, with utt2spk and spk2utt."""
    folder = tmp_path_factory.mktemp("streamed")
    rng = np.random.default_rng(27)
    spk = ["spk%04d" % s for s in range(SPEAKERS)]
    keys = ["%s-u%02d" % (s, u) for s in spk for u in range(PER_SPEAKER)]
    centres = rng.standard_normal((SPEAKERS, DIM)) * np.linspace(3, 0.3, DIM)
    X = (np.repeat(centres, PER_SPEAKER, axis=0) + rng.standard_normal((len(keys), DIM))
         + 4.0).astype(np.float32)
    write_vector_table("ark,scp:%s,%s" % (folder / "x.ark", folder / "x.scp"), keys, X)
    (folder / "utt2spk").write_text("".join("%s %s\n" % (k, k[:7]) for k in keys))
    (folder / "spk2utt").write_text("".join(
        "%s %s\n" % (s, " ".join(keys[i * PER_SPEAKER:(i + 1) * PER_SPEAKER]))
        for i, s in enumerate(spk)))
    return folder, keys, X


def forms(folder):
    """rspecifiers and stdin of one table: ark, scp, a pipe from cat, stdin (a pipe)."""
    ark = folder / "x.ark"
    return [("ark:%s" % ark, None), ("scp:%s" % (folder / "x.scp"), None),
            ("ark:cat %s |" % ark, None), ("ark:-", ark.read_bytes())]


def shuffled(folder, keys, X, seed):
    order = np.random.default_rng(seed).permutation(len(keys))
    path = folder / ("shuffled%d.ark" % seed)
    write_vector_table("ark:%s" % path, [keys[i] for i in order], X[order])
    return "ark:%s" % path


def test_train_lda_gives_the_same_bytes_from_every_form_of_input(table, tmp_path):
    folder, keys, X = table
    outputs = []
    for i, (rspecifier, stdin) in enumerate(forms(folder)):
        out = tmp_path / ("lda%d.mat" % i)
        run_tool("train-lda", "--dim=16", rspecifier, "ark:%s" % (folder / "utt2spk"), out,
                 input=stdin, check=True)
        outputs.append(out.read_bytes())
    assert all(o == outputs[0] for o in outputs[1:])
    # another order: the mean is summed in another order, so its float32 rounding and the
    # centred vectors may differ in their last bits
    out = tmp_path / "shuffled.mat"
    run_tool("train-lda", "--dim=16", shuffled(folder, keys, X, 1),
             "ark:%s" % (folder / "utt2spk"), out, check=True)
    ours, ref = read_matrix(str(out)).astype(float), read_matrix(str(tmp_path / "lda0.mat"))
    signs = np.sign(np.sum(ours * ref, axis=1))[:, None]
    scale = np.abs(ref[:, :-1]).max(axis=1, keepdims=True)
    assert (np.abs(ours * signs - ref)[:, :-1] / scale).max() < 1e-5


def test_train_plda_gives_the_same_bytes_from_every_form_of_input(table, tmp_path):
    folder, keys, X = table
    outputs = []
    for i, (rspecifier, stdin) in enumerate(forms(folder)):
        out = tmp_path / ("plda%d" % i)
        run_tool("train-plda", "ark:%s" % (folder / "spk2utt"), rspecifier, out, input=stdin,
                 check=True)
        outputs.append(out.read_bytes())
    assert all(o == outputs[0] for o in outputs[1:])
    out = tmp_path / "shuffled.plda"
    run_tool("train-plda", "ark:%s" % (folder / "spk2utt"), shuffled(folder, keys, X, 2), out,
             check=True)
    mean, transform, psi = read_plda(str(out))
    r_mean, r_transform, r_psi = read_plda(str(tmp_path / "plda0"))
    np.testing.assert_allclose(psi, r_psi, rtol=1e-10)
    np.testing.assert_allclose(mean, r_mean, rtol=0, atol=1e-12 * np.abs(r_mean).max())
    signs = np.sign(np.sum(transform * r_transform, axis=1))[:, None]
    np.testing.assert_allclose(transform * signs, r_transform, rtol=0,
                               atol=1e-10 * np.abs(r_transform).max())


def test_train_plda_counts_an_utterance_listed_twice_once_per_listing(golden, tmp_path):
    """As ivector-compute-plda, which looks each listed utterance up: listing a speaker's
    utterances again under a new speaker is the same as giving that speaker a copy."""
    lines = (golden / "data/train/spk2utt").read_text().splitlines()
    first = lines[0].split()
    (tmp_path / "spk2utt").write_text("\n".join(lines + ["again " + " ".join(first[1:])]) + "\n")
    keys, X = read_vector_table("ark:%s" % (golden / "exp/train_lda_norm.ark"))
    copies = [k for k in keys if k in first[1:]]
    write_vector_table("ark:%s" % (tmp_path / "with_copy.ark"), keys + ["c-" + k for k in copies],
                       np.vstack([X, X[[keys.index(k) for k in copies]]]))
    (tmp_path / "spk2utt_copy").write_text(
        "\n".join(lines + ["again " + " ".join("c-" + k for k in first[1:])]) + "\n")
    run_tool("train-plda", "ark:%s" % (tmp_path / "spk2utt"),
             "ark:%s" % (golden / "exp/train_lda_norm.ark"), tmp_path / "a", check=True)
    run_tool("train-plda", "ark:%s" % (tmp_path / "spk2utt_copy"),
             "ark:%s" % (tmp_path / "with_copy.ark"), tmp_path / "b", check=True)
    for a, b in zip(read_plda(str(tmp_path / "a")), read_plda(str(tmp_path / "b"))):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_train_plda_refuses_a_listed_utterance_twice_in_the_table(golden, tmp_path):
    keys, X = read_vector_table("ark:%s" % (golden / "exp/train_lda_norm.ark"))
    ark = tmp_path / "dup.ark"
    write_vector_table("ark:%s" % ark, keys + keys[5:6], np.vstack([X, X[5:6]]))
    (tmp_path / "out").write_bytes(b"keep")
    proc = run_tool("train-plda", "ark:data/train/spk2utt", "ark:%s" % ark, tmp_path / "out",
                    cwd=golden)
    errors = [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]
    assert proc.returncode not in (0, 1) and len(errors) == 1, proc.stderr.decode()
    assert "Duplicate key '%s'" % keys[5] in errors[0] and "dup.ark" in errors[0]
    assert (tmp_path / "out").read_bytes() == b"keep"


@pytest.mark.parametrize("tool", ["train-lda", "train-plda"])
def test_nan_in_a_piped_vector_is_one_error_naming_it(table, tmp_path, tool):
    folder, keys, X = table
    X = X.copy()
    X[9000, 3] = np.nan  # past the first block and the reader's first chunk
    ark = tmp_path / "nan.ark"
    write_vector_table("ark:%s" % ark, keys, X)
    args = (["ark:-", "ark:%s" % (folder / "utt2spk")] if tool == "train-lda"
            else ["ark:%s" % (folder / "spk2utt"), "ark:-"])
    proc = run_tool(tool, *args, tmp_path / "out", input=ark.read_bytes())
    errors = [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]
    assert proc.returncode not in (0, 1) and len(errors) == 1, proc.stderr.decode()
    assert keys[9000] in errors[0] and "NaN" in errors[0]
    assert not (tmp_path / "out").exists()
