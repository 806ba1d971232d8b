"""The organizer commands: verify_candidates queues and reports progress, calibration_table prints the grid."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from annotation import queue
from consensus.models import ConsensusSettings, Question

from .conftest import make_images, make_workers

pytestmark = pytest.mark.django_db(transaction=True)


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_verify_candidates_queues_with_calibration_and_prints_progress(dataset, concept):
    images = make_images(dataset, 30)
    ids = ",".join(str(i.pk) for i in images[:25])
    out = run("verify_candidates", "--dataset", dataset.name, "--concept", concept.wnid, "--images", ids)
    assert f"queued 25 questions for {concept.wnid} (tabby cat)" in out
    assert "20 calibration, 5 waiting for the table" in out
    assert "progress: 25 questions (5 waiting, 20 open); 0 votes so far" in out
    assert Question.objects.count() == 25
    again = run("verify_candidates", "--dataset", dataset.name, "--concept", concept.wnid, "--progress")
    assert again.startswith("progress: 25 questions") and Question.objects.count() == 25


def test_verify_candidates_refuses_bad_input_with_a_clear_message(dataset, concept):
    with pytest.raises(CommandError, match="no dataset named 'nope'"):
        run("verify_candidates", "--dataset", "nope", "--concept", concept.wnid)
    with pytest.raises(CommandError, match="no concept with wnid 'n0'"):
        run("verify_candidates", "--dataset", dataset.name, "--concept", "n0")
    with pytest.raises(CommandError, match="image ids"):
        run("verify_candidates", "--dataset", dataset.name, "--concept", concept.wnid, "--images", "1,x")


def test_calibration_table_prints_the_grid_with_threshold_marks(dataset, concept):
    with pytest.raises(CommandError, match="no image_verify calibration table"):
        run("calibration_table", "--concept", concept.wnid)
    ConsensusSettings.objects.create(
        dataset=dataset, calibration_min=6, calibration_max=6, calibration_votes=10, vote_cap=12
    )
    make_images(dataset, 6)
    run("verify_candidates", "--dataset", dataset.name, "--concept", concept.wnid)
    for w in make_workers(10):
        for _ in range(6):
            a = queue.task_lease_next(worker=w)
            answer = {"answer": a.task.question.image_id % 2 == 0}
            queue.assignment_submit(assignment=a, answer=answer, idempotency_key=f"k{a.pk}")
    out = run("calibration_table", "--concept", concept.wnid).splitlines()
    assert out[0].startswith(
        f"image_verify table for {concept.wnid} (tabby cat): 6 calibration images, 60 votes"
    )
    header, rows = out[2], out[3:]
    assert header.split() == ["a\\b", *[str(b) for b in range(13)]]
    assert len(rows) == 13 and len(rows[0].split()) == 14 and len(rows[12].split()) == 2
    assert rows[10].split()[1].endswith("+"), "ten yes and no no is accepted"
    assert rows[0].split()[10].endswith("-"), "ten no is rejected"


def test_calibration_repair_rebuilds_a_table_built_from_too_few_images(dataset, concept):
    from consensus.calibration import build_table
    from consensus.models import CalibrationTable, QuestionState

    ConsensusSettings.objects.create(
        dataset=dataset, calibration_min=4, calibration_max=4, calibration_votes=3, vote_cap=8
    )
    make_images(dataset, 6)
    out = run("verify_candidates", "--dataset", dataset.name, "--concept", concept.wnid)
    assert "4 calibration" in out
    for w in make_workers(3):
        for _ in range(4):
            a = queue.task_lease_next(worker=w)
            queue.assignment_submit(
                assignment=a, answer={"answer": a.task.image_id % 2 == 0}, idempotency_key=f"k{a.pk}"
            )
    # The old batching left a newer table built from one image: it must be found and replaced.
    bad = build_table([[True] * 3])
    CalibrationTable.objects.create(
        kind="image_verify",
        concept=concept,
        table=bad.to_dict(),
        n_images=1,
        n_votes=3,
        method=bad.method,
        last_vote_id=10**6,
    )
    report = run("calibration_repair", "--min-images", "4", "--dry-run")
    assert "1 (kind, concept) table(s) built from fewer than 4" in report
    assert "table of 1 image(s); 4 calibration image(s) complete now" in report
    assert CalibrationTable.objects.count() == 2
    report = run("calibration_repair", "--min-images", "4")
    assert "-> rebuilt from 4 images" in report
    newest = CalibrationTable.objects.order_by("-id").first()
    assert (newest.n_images, newest.n_votes) == (4, 12)
    assert not Question.objects.filter(state=QuestionState.WAITING).exists()
    assert "0 (kind, concept) table(s)" in run("calibration_repair", "--min-images", "4")
