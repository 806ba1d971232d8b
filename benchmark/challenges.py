"""Challenges: created by a dataset's organizers over a frozen split version, with their teams (both audited);
the hidden test truth, submissions (validated, at most N per team per window, scored) and the leaderboard.
ILSVRC's rule: at most 2 submissions per team per week, so the test set is not tuned against.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.files import File
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.audit import audit_record
from annotation.models import Dataset
from outbox import services as outbox

from .metrics import PROTOCOLS
from .metrics.files import Truth, evaluate_files, load_ground_truth, load_predictions
from .models import Challenge, SplitVersion, Submission, SubmissionState, Team
from .services import BenchmarkError

SYNC_SCORE_BYTES = 2 * 1024 * 1024  # smaller files are scored in the request; larger ones by a worker
MAX_SUBMISSION_BYTES = 200 * 1024 * 1024
# The leaderboard's ranking metric per protocol, and whether higher is better.
PRIMARY_METRIC: dict[str, tuple[str, bool]] = {
    "coco": ("AP", True),
    "voc07": ("mAP", True),
    "voc12": ("mAP", True),
    "ilsvrc-det": ("mAP", True),
    "ilsvrc-cls": ("top5_error", False),
    "ilsvrc-loc": ("top5_error", False),
}
# Hidden test labels read once per process. The key names the challenge row itself (its creation time with its
# id): ids come back after a database is restored or rebuilt, and the truth file's name repeats with them, so
# neither alone may serve another challenge's labels.
_truth_cache: dict[tuple[int, str, str], Truth] = {}


class NotATeamMember(BenchmarkError):
    pass


class SubmissionLimit(BenchmarkError):
    def __init__(self, message: str, retry_at):
        super().__init__(message)
        self.retry_at = retry_at


class FieldRefused(BenchmarkError):
    """Input refused for one field; the API answers 400 with the message under `field`."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


class NameTaken(FieldRefused):
    """The name is taken (a challenge's among all challenges, a team's in its challenge); the API answers 409."""

    def __init__(self, message: str):
        super().__init__("name", message)


def challenge_validate(challenge: Challenge) -> None:
    if challenge.protocol not in PROTOCOLS:
        raise BenchmarkError(
            f"unknown protocol {challenge.protocol!r}; choose from {', '.join(sorted(PROTOCOLS))}"
        )
    if not challenge.split_version.frozen:
        raise BenchmarkError("a challenge needs a frozen split version: its test set must never move")
    if challenge.split_version.dataset_id != challenge.dataset_id:
        raise BenchmarkError("the split version belongs to another dataset")


def challenge_create(
    *,
    dataset: Dataset,
    name: str,
    protocol: str,
    split_version: int,
    submissions_per_window: int,
    window_days: int,
    actor,
) -> Challenge:
    """A challenge over the test split of the dataset's frozen split version number `split_version`, recorded
    with its audit entry. `FieldRefused` when the dataset has no such version, `BenchmarkError` when the
    challenge breaks a rule of `challenge_validate`, `NameTaken` when another challenge has the name (the
    unique constraint decides). A split version never thaws, so it is read without a lock."""
    version = SplitVersion.objects.filter(dataset=dataset, number=split_version).first()
    if version is None:
        raise FieldRefused("split_version", f"no split version {split_version} in {dataset.name}")
    challenge = Challenge(
        name=name,
        dataset=dataset,
        split_version=version,
        protocol=protocol,
        submissions_per_window=submissions_per_window,
        window_days=window_days,
    )
    challenge_validate(challenge)
    parameters = {
        "name": name,
        "protocol": protocol,
        "split_version": split_version,
        "submissions_per_window": submissions_per_window,
        "window_days": window_days,
    }
    try:
        with transaction.atomic():
            challenge.save()
            audit_record(dataset=dataset, actor=actor, action="challenge.create", parameters=parameters)
    except IntegrityError:
        raise NameTaken(f"a challenge named {name!r} exists already") from None
    return challenge


def challenge_team_add(*, challenge: Challenge, name: str, members: list[str], actor) -> Team:
    """Add the team `name` to the challenge with its members (usernames of existing accounts, who may then
    submit), recorded with its audit entry. `FieldRefused` naming every unknown username, `NameTaken` when the
    challenge has a team of that name (the unique constraint decides)."""
    names = sorted(set(members))
    users = list(get_user_model().objects.filter(username__in=names))
    unknown = sorted(set(names) - {u.username for u in users})
    if unknown:
        raise FieldRefused("members", f"no account named {', '.join(unknown)}")
    try:
        with transaction.atomic():
            team = Team.objects.create(challenge=challenge, name=name)
            team.members.set(users)
            audit_record(
                dataset=challenge.dataset,
                actor=actor,
                action="challenge.team_add",
                parameters={"challenge": challenge.name, "team": team.name, "members": names},
            )
    except IntegrityError:
        raise NameTaken(f"{challenge.name} has a team named {name!r}") from None
    return team


def challenge_truth(challenge: Challenge) -> Truth:
    """The hidden test labels, exported once (as the organizers' own export would write them) and kept in
    storage; read through the same readers as ``evaluate``."""
    if not challenge.ground_truth:
        with transaction.atomic():
            challenge = Challenge.objects.select_for_update(no_key=True).get(pk=challenge.pk)
            if not challenge.ground_truth:
                challenge_validate(challenge)
                format_name = "ilsvrc" if challenge.protocol.startswith("ilsvrc") else "coco"
                with tempfile.TemporaryDirectory(prefix="truth-") as scratch:
                    out = Path(scratch) / f"challenge-{challenge.pk}-test.zip"
                    from .exporters import ExportOptions, export
                    from .selectors import DatasetSource

                    export(
                        DatasetSource(challenge.dataset, challenge.split_version),
                        format_name,
                        out,
                        ExportOptions(split="test", include_images=False, withheld=frozenset()),
                    )
                    with out.open("rb") as data:
                        challenge.ground_truth.save(out.name, File(data), save=True)
    key = (challenge.pk, challenge.created_at.isoformat(), challenge.ground_truth.name)
    if key not in _truth_cache:
        with tempfile.TemporaryDirectory(prefix="truth-") as scratch:
            local = Path(scratch) / Path(challenge.ground_truth.name).name
            with challenge.ground_truth.open("rb") as src, local.open("wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
            _truth_cache[key] = load_ground_truth(challenge.protocol, local, split="test")
    return _truth_cache[key]


@dataclass(frozen=True)
class Quota:
    used: int
    limit: int
    retry_at: Any


def submission_create(*, challenge: Challenge, user, name: str, data: bytes) -> Submission:
    """Validate a submission against the hidden test labels (raises SubmissionError listing every problem),
    then record it under the team's quota and score it (now when small, else on the exports worker)."""
    team = Team.objects.filter(challenge=challenge, members=user).first()
    if team is None:
        raise NotATeamMember("you are not in a team of this challenge")
    if len(data) > MAX_SUBMISSION_BYTES:
        raise BenchmarkError(f"the file is larger than {MAX_SUBMISSION_BYTES // (1024 * 1024)} MB")
    load_predictions(challenge.protocol, data, challenge_truth(challenge))
    with transaction.atomic():
        # The team's row lock makes "count, then insert" one step: two parallel uploads cannot both pass.
        Team.objects.select_for_update(no_key=True).get(pk=team.pk)
        since = timezone.now() - timedelta(days=challenge.window_days)
        recent = list(
            Submission.objects.filter(team=team, created_at__gte=since)
            .order_by("created_at")
            .values_list("created_at", flat=True)
        )
        if len(recent) >= challenge.submissions_per_window:
            retry_at = recent[0] + timedelta(days=challenge.window_days)
            raise SubmissionLimit(
                f"team {team.name} already made {len(recent)} submissions in the last {challenge.window_days} "
                f"days (at most {challenge.submissions_per_window}); the next is allowed at {retry_at.isoformat()}",
                retry_at,
            )
        submission = Submission(team=team, submitted_by=user)
        submission.file.save(Path(name).name or "submission.txt", ContentFile(data), save=False)
        submission.save()
        if len(data) > SYNC_SCORE_BYTES:
            outbox.message_enqueue(
                "benchmark.tasks.submission_score", (submission.pk,), dataset_id=challenge.dataset_id
            )
    if len(data) <= SYNC_SCORE_BYTES:
        submission = submission_score(submission.pk)
    return submission


def submission_score(submission_id: int) -> Submission:
    """Score a stored submission. Idempotent: a scored submission is returned as it is."""
    submission = Submission.objects.select_related("team__challenge").get(pk=submission_id)
    if submission.state == SubmissionState.SCORED:
        return submission
    challenge = submission.team.challenge
    try:
        truth = challenge_truth(challenge)
        with submission.file.open("rb") as f:
            pred = load_predictions(challenge.protocol, f.read(), truth)
        scores = evaluate_files(challenge.protocol, truth, pred)
    except ValueError as exc:
        Submission.objects.filter(pk=submission_id).update(state=SubmissionState.FAILED, errors=[str(exc)])
    else:
        Submission.objects.filter(pk=submission_id).exclude(state=SubmissionState.SCORED).update(
            state=SubmissionState.SCORED, scores=scores, scored_at=timezone.now()
        )
    submission.refresh_from_db()
    return submission


def leaderboard(challenge: Challenge) -> list[dict[str, Any]]:
    """Each team's best scored submission, best first, ranked by the protocol's primary metric."""
    metric, higher_better = PRIMARY_METRIC.get(challenge.protocol, ("mAP", True))
    best: dict[int, Submission] = {}
    rows = (
        Submission.objects.filter(team__challenge=challenge, state=SubmissionState.SCORED)
        .select_related("team")
        .order_by("created_at", "id")
    )
    for sub in rows:
        value = float(sub.scores.get(metric, float("nan")))
        held = best.get(sub.team_id)
        if held is None or (value > held.scores[metric] if higher_better else value < held.scores[metric]):
            best[sub.team_id] = sub
    ordered = sorted(
        best.values(), key=lambda s: (-s.scores[metric] if higher_better else s.scores[metric], s.id)
    )
    return [
        {
            "rank": rank,
            "team": sub.team.name,
            "submission": sub.pk,
            "metric": metric,
            "value": sub.scores[metric],
            "scores": {k: v for k, v in sub.scores.items() if not isinstance(v, dict)},
            "created_at": sub.created_at,
        }
        for rank, sub in enumerate(ordered, start=1)
    ]


@outbox.on_park("benchmark.tasks.submission_score")
def _submission_score_parked(message) -> None:
    """A submission whose scoring failed every attempt ends failed with the reason, not pending for good."""
    Submission.objects.filter(pk=message.args[0], state=SubmissionState.PENDING).update(
        state=SubmissionState.FAILED,
        errors=[f"scoring failed {message.attempts} times: {message.last_error.strip().splitlines()[-1:]}"],
    )
