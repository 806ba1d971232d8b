"""`simulate --help` names the estimator a run uses when `--consensus` is not given."""

from simulator.management.commands.simulate import Command

WORDING = {"weighted": "reliability-weighted", "dynamic": "dynamic consensus"}


def test_consensus_help_calls_the_actual_default_the_default():
    parser = Command().create_parser("manage.py", "simulate")
    action = next(a for a in parser._actions if "--consensus" in a.option_strings)
    assert f"{WORDING[action.default]} (default)" in action.help
    others = [w for name, w in WORDING.items() if name != action.default]
    assert all(f"{w} (default)" not in action.help for w in others)
