"""import-vectors (issue 19 item 4a): numpy and bracket-less text embeddings into Kaldi tables
that the real Kaldi copy-vector reads, and one ERROR line naming the file and key otherwise."""

import io
import subprocess
import warnings
import zipfile

import numpy as np
import pytest
from conftest import run_shell, run_tool

from interop.real_kaldi import find_kaldi_root, kaldi_env
from pauc_backend.kaldi_io import read_vector_table

KEYS = ["id10270-x6uYqmx31kE-00001", "id10270-8jEAjG6SegY-00008", "id10271-1gtz-CUIygI-00002",
        "spk\u00e9-3", "u5"]


@pytest.fixture
def vectors():
    return np.random.RandomState(7).randn(len(KEYS), 6) * 3.0      # float64, as dumps often are


def write_inputs(folder, X):
    """The same embeddings in every format: (format name, arguments for import-vectors)."""
    (folder / "utt_list").write_text("".join(k + "\n" for k in KEYS))
    (folder / "wav.scp").write_text("".join("%s /data/%s.wav\n" % (k, k) for k in KEYS))
    np.save(folder / "e.npy", X)
    np.save(folder / "e32.npy", X.astype(np.float32))
    np.savez(folder / "keys.npz", embeddings=X, utts=np.array(KEYS))
    np.savez(folder / "bkeys.npz", embs=X, names=np.array([k.encode() for k in KEYS]))
    np.savez(folder / "per_key.npz", **dict(zip(KEYS, X)))
    np.savez(folder / "listed.npz", emb=X, other=np.arange(3.0))
    (folder / "dir").mkdir()
    for key, x in zip(KEYS, X):
        np.save(folder / "dir" / (key + ".npy"), x[None, :] if key == "u5" else x)
    (folder / "e.txt").write_text("".join(
        "%s %s\n" % (k, " ".join(repr(float(v)) for v in x)) for k, x in zip(KEYS, X)))
    return [("npy", ["--keys=utt_list", "e.npy"]),
            ("npy keyed by a wav.scp", ["--keys=wav.scp", "e32.npy"]),
            ("npz with a key array", ["keys.npz"]),
            ("npz with byte-string keys", ["bkeys.npz"]),
            ("npz of one array per key", ["per_key.npz"]),
            ("npz named arrays and a key list", ["--keys=utt_list", "--npz-vectors=emb",
                                                 "listed.npz"]),
            ("folder of .npy files", ["dir"]),
            ("text", ["e.txt"])]


def test_every_format_gives_one_archive_that_kaldi_copy_vector_reads(tmp_path, vectors):
    root = find_kaldi_root()
    cases = write_inputs(tmp_path, vectors)
    expected = None
    for name, args in cases:
        out = "ark,scp:%s,%s" % (tmp_path / "out.ark", tmp_path / "out.scp")
        proc = run_tool("import-vectors", *args, out, cwd=tmp_path)
        assert proc.returncode == 0, (name, proc.stderr.decode())
        assert "LOG" in proc.stderr.decode() and "Imported 5 vectors of dimension 6" in \
            proc.stderr.decode()
        for rspecifier in ("ark:out.ark", "scp:out.scp"):
            kaldi = subprocess.run([str(root / "bin/copy-vector"), rspecifier, "ark,t:-"],
                                   cwd=tmp_path, env=kaldi_env(root), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
            assert kaldi.returncode == 0, (name, kaldi.stderr.decode())
            assert "Copied 5 vectors." in kaldi.stderr.decode()
            lines = sorted(kaldi.stdout.splitlines())    # the order is checked below
            expected = expected or lines
            assert lines == expected, name
        keys, X = read_vector_table("ark:%s" % (tmp_path / "out.ark"))
        order = sorted(range(len(KEYS)), key=KEYS.__getitem__) if "folder" in name \
            else range(len(KEYS))      # a folder is read in sorted file-name order
        assert keys == [KEYS[i] for i in order], name
        assert np.array_equal(X, vectors.astype(np.float32)[list(order)]), name


def test_text_from_stdin_and_output_to_a_pipe(tmp_path, vectors):
    write_inputs(tmp_path, vectors)
    proc = run_shell("cat e.txt | import-vectors - ark:- | copy-vectors ark:- ark,t:-",
                     cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().splitlines()[0].startswith(KEYS[0] + "  [ ")
    proc = run_shell("cat e.npy | import-vectors --format=npy --keys=utt_list - ark,t:-",
                     cwd=tmp_path)
    assert proc.returncode == 0 and len(proc.stdout.decode().splitlines()) == 5


def _bad_inputs(folder, X):
    write_inputs(folder, X)
    with_nan = X.copy()
    with_nan[3, 2] = np.nan
    np.save(folder / "nan.npy", with_nan)
    huge = X.copy()
    huge[1, 0] = 1e300                 # finite in float64, Inf in float32
    np.save(folder / "huge.npy", huge)
    np.savez(folder / "pickled.npz", emb=X, keys=np.array(KEYS, dtype=object))
    np.savez(folder / "two.npz", a=X, b=X)
    np.save(folder / "three_d.npy", X[None])
    (folder / "short_list").write_text("".join(k + "\n" for k in KEYS[:3]))
    (folder / "dup_list").write_text("".join(k + "\n" for k in KEYS[:4] + KEYS[1:2]))
    text = (folder / "e.txt").read_text().splitlines()
    for name, lines in (("dup.txt", text + [text[1]]), ("ragged.txt", text[:2] + ["x 1 2"]),
                        ("word.txt", text[:3] + ["x 1 2 3 four 5 6"]),
                        ("inf.txt", text[:1] + ["x 1 2 3 4 5 inf"]),
                        ("brackets.txt", ["x  [ 1 2 ]"])):
        (folder / name).write_text("\n".join(lines) + "\n")
    _hostile_npz(folder, X)
    (folder / "latin1_list").write_bytes(b"u1\nu\xe92\nu3\nu4\nu5\n")
    (folder / "mixed_list").write_text("id10270/x6uYqmx31kE/00001.wav\nu2\nu3\nu4\nu5\n")
    return {
        # issue 26 items 4 and 6: an .npz that numpy would read wrongly or not at all
        "npz member named twice": (["dup.npz"], "dup.npz holds two arrays named '%s' (members "
                                                "'%s.npy' and '%s.npy'" % ((KEYS[1],) * 3)),
        "npz members x and x.npy": (["dup2.npz"], "dup2.npz holds two arrays named 'emb'"),
        "truncated npz": (["cut.npz"], "Cannot read cut.npz as an .npz archive: File is not a "
                                       "zip file (a truncated or damaged .npz?)"),
        "damaged npz member": (["bad_member.npz"], "Cannot read array 'emb' of bad_member.npz"),
        "npz member declaring a huge array": (["huge_member.npz"],
                                              "Out of memory reading array 'emb' of "
                                              "huge_member.npz"),
        "npz keys not UTF-8": (["latin1_keys.npz"], "Key 2 of array 'names' in latin1_keys.npz "
                                                    "is not valid UTF-8"),
        "key list not UTF-8": (["--keys=latin1_list", "e.npy"],
                               "Line 2 of latin1_list is not valid UTF-8"),
        "some keys VoxCeleb paths": (["--keys=mixed_list", "e.npy"],
                                     "Key 'u2' (line 2 of mixed_list) is not a VoxCeleb path"),
        "npy without keys": (["e.npy"], "An .npy array has no keys: give them with --keys"),
        "key count mismatch": (["--keys=short_list", "e.npy"],
                               "3 keys in short_list but 5 vectors in e.npy"),
        "duplicate key in the list": (["--keys=dup_list", "e.npy"],
                                      "Duplicate key %s (line 2 of dup_list and line 5 of "
                                      "dup_list)" % KEYS[1]),
        "duplicate key in text": (["dup.txt"], "Duplicate key %s (line 2 of dup.txt and line 6 "
                                               "of dup.txt)" % KEYS[1]),
        "NaN": (["--keys=utt_list", "nan.npy"],
                "Vector %s (row 4 of nan.npy) contains NaN or Inf" % KEYS[3]),
        "beyond float32": (["--keys=utt_list", "huge.npy"],
                           "Vector %s (row 2 of huge.npy) contains NaN or Inf" % KEYS[1]),
        "Inf in text": (["inf.txt"], "Vector x (line 2 of inf.txt) contains NaN or Inf"),
        "pickled keys": (["pickled.npz"], "keys (pickled objects)"),
        "ambiguous npz": (["two.npz"], "Cannot tell the keys and vectors apart in two.npz"),
        "3-D array": (["--keys=utt_list", "three_d.npy"], "three_d.npy has shape (1, 5, 6)"),
        "ragged text": (["ragged.txt"], "Line 3 of ragged.txt (key x) has 2 values but line 1 "
                                        "has 6"),
        "a word in text": (["word.txt"], "Line 4 of word.txt: 'four' is not a number"),
        "Kaldi text archive": (["brackets.txt"], "Kaldi's brackets"),
        "--keys with text": (["--keys=utt_list", "e.txt"], "--keys does not apply to text"),
        "missing file": (["--keys=utt_list", "nothere.npy"], "nothere.npy"),
    }


def _npy_bytes(array):
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def _hostile_npz(folder, X):
    """.npz files numpy reads wrongly (a name twice: one array silently dropped) or fails on
    with exceptions other than a clean error (truncated, damaged, absurd shape)."""
    with zipfile.ZipFile(folder / "dup.npz", "w") as z, warnings.catch_warnings():
        warnings.simplefilter("ignore")                   # zipfile's "Duplicate name"
        for key, x in list(zip(KEYS, X)) + [(KEYS[1], X[0])]:
            z.writestr(key + ".npy", _npy_bytes(x))
    with zipfile.ZipFile(folder / "dup2.npz", "w") as z:
        z.writestr("emb.npy", _npy_bytes(X))
        z.writestr("emb", _npy_bytes(X[:2]))
        z.writestr("keys.npy", _npy_bytes(np.array(KEYS)))
    whole = (folder / "keys.npz").read_bytes()
    (folder / "cut.npz").write_bytes(whole[:len(whole) // 2])
    np.savez_compressed(folder / "packed.npz", emb=X, utts=np.array(KEYS))
    damaged = bytearray((folder / "packed.npz").read_bytes())
    damaged[60] ^= 0xFF                                   # inside the first member's data
    (folder / "bad_member.npz").write_bytes(bytes(damaged))
    header = _npy_bytes(np.zeros(1))
    huge = header.replace(b"(1,)", b"(%d,)" % 10 ** 15)  # 8 PB declared, 8 bytes held
    with zipfile.ZipFile(folder / "huge_member.npz", "w") as z:
        z.writestr("emb.npy", huge)
        z.writestr("utts.npy", _npy_bytes(np.array(KEYS[:1])))
    np.savez(folder / "latin1_keys.npz", embs=X, names=np.array(
        [k.encode("utf-8") if i != 1 else b"u\xe9" for i, k in enumerate(KEYS)]))


def test_bad_input_is_one_error_naming_file_and_key_and_writes_nothing(tmp_path, vectors):
    cases = _bad_inputs(tmp_path, vectors)
    for name, (args, message) in cases.items():
        out = tmp_path / "out.ark"
        proc = run_tool("import-vectors", *args, "ark:%s" % out, cwd=tmp_path)
        errors = [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]
        assert proc.returncode == 255, (name, proc.stderr.decode())
        assert len(errors) == 1 and message in errors[0], (name, errors)
        assert not out.exists(), name


def test_output_must_be_a_table(tmp_path, vectors):
    write_inputs(tmp_path, vectors)
    proc = run_tool("import-vectors", "e.txt", "out.ark", cwd=tmp_path)
    assert proc.returncode == 255 and b"Invalid wspecifier out.ark" in proc.stderr
    assert not (tmp_path / "out.ark").exists()


def test_voxceleb_path_keys_become_the_keys_convert_voxceleb_trials_writes(tmp_path, vectors):
    """Issue 28's first hour: embeddings listed by their VoxCeleb paths, the official list
    converted with convert-voxceleb-trials, then scored: every trial finds both keys."""
    paths = ["id10270/x6uYqmx31kE/00001.wav", "id10270/8jEAjG6SegY/00008.wav",
             "/corpora/vox1/wav/id10271/1gtz-CUIygI/00002.wav", "id10271/abc/00003.wav",
             "id10272/def/00001.wav"]
    (tmp_path / "paths").write_text("".join(p + "\n" for p in paths))
    np.save(tmp_path / "e.npy", vectors)
    (tmp_path / "vox1_list").write_text(
        "1 id10270/x6uYqmx31kE/00001.wav id10270/8jEAjG6SegY/00008.wav\n"
        "0 id10270/x6uYqmx31kE/00001.wav id10271/1gtz-CUIygI/00002.wav\n"
        "0 id10271/abc/00003.wav id10272/def/00001.wav\n")
    proc = run_tool("import-vectors", "--keys=paths", "e.npy", "ark:x.ark", cwd=tmp_path)
    log = proc.stderr.decode()
    assert proc.returncode == 0, log
    assert "Keys of paths are VoxCeleb paths" in log and \
        "id10270/x6uYqmx31kE/00001.wav -> id10270-x6uYqmx31kE-00001" in log
    keys, X = read_vector_table("ark:%s" % (tmp_path / "x.ark"))
    assert keys == ["id10270-x6uYqmx31kE-00001", "id10270-8jEAjG6SegY-00008",
                    "id10271-1gtz-CUIygI-00002", "id10271-abc-00003", "id10272-def-00001"]
    assert np.array_equal(X, vectors.astype(np.float32))
    run_tool("convert-voxceleb-trials", "vox1_list", "trials", cwd=tmp_path, check=True)
    proc = run_tool("score-cosine-trials", "--normalize=true", "trials", "ark:x.ark",
                    "ark:x.ark", "scores", cwd=tmp_path)
    assert proc.returncode == 0 and b"Processed 3 trials, 0 had errors" in proc.stderr
    assert b"WARNING" not in proc.stderr, proc.stderr
    assert len((tmp_path / "scores").read_text().splitlines()) == 3
    proc = run_tool("import-vectors", "--map-voxceleb-keys=false", "--keys=paths", "e.npy",
                    "ark,t:-", cwd=tmp_path)
    assert proc.returncode == 0 and b"VoxCeleb" not in proc.stderr
    assert [line.split()[0] for line in proc.stdout.decode().splitlines()] == paths


def test_byte_order_mark_and_unicode_spaces_in_text_inputs(tmp_path, vectors):
    """A BOM (Windows editors, Python's utf-8-sig) is skipped with a LOG line; keys split at
    ASCII whitespace only, so U+00A0 and U+2028 stay inside a key, as in Kaldi."""
    keys = ["u\u00a0one", "u\u2028two", "three", "four", "five"]
    (tmp_path / "keys").write_bytes(b"\xef\xbb\xbf" + "".join(
        k + " extra field\n" for k in keys).encode())
    np.save(tmp_path / "e.npy", vectors)
    proc = run_tool("import-vectors", "--keys=keys", "e.npy", "ark:x.ark", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert b"Skipped the UTF-8 byte-order mark at the start of keys" in proc.stderr
    assert read_vector_table("ark:%s" % (tmp_path / "x.ark"))[0] == keys
