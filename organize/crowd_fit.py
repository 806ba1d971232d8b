"""Whether a dataset's settings fit its crowd, and the presets that fill the settings page for two typical crowds.
Pure: takes the settings' numbers and the crowd's counts, returns warnings and values (the settings page's
"Does the crowd fit?" card; `organize/settings_api.py` reads the counts).

A question takes one vote per worker, so a setting that asks for N votes from distinct workers can only be met by
a crowd of N: with the defaults (10 calibration votes) a team of four never finishes calibration, and the dataset
stalls silently (issue 34). The warning says so before any work is spent."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Crowd:
    """Who can vote in a dataset: `joined` workers (have worked in it or accepted an invitation to it, not
    blocked there), and, when qualification is in force (gold items and a qualification size), how many of
    them have `qualified` on some question kind so far."""

    joined: int
    qualified: int
    qualification_required: bool


@dataclass(frozen=True)
class Warning:
    code: str  # calibration_votes, vote_cap
    setting: str  # the field of consensus-settings it is about
    needed: int  # distinct workers the setting needs
    crowd: int  # workers the crowd has
    message: str


def _workers(n: int) -> str:
    return f"{n} worker{'s' if n != 1 else ''}"


def _crowd_words(crowd: Crowd) -> str:
    words = f"{crowd.joined} {'has' if crowd.joined == 1 else 'have'} joined this dataset"
    if crowd.qualification_required:
        words += f" ({crowd.qualified} {'has' if crowd.qualified == 1 else 'have'} qualified so far)"
    return words


def settings_warnings(*, calibration_votes: int, vote_cap: int, crowd: Crowd) -> list[Warning]:
    """What the settings need that the crowd cannot give: calibration votes (a hard stall: calibration never
    finishes and the questions waiting for its table are never asked) and the vote cap (questions still
    undecided when every worker has voted wait for the organizer to settle them)."""
    warnings = []
    if calibration_votes > crowd.joined:
        warnings.append(
            Warning(
                code="calibration_votes",
                setting="calibration_votes",
                needed=calibration_votes,
                crowd=crowd.joined,
                message=f"Calibration needs {calibration_votes} distinct workers per question; "
                f"{_crowd_words(crowd)}. Calibration cannot finish and the questions waiting for its table "
                f"are never asked: lower the calibration votes to at most {max(1, crowd.joined)}, or invite "
                "more workers.",
            )
        )
    if vote_cap > crowd.joined:
        warnings.append(
            Warning(
                code="vote_cap",
                setting="vote_cap",
                needed=vote_cap,
                crowd=crowd.joined,
                message=f"The vote cap lets a question ask up to {vote_cap} distinct workers; "
                f"{_crowd_words(crowd)}. "
                f"A question still undecided after {_workers(crowd.joined)} has no one left to ask and waits "
                "until you settle it on the dataset page (or invite more workers).",
            )
        )
    return warnings


@dataclass(frozen=True)
class Preset:
    name: str
    title: str
    description: str
    consensus: dict
    gold: dict

    def as_dict(self) -> dict:
        body = asdict(self)
        body["needs_workers"] = max(self.consensus["calibration_votes"], self.consensus["vote_cap"])
        return body


# Values chosen for each crowd; docs/organize.md ("Settings presets") gives the reasons.
PRESETS = (
    Preset(
        name="small_team",
        title="Small in-house team",
        description="Three to eight people you invited and trust. Calibration asks 3 votes per question and "
        "a question at most 5, so a team of five never runs out of voters; the bar is 0.99 instead of 0.997 "
        "(five agreeing votes of careful people reach it, 0.997 would send many questions to review), and no "
        "second cap (everyone has voted by the fifth vote); no "
        "qualification test (you know them), gold keeps scoring them at a lower rate.",
        consensus={
            "estimator": "weighted",
            "target_precision": 0.99,
            "reject_error": 0.02,
            "vote_cap": 5,
            "extension_cap": 0,
            "calibration_votes": 3,
            "calibration_fraction": 0.1,
            "calibration_min": 10,
            "calibration_max": 40,
        },
        gold={"rate": 0.05, "qualification_size": 0, "qualification_pass": 0},
    ),
    Preset(
        name="open_crowd",
        title="Open crowd",
        description="Dozens of anonymous workers or more (Mechanical Turk, study links). The platform's "
        "defaults: 10 calibration votes and a cap of 12 per question (up to 20 from the most reliable half "
        "before a question goes to a person), precision 0.997, a qualification test "
        "of 14 gold questions of which 12 must be right (a coin-flipper passes under 1%), and one task in "
        "ten gold.",
        consensus={
            "estimator": "weighted",
            "target_precision": 0.997,
            "reject_error": 0.02,
            "vote_cap": 12,
            "extension_cap": 20,
            "calibration_votes": 10,
            "calibration_fraction": 0.1,
            "calibration_min": 20,
            "calibration_max": 100,
        },
        gold={"rate": 0.1, "qualification_size": 14, "qualification_pass": 12},
    ),
)
