"""convert-voxceleb-trials (issue 19 item 4b): VoxCeleb1 lists O/E/H as Kaldi trials with the
keys of egs/voxceleb/v2 (local/make_voxceleb1_v2.pl), checked against a Perl one-liner of
that script's rule, and one ERROR line naming the line for a bad list."""

import subprocess

import pytest
from conftest import need_program, run_tool

LIST = """1 id10270/x6uYqmx31kE/00001.wav id10270/8jEAjG6SegY/00008.wav
0 id10270/x6uYqmx31kE/00001.wav id10300/ize_eiCFEg0/00003.wav
1 id10270/x6uYqmx31kE/00001.wav id10270/GWXujl-xAVM/00017.wav
0 id10309/e-QW4BDadBE/00001.wav id10270/8jEAjG6SegY/00008.wav
1 id10309/e-QW4BDadBE/00001.wav id10309/Zx_g5yIwbRk/00012.wav
"""

# make_voxceleb1_v2.pl's rule: split the path on '/', drop ".wav" from the name, join with '-';
# label 1 is target.
PERL = (r"""perl -lane '($l, $p1, $p2) = @F; @k = ();"""
        r""" for $p ($p1, $p2) { ($s, $r, $n) = split("/", $p); $n =~ s/\.wav$//;"""
        r""" push @k, "$s-$r-$n" } print "$k[0] $k[1] ", ($l eq "1" ? "target" : "nontarget")'""")


def test_keys_and_labels_are_those_of_kaldi_make_voxceleb1_v2(tmp_path):
    need_program("perl")
    (tmp_path / "list").write_text(LIST)
    proc = run_tool("convert-voxceleb-trials", "--utt2spk=%s" % (tmp_path / "utt2spk"),
                    tmp_path / "list", tmp_path / "trials")
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"Converted 5 trials (3 target, 2 nontarget) of 6 utterances." in proc.stderr
    reference = subprocess.run(PERL + " " + str(tmp_path / "list"), shell=True,
                               stdout=subprocess.PIPE, check=True).stdout
    assert (tmp_path / "trials").read_bytes() == reference
    assert (tmp_path / "trials").read_text().splitlines()[0] == \
        "id10270-x6uYqmx31kE-00001 id10270-8jEAjG6SegY-00008 target"
    utt2spk = (tmp_path / "utt2spk").read_text().splitlines()
    assert utt2spk == sorted(utt2spk) and len(utt2spk) == 6
    assert "id10309-e-QW4BDadBE-00001 id10309" in utt2spk


def test_leading_folders_and_the_extension_are_dropped(tmp_path):
    (tmp_path / "list").write_text("1 /data/vox1/wav/id10270/x6uYqmx31kE/00001.wav "
                                   "test/wav/id10270/8jEAjG6SegY/00008.m4a\n")
    run_tool("convert-voxceleb-trials", tmp_path / "list", tmp_path / "trials", check=True)
    assert (tmp_path / "trials").read_text() == \
        "id10270-x6uYqmx31kE-00001 id10270-8jEAjG6SegY-00008 target\n"


@pytest.mark.parametrize("line,message", [
    ("2 a/b/c.wav a/b/d.wav", "Line 3 of %s: label '2' is not 1 or 0"),
    ("1 a/b/c.wav", "Line 3 of %s has 2 fields; expected '1|0 <path> <path>'"),
    ("1 b/c.wav a/b/d.wav", "Line 3 of %s: path 'b/c.wav' is not <speaker>/<recording>/"),
    ("1 id10270/x6uYqmx31kE/00001.wav id10270/8jEAjG6SegY/00008.wav",
     "Trial 'id10270-x6uYqmx31kE-00001 id10270-8jEAjG6SegY-00008' appears twice in %s "
     "(lines 1 and 3)"),
])
def test_a_bad_line_is_one_error_naming_it_and_nothing_is_written(tmp_path, line, message):
    source = tmp_path / "list"
    source.write_text("".join(LIST.splitlines(True)[:2]) + line + "\n")
    proc = run_tool("convert-voxceleb-trials", source, tmp_path / "trials")
    errors = [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]
    assert proc.returncode == 255 and len(errors) == 1
    assert (message % source) in errors[0], errors
    assert not (tmp_path / "trials").exists()


def _one_error(proc, tmp_path):
    errors = [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]
    assert proc.returncode == 255 and len(errors) == 1, proc.stderr
    assert "Traceback" not in proc.stderr.decode()
    assert not (tmp_path / "trials").exists()
    return errors[0]


def test_a_file_already_in_kaldi_form_says_it_needs_no_conversion(tmp_path):
    """Issue 28: `key1 key2 target` lines (e.g. the output of this tool) are Kaldi trials; the
    ERROR says to use the file as it is, not that 'id10270-...' is a bad label."""
    (tmp_path / "list").write_text(LIST)
    run_tool("convert-voxceleb-trials", tmp_path / "list", tmp_path / "kaldi", check=True)
    proc = run_tool("convert-voxceleb-trials", tmp_path / "kaldi", tmp_path / "trials")
    error = _one_error(proc, tmp_path)
    assert "Line 1 of %s" % (tmp_path / "kaldi") in error
    assert "has its label last, as Kaldi's trials" in error
    assert "needs no conversion" in error and "as the trials file as it is" in error


def test_paths_with_the_label_last_say_to_put_the_label_first(tmp_path):
    (tmp_path / "list").write_text("id10270/x6uYqmx31kE/00001.wav id10270/8jEAjG6SegY/00008.wav"
                                   " 1\n")
    error = _one_error(run_tool("convert-voxceleb-trials", tmp_path / "list",
                                tmp_path / "trials"), tmp_path)
    assert "has its label last" in error and "put the label first" in error


@pytest.mark.parametrize("byte", [b"\0", b"\x1c", b"\x7f"])
def test_a_control_character_in_a_path_is_one_error_naming_the_line(tmp_path, byte):
    """Issue 26 item 5: a NUL (or another ASCII control, which Kaldi's IsToken refuses) inside a
    VoxCeleb path was written into a trial key with exit 0. \\x1c is also a line break for
    Python's str.splitlines, not for Kaldi: it must not split the line."""
    lines = LIST.encode().splitlines(True)
    lines[2] = lines[2].replace(b"GWXujl", b"GWX" + byte + b"ujl")
    (tmp_path / "list").write_bytes(b"".join(lines))
    error = _one_error(run_tool("convert-voxceleb-trials", tmp_path / "list",
                                tmp_path / "trials"), tmp_path)
    assert ") Line 3 of %s: path 'id10270/GWX" % (tmp_path / "list") in error, error
    assert "contains the control character %r" % byte.decode() in error
    assert "\0" not in error


def test_keys_are_split_on_ascii_whitespace_only(tmp_path):
    """A no-break space is part of a field, as in Kaldi (ASCII whitespace only): the line has
    two fields, not three."""
    (tmp_path / "list").write_text("1 id10270/x6uYqmx31kE/00001.wav\u00a0"
                                   "id10270/8jEAjG6SegY/00008.wav\n")
    error = _one_error(run_tool("convert-voxceleb-trials", tmp_path / "list",
                                tmp_path / "trials"), tmp_path)
    assert "Line 1 of %s has 2 fields" % (tmp_path / "list") in error
