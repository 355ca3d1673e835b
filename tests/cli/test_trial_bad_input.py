"""Issue 10's trial-related bad inputs: one ERROR naming the file and line, non-zero exit,
existing outputs untouched, never thousands of warnings."""

import re

import pytest
from conftest import run_tool

HEADER = re.compile(r"^(LOG|WARNING|ERROR) \(([^\[\s]+)\[[^\]]*\]:\S*\) (.*)$")


def lines_of(proc, level):
    return [m.group(3) for m in map(HEADER.match, proc.stderr.decode().splitlines())
            if m and m.group(1) == level]


def one_error(proc):
    errors = lines_of(proc, "ERROR")
    assert proc.returncode != 0 and len(errors) == 1, proc.stderr.decode()[-3000:]
    assert "Traceback" not in proc.stderr.decode()
    return errors[0]


@pytest.fixture
def old_output(tmp_path):
    out = tmp_path / "out"
    out.write_text("precious\n")
    return out


def scores_for(golden, tmp_path):
    path = tmp_path / "scores"
    path.write_bytes((golden / "scores/plda_numutts").read_bytes())
    return path


@pytest.mark.parametrize("first, fields", [("ev001\n", 1), ("ev001 a b c\n", 4),
                                           ("ev001 a target x y\n", 5)])
def test_wrong_field_count_on_the_first_line_names_file_and_line(golden, tmp_path, old_output,
                                                                 first, fields):
    trials = tmp_path / "trials"
    trials.write_text(first + "ev001 ev001-tst01 target\nev001 ev002-tst01 nontarget\n" * 3)
    for proc in (run_tool("compute-eer-pauc", scores_for(golden, tmp_path), trials),
                 run_tool("score-cosine-trials", trials, "ark:exp/enroll_final.ark",
                          "ark:exp/test_final.ark", old_output, cwd=golden)):
        error = one_error(proc)
        assert re.search(r"Bad line 1 in trials file \S*trials: expected 2 or 3 fields .*got %d"
                         % fields, error), error
    assert old_output.read_text() == "precious\n"


def test_nul_bytes_in_keys_and_scores_are_errors_not_silent_matches(golden, tmp_path):
    trials = tmp_path / "trials"
    trials.write_bytes(b"ev001 ev001-tst01 target\nev001\0 ev002-tst01 nontarget\n")
    error = one_error(run_tool("compute-eer-pauc", scores_for(golden, tmp_path), trials))
    assert "Line 2 of trials file" in error and "NUL" in error
    scores = tmp_path / "s"
    scores.write_bytes(b"ev001 ev001-tst01 1.5\nev001 ev002-tst01 0.5\0\n")
    trials.write_bytes(b"ev001 ev001-tst01 target\nev001 ev002-tst01 nontarget\n")
    error = one_error(run_tool("compute-eer-pauc", scores, trials))
    assert "Line 2 of scores file" in error and "NUL" in error
    proc = run_tool("compute-eer-pauc", "-", input=b"1.5 target\n0.5\0 nontarget\n")
    assert "first field must be float" in one_error(proc)
    proc = run_tool("score-plda-trials", "exp/plda", "ark:exp/enroll_final.ark",
                    "ark:exp/test_final.ark", trials, tmp_path / "out", cwd=golden)
    assert proc.returncode == 0
    trials.write_bytes(b"ev001 ev001-tst01\0\n")
    error = one_error(run_tool("score-plda-trials", "exp/plda", "ark:exp/enroll_final.ark",
                               "ark:exp/test_final.ark", trials, tmp_path / "out", cwd=golden))
    assert "NUL" in error


@pytest.mark.parametrize("case", ["empty trials", "no known key", "empty scores"])
def test_empty_or_unknown_input_is_one_error_and_outputs_stay(golden, tmp_path, old_output,
                                                              case):
    trials = tmp_path / "trials"
    scores = scores_for(golden, tmp_path)
    trials.write_text({"empty trials": "", "no known key": "nobody nothing target\n",
                       "empty scores": "ev001 ev001-tst01 target\n"}[case])
    if case == "empty scores":
        scores.write_text("")
    procs = [run_tool("compute-eer-pauc", scores, trials),
             run_tool("train-calibration", trials, scores, old_output)]
    if case != "empty scores":
        procs.append(run_tool("score-cosine-trials", trials, "ark:exp/enroll_final.ark",
                              "ark:exp/test_final.ark", old_output, cwd=golden))
        procs.append(run_tool("score-plda-trials", "exp/plda", "ark:exp/enroll_final.ark",
                              "ark:exp/test_final.ark", trials, old_output, cwd=golden))
    for proc in procs:
        one_error(proc)
    assert old_output.read_text() == "precious\n"


def test_apply_calibration_on_empty_scores_keeps_the_old_output(golden, tmp_path, old_output):
    scores = scores_for(golden, tmp_path)
    run_tool("train-calibration", golden / "data/trials", scores, tmp_path / "cal",
             check=True)
    empty = tmp_path / "empty"
    empty.write_text("")
    one_error(run_tool("apply-calibration", tmp_path / "cal", empty, old_output))
    assert old_output.read_text() == "precious\n"


def test_swapped_tables_stop_early_with_one_error(golden, old_output):
    proc = run_tool("score-cosine-trials", "data/trials", "ark:exp/test_final.ark",
                    "ark:exp/enroll_final.ark", old_output, cwd=golden)
    error = one_error(proc)
    assert "swapped" in error
    assert lines_of(proc, "WARNING") == []          # the diagnosis leads, nothing before it
    assert old_output.read_text() == "precious\n"


@pytest.mark.parametrize("num_trials", [50, 5000])
def test_a_list_of_unknown_keys_leads_with_the_diagnosis_and_counts(golden, tmp_path,
                                                                    old_output, num_trials):
    """A VoxCeleb-style list (paths as keys) meets Kaldi tables: one ERROR that says what is
    wrong and how many trials failed, with no per-trial WARNING before it, whether the list
    is shorter than the early check or longer."""
    trials = tmp_path / "trials"
    trials.write_text("".join("1 id10270/x6uYqmx31kE/%05d.wav id10271/8jEAjG6SegY/%05d.wav\n"
                              % (i, i) for i in range(num_trials)))
    proc = run_tool("score-plda-trials", "exp/plda", "ark:exp/enroll_final.ark",
                    "ark:exp/test_final.ark", trials, old_output, cwd=golden)
    error = one_error(proc)
    assert lines_of(proc, "WARNING") == []
    assert re.search(r"\b(\d+) of the (first )?\1 trials", error), error
    assert "first column holds labels (e.g. 1), as a VoxCeleb list" in error
    assert old_output.read_text() == "precious\n"


def test_utterance_keys_where_speakers_are_expected_say_so(golden, tmp_path, old_output):
    trials = tmp_path / "trials"
    trials.write_text("".join(line.replace("ev", "utt-ev", 1) + "\n" for line in
                              (golden / "data/trials").read_text().splitlines()))
    error = one_error(run_tool("score-plda-trials", "exp/plda", "ark:exp/enroll_final.ark",
                               "ark:exp/test_final.ark", trials, old_output, cwd=golden))
    assert "0% of its first keys (e.g. utt-ev" in error and "wrong kind" in error
    assert old_output.read_text() == "precious\n"


def test_a_few_unknown_keys_keep_kaldis_warnings_and_many_are_capped(golden, tmp_path):
    lines = (golden / "data/trials").read_text().splitlines()
    for i in range(0, 3000, 30):                   # 100 unknown test keys among 16000 trials
        lines[i] = lines[i].split()[0] + " lost%d target" % i
    trials = tmp_path / "trials"
    trials.write_text("\n".join(lines) + "\n")
    proc = run_tool("score-plda-trials", "exp/plda", "ark:exp/enroll_final.ark",
                    "ark:exp/test_final.ark", trials, tmp_path / "out", cwd=golden)
    assert proc.returncode == 0, proc.stderr.decode()
    warnings = lines_of(proc, "WARNING")
    assert warnings[:20] == ["Key lost%d not present in test iVectors." % i
                             for i in range(0, 600, 30)]
    assert warnings[20:] == ["80 more trials had an unknown key (only the first 20 are shown)"]
    assert lines_of(proc, "LOG")[-1] == "Processed 15900 trials, 100 had errors."


@pytest.mark.parametrize("tool, order", [
    ("compute-eer-pauc", ("trials", "scores")),
    ("compare-systems", ("trials", "scores", "scores")),
    ("compare-systems", ("scores", "trials", "scores")),
    ("train-calibration", ("scores", "trials", "out"))])
def test_swapped_scores_and_trials_say_so(golden, tmp_path, old_output, tool, order):
    """Issue 28: a scores file where the trials belong is one ERROR that names the score it
    met, asks whether the arguments are swapped and shows the trials' form; the outputs stay."""
    files = {"trials": golden / "data/trials", "scores": scores_for(golden, tmp_path),
             "out": old_output}
    error = one_error(run_tool(tool, *(files[name] for name in order)))
    assert "Bad label '3.499162' on line 1 of trials file %s" % files["scores"] in error
    assert ("are the scores and the trials arguments swapped? The trials file has lines "
            "<key1> <key2> target|nontarget") in error
    assert old_output.read_text() == "precious\n"


@pytest.mark.parametrize("tool, args, table", [
    ("copy-vectors", ["ark:exp/test_final.scp", "ark:OUT"], "exp/test_final.scp"),
    ("score-plda-trials", ["exp/plda", "ark:exp/enroll_final.scp", "ark:exp/test_final.ark",
                           "data/trials", "OUT"], "exp/enroll_final.scp"),
    ("score-plda-trials", ["--num-utts=ark:exp/enroll_spk_xvector.scp", "exp/plda",
                           "ark:exp/enroll_final.ark", "ark:exp/test_final.ark", "data/trials",
                           "OUT"], "exp/enroll_spk_xvector.scp"),
    ("compute-vector-mean", ["ark:exp/test_final.scp", "OUT"], "exp/test_final.scp")])
def test_a_script_read_as_an_archive_says_use_scp(golden, old_output, tool, args, table):
    """Issue 28: `ark:x.scp` fails where the first value should start; the one ERROR says it
    is a script file and to read it as scp:, for vector and int32 tables, whole-table and
    streamed readers alike."""
    args = [str(old_output) if a == "OUT" else a for a in args]
    error = one_error(run_tool(tool, *args, cwd=golden))
    assert "this is a script file (lines <key> <rxfilename>, e.g. '" in error, error
    assert error.endswith("not an archive: read it as scp:%s, not ark:" % table), error
    assert old_output.read_text() == "precious\n"


def test_a_script_of_pipes_read_as_an_archive_says_use_scp_and_a_bad_archive_does_not(
        golden, tmp_path, old_output):
    scp = tmp_path / "pipes.scp"
    scp.write_text("ev001-tst01 copy-vectors scp:exp/test_final.scp ark:- |\n")
    error = one_error(run_tool("copy-vectors", "ark:%s" % scp, "ark:%s" % old_output,
                               cwd=golden))
    assert error.endswith("read it as scp:%s, not ark:" % scp), error
    bad = tmp_path / "bad.ark"
    bad.write_text("ev001-tst01 [ 1 2 x ]\n")
    error = one_error(run_tool("copy-vectors", "ark:%s" % bad, "ark:%s" % old_output))
    assert "scp" not in error
    assert old_output.read_text() == "precious\n"


VOX_PATHS = ["id10270/x6uYqmx31kE/%05d.wav" % i for i in range(1, 7)] + \
    ["id10271/8jEAjG6SegY/%05d.wav" % i for i in range(1, 7)]


def _egs_key(path):        # egs/voxceleb/v2's rule (local/make_voxceleb1_v2.pl), written out
    speaker, recording, name = path.split("/")
    return "%s-%s-%s" % (speaker, recording, name[:-len(".wav")])


@pytest.mark.parametrize("table_form", ["paths", "egs"])
def test_voxceleb_keys_in_the_other_form_name_the_mapping_and_a_key_of_each_side(
        tmp_path, old_output, table_form):
    """Issue 28: vectors keyed by VoxCeleb paths and trials in egs/voxceleb/v2 form (or the
    reverse) stop with one ERROR that shows a key of the trials and of each table and names
    the mapping (import-vectors / convert-voxceleb-trials)."""
    table_keys = VOX_PATHS if table_form == "paths" else [_egs_key(p) for p in VOX_PATHS]
    trial_keys = [_egs_key(p) for p in VOX_PATHS] if table_form == "paths" else VOX_PATHS
    table = tmp_path / "vectors.ark"
    table.write_text("".join("%s [ %d 1 0.5 ]\n" % (key, i) for i, key in
                             enumerate(table_keys)))
    trials = tmp_path / "trials"
    trials.write_text("".join("%s %s %s\n" % (a, b, "target" if a[:7] == b[:7] else "nontarget")
                              for a in trial_keys[:3] for b in trial_keys))
    proc = run_tool("score-cosine-trials", "--normalize", trials, "ark:%s" % table,
                    "ark:%s" % table, old_output)
    error = one_error(proc)
    assert lines_of(proc, "WARNING") == []
    assert "36 of the 36 trials in %s have a key missing" % trials in error
    assert ("(keys seen: trial '%s %s'; 1st table of vectors '%s'; 2nd table of vectors '%s')"
            % (trial_keys[0], trial_keys[0], table_keys[0], table_keys[0])) in error, error
    if table_form == "paths":
        assert ("the 2nd table of vectors' keys are VoxCeleb paths (e.g. 'id10270/x6uYqmx31kE/"
                "00001.wav') and the trials' keys their egs/voxceleb/v2 form (e.g. "
                "'id10270-x6uYqmx31kE-00001'): import the vectors again with import-vectors"
                in error), error
    else:
        assert ("the trials' keys are VoxCeleb paths (e.g. 'id10270/x6uYqmx31kE/00001.wav') "
                "and the 2nd table of vectors' keys their egs/voxceleb/v2 form (e.g. "
                "'id10270-x6uYqmx31kE-00001'): make the trials from the VoxCeleb list with "
                "convert-voxceleb-trials" in error), error
    assert old_output.read_text() == "precious\n"


def test_the_diagnosis_of_unrelated_keys_shows_a_key_of_each_side(golden, tmp_path,
                                                                    old_output):
    trials = tmp_path / "trials"
    trials.write_text("".join("spk%d utt%d nontarget\n" % (i, i) for i in range(20)))
    error = one_error(run_tool("score-plda-trials", "exp/plda", "ark:exp/enroll_final.ark",
                               "ark:exp/test_final.ark", trials, old_output, cwd=golden))
    assert ("(keys seen: trial 'spk0 utt0'; training vectors 'ev001'; test vectors "
            "'ev001-tst01')") in error, error
    assert old_output.read_text() == "precious\n"
