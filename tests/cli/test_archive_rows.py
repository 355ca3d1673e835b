"""A training table read again from the archive files it was read from (issue 43 item 2):
the reader says where each row's floats are, ArchiveRows reads them there as the array it
would have held, and a file changed since the first read is an error naming it, never
other rows."""

import os

import numpy as np
import pytest

from pauc_backend.cli.framework.archive_rows import ArchiveRows
from pauc_backend.kaldi_io import iter_vector_chunks, write_vector_table


def table(tmp_path, rng, rows=3000, dim=7):
    """Rows in an archive of keys of two lengths (records not 4-byte aligned) and a script
    over it and a second archive; (keys, X, archive rspecifier, script rspecifier)."""
    keys = ["u%d" % i if i % 3 else "utt-%05d" % i for i in range(rows)]
    X = rng.standard_normal((rows, dim)).astype(np.float32)
    write_vector_table("ark:%s" % (tmp_path / "all.ark"), keys, X)
    half = rows // 2
    write_vector_table("ark,scp:%s,%s" % (tmp_path / "a.ark", tmp_path / "a.scp"),
                       keys[:half], X[:half])
    write_vector_table("ark,scp:%s,%s" % (tmp_path / "b.ark", tmp_path / "b.scp"),
                       keys[half:], X[half:])
    (tmp_path / "two.scp").write_text((tmp_path / "a.scp").read_text()
                                      + (tmp_path / "b.scp").read_text())
    return keys, X, "ark:%s" % (tmp_path / "all.ark"), "scp:%s" % (tmp_path / "two.scp")


def located(rspecifier, count, dim, order=None):
    """An ArchiveRows of the table at ``rspecifier``, its rows placed at ``order``."""
    rows = ArchiveRows(count, dim, "the test table")
    at = 0
    for chunk in iter_vector_chunks(rspecifier):
        assert chunk.where is not None
        where = np.arange(at, at + len(chunk)) if order is None else order[at:at + len(chunk)]
        assert rows.locate(where, *chunk.where)
        at += len(chunk)
    return rows


@pytest.mark.parametrize("kind", ["archive", "script"])
def test_rows_read_again_are_the_rows_read(tmp_path, kind):
    rng = np.random.default_rng(43)
    keys, X, ark, scp = table(tmp_path, rng)
    order = rng.permutation(len(keys))          # table order is not archive order
    with located(ark if kind == "archive" else scp, len(keys), X.shape[1], order) as rows:
        assert rows.files == (1 if kind == "archive" else 2)
        want = np.empty_like(X)
        want[order] = X
        assert rows.shape == X.shape and np.array_equal(rows[:], want)
        index = rng.integers(0, len(keys), (50, 4))             # any order, repeats
        assert np.array_equal(rows[index], want[index])
        some = rng.permutation(len(keys))[:700]
        assert np.array_equal(rows.view(some)[::3], want[some][::3])


def test_a_pipe_or_text_says_nowhere(tmp_path):
    rng = np.random.default_rng(44)
    keys, X, ark, _ = table(tmp_path, rng, rows=50)
    assert all(c.where is None for c in iter_vector_chunks("ark:cat %s |" % ark[4:]))
    write_vector_table("ark,t:%s" % (tmp_path / "t.ark"), keys, X)
    assert all(c.where is None for c in iter_vector_chunks("ark:%s" % (tmp_path / "t.ark")))


@pytest.mark.parametrize("change", ["rewritten", "appended", "truncated"])
def test_a_file_changed_since_it_was_read_is_an_error_naming_it(tmp_path, change):
    """Its size, its modification time or, those restored, a record's header no longer a
    float vector of the table's dimension: one ValueError naming the file."""
    rng = np.random.default_rng(45)
    keys, X, ark, _ = table(tmp_path, rng, rows=200)
    rows = located(ark, len(keys), X.shape[1])
    path = tmp_path / "all.ark"
    stamp = os.stat(path)
    if change == "rewritten":        # in place, same size, modification time restored
        with open(path, "r+b") as f:
            f.seek(len(keys[0]) + 1)
            f.write(b"\0BDV ")
        os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    elif change == "appended":
        with open(path, "ab") as f:
            f.write(b"more")
    else:
        os.truncate(path, 100)
    with pytest.raises(ValueError, match="the test table: %s changed since it was read"
                       % path):
        rows[:]
    rows.close()


def test_a_file_replaced_since_it_was_read_is_read_as_it_was(tmp_path):
    """The files stay open from the first read: a file replaced by another (as every tool
    here writes one: a new file renamed over it) is read as it was, not the new one."""
    rng = np.random.default_rng(46)
    keys, X, ark, _ = table(tmp_path, rng, rows=200)
    with located(ark, len(keys), X.shape[1]) as rows:
        write_vector_table(ark, keys, X + 1)
        assert np.array_equal(rows[:], X)
