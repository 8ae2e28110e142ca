"""Folders written by older attndyn versions are read as today's: one test per older form
(:mod:`attndyn.sentiment._older`). The commands that read such folders are tested with real folders in
test_checklist.py (a model saved before ``merge_negations`` and ``lexicon``), test_modelfile.py (before the seal)
and test_runfolder.py (a run folder before ``settings.json``)."""

from attndyn.sentiment._older import ABSENT_SETTINGS, model_record, run_settings, run_settings_from_config


def test_a_model_record_from_before_settings_params_and_files_reads_as_today():
    old = {"format": "f", "estimator": {"d": 2, "lexicon": True}, "model": {}, "classes": [0, 1]}
    today = model_record(old)
    absent = {k: v for k, v in ABSENT_SETTINGS.items() if k != "lexicon"}
    assert today["estimator"] == {"d": 2, "lexicon": True, **absent}  # what the file records stays
    assert today["params"] == today["estimator"]  # no 'params': the settings passed were the ones used
    assert today["files"] == {}  # no hashes recorded: the loader refuses it until it is sealed
    assert old == {"format": "f", "estimator": {"d": 2, "lexicon": True}, "model": {}, "classes": [0, 1]}
    passed = {**old, "params": {"d": None}, "files": {"vocab.json": "0" * 64}}
    assert model_record(passed)["params"] == {"d": None, **absent}  # 'params' kept, with what it predates
    assert model_record(passed)["files"] == passed["files"]
    assert model_record(model_record(passed)) == model_record(passed)  # today's record is read as it is
    assert model_record({**old, "estimator": "x"}) == {**old, "estimator": "x"}  # left for the checks to name


def test_run_settings_from_before_a_setting_read_it_at_its_old_value():
    flat = {"d": 16, "merge_negations": True, "split": "random"}
    assert run_settings(flat) == {**ABSENT_SETTINGS, **flat}
    assert run_settings(run_settings(flat)) == run_settings(flat)


def test_a_run_folder_from_before_settings_json_reads_its_config_and_data_records():
    defaults = {"d": 2, "layers": 8, "lexicon": True}
    flat = run_settings_from_config({"d": 16}, {"split": "official", "path": "imdb.csv"}, defaults)
    assert flat == {**defaults, **ABSENT_SETTINGS, "d": 16, "split": "official"}  # lexicon: off, as it was trained
    assert "split" not in run_settings_from_config({"d": 16}, {}, defaults)  # no data.json: no split recorded
    assert "split" not in run_settings_from_config({"d": 16}, ["not", "an", "object"], defaults)
