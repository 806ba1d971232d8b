"""The settings-fit rule without a database: a setting that needs more distinct workers than the crowd has is
named with both numbers; a crowd that fits gets no warning; the presets fit the crowds they are named for."""

from __future__ import annotations

from organize.crowd_fit import PRESETS, Crowd, settings_warnings


def test_calibration_votes_beyond_the_crowd_are_named_with_both_numbers():
    crowd = Crowd(joined=4, qualified=2, qualification_required=True)
    (warning,) = settings_warnings(calibration_votes=10, vote_cap=4, crowd=crowd)
    assert (warning.code, warning.needed, warning.crowd) == ("calibration_votes", 10, 4)
    assert warning.message.startswith(
        "Calibration needs 10 distinct workers per question; 4 have joined this dataset (2 have qualified so far)."
    )


def test_a_vote_cap_beyond_the_crowd_warns_that_questions_will_wait():
    (warning,) = settings_warnings(calibration_votes=1, vote_cap=5, crowd=Crowd(1, 0, False))
    assert warning.code == "vote_cap"
    assert "1 has joined this dataset" in warning.message
    assert "still undecided after 1 worker has no one left" in warning.message


def test_a_crowd_as_large_as_the_settings_need_gets_no_warning():
    assert settings_warnings(calibration_votes=3, vote_cap=5, crowd=Crowd(5, 0, False)) == []


def test_the_small_team_preset_fits_five_people_and_the_open_crowd_needs_twelve():
    presets = {p.name: p for p in PRESETS}
    small, open_crowd = presets["small_team"], presets["open_crowd"]
    fit = lambda preset, n: settings_warnings(  # noqa: E731
        calibration_votes=preset.consensus["calibration_votes"],
        vote_cap=preset.consensus["vote_cap"],
        crowd=Crowd(n, 0, False),
    )
    assert fit(small, 5) == [] and fit(open_crowd, 12) == []
    assert [w.code for w in fit(open_crowd, 5)] == ["calibration_votes", "vote_cap"]
    assert small.as_dict()["needs_workers"] == 5
    assert small.consensus["calibration_votes"] < open_crowd.consensus["calibration_votes"]
