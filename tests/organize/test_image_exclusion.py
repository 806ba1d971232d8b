"""Excluding an image somebody worked on (issue 34): deleting it is refused, but the organizer can exclude it
(and include it again). While excluded its tasks are not leased, its open work is left out of progress and of
the review queue, exports leave it out and name it in the manifest; both changes are in the audit trail."""

from __future__ import annotations

import pytest

from annotation.models import AuditEntry, BoxJob, BoxJobStatus, Image
from annotation.queue import assignment_submit, task_lease_next
from benchmark.final_labels import final_labels_rebuild
from consensus.binary_vote import vote_tasks_create
from consensus.starved import questions_starved
from review import ambiguous, leasing
from tests import factories
from tests.benchmark.test_export_completeness import boxed, coco, export, written_ids

pytestmark = pytest.mark.django_db


def url(dataset, image, verb: str) -> str:
    return f"/api/v1/datasets/{dataset.pk}/images/{image.pk}/{verb}"


def stage(progress, key):
    return next(s for s in progress["stages"] if s["key"] == key)


@pytest.fixture
def worked_on(dataset, worker):
    """Two images with a one-answer vote task each and a second concept's task on each; the worker answered
    the first image's first task, so that image cannot be deleted."""
    first, second = factories.ImageFactory.create_batch(2, dataset=dataset)
    for wnid in ("n00000001", "n00000002"):
        vote_tasks_create(
            dataset=dataset,
            concept=factories.ConceptFactory(wnid=wnid),
            images=[first, second],
            answers_wanted=1,
        )
    lease = task_lease_next(worker=worker.worker, dataset_id=dataset.pk)
    assert lease.task.image_id == first.pk
    assignment_submit(assignment=lease, answer={"answer": True}, idempotency_key="k0")
    return first, second


def leased_images(worker, dataset) -> list[int]:
    seen = []
    while (lease := task_lease_next(worker=worker.worker, dataset_id=dataset.pk)) is not None:
        seen.append(lease.task.image_id)
        assignment_submit(assignment=lease, answer={"answer": True}, idempotency_key=f"k{lease.pk}")
    return seen


def test_an_excluded_image_is_not_leased_until_included_again(
    api_client, organizer, dataset, worker, other_worker, worked_on
):
    first, second = worked_on
    client = api_client(organizer)
    assert client.post(url(dataset, first, "delete")).status_code == 409  # worked on: it cannot be deleted

    excluded = client.post(url(dataset, first, "exclude"), {"reason": "a duplicate shot"}, format="json")
    assert excluded.status_code == 200, excluded.data
    assert excluded.data["excluded"] is True and excluded.data["excluded_at"]
    assert client.get(f"/api/v1/datasets/{dataset.pk}/images/{first.pk}").data["excluded_at"]
    listed = client.get(f"/api/v1/datasets/{dataset.pk}/images", {"excluded": "true"}).data["results"]
    assert [row["id"] for row in listed] == [first.pk]
    assert leased_images(other_worker, dataset) == [second.pk, second.pk], "the first image's tasks wait"
    # Waiting is not starving: the sweep and the stalls card leave an excluded image's questions alone.
    starved = questions_starved(dataset_id=dataset.pk, idle_seconds=0)
    assert starved == []
    # Excluding it again changes nothing and records nothing more.
    assert client.post(url(dataset, first, "exclude"), {}, format="json").status_code == 200

    included = client.post(url(dataset, first, "include"), {"reason": "kept after all"}, format="json")
    assert included.status_code == 200 and included.data == {
        "id": first.pk,
        "excluded": False,
        "excluded_at": None,
    }
    assert leased_images(other_worker, dataset) == [first.pk]  # its open task, where it stood
    entries = list(AuditEntry.objects.filter(action__startswith="image.").order_by("id"))
    assert [(e.action, e.parameters["image"], e.parameters["reason"]) for e in entries] == [
        ("image.exclude", first.pk, "a duplicate shot"),
        ("image.include", first.pk, "kept after all"),
    ]
    assert Image.objects.filter(pk=first.pk).exists(), "nothing was deleted"


def test_an_excluded_images_open_work_is_left_out_of_progress_and_the_review_queue(
    api_client, organizer, dataset, reviewer_user
):
    concept = factories.ConceptFactory()
    images = factories.ImageFactory.create_batch(3, dataset=dataset)
    statuses = (BoxJobStatus.DONE, BoxJobStatus.NEEDS_DRAW, BoxJobStatus.NEEDS_DRAW)
    for img, status in zip(images, statuses, strict=True):
        BoxJob.objects.create(
            dataset=dataset, image=img, concept=concept, status=status, state={}, max_boxes=3, max_rounds=3
        )
    item = ambiguous.ambiguous_enqueue(
        dataset=dataset, subject={"type": "test.exclude", "id": 1}, reason="over its cap", image=images[2]
    )
    client = api_client(organizer)
    before = client.get(f"/api/v1/datasets/{dataset.pk}/progress").data
    assert (stage(before, "boxes_covered")["done"], stage(before, "boxes_covered")["total"]) == (1, 3)
    assert stage(before, "review")["total"] == 1
    assert client.post(url(dataset, images[2], "exclude"), {}, format="json").status_code == 200
    after = client.get(f"/api/v1/datasets/{dataset.pk}/progress").data
    assert (stage(after, "boxes_covered")["done"], stage(after, "boxes_covered")["total"]) == (1, 2)
    assert stage(after, "review")["total"] == 0
    assert leasing.review_lease_next(reviewer=reviewer_user) is None, "its review item waits"
    client.post(url(dataset, images[2], "include"), {}, format="json")
    assert leasing.review_lease_next(reviewer=reviewer_user).pk == item.pk


def test_exports_leave_an_excluded_image_out_and_name_it(api_client, organizer, dataset, tmp_path):
    dog = factories.ConceptFactory(wnid="n02084071", name="dog")
    boxes = boxed(dataset, dog, 3)
    final_labels_rebuild(dataset)
    excluded = boxes[1].image
    assert api_client(organizer).post(url(dataset, excluded, "exclude"), {}, format="json").status_code == 200
    for fmt in ("coco", "voc"):
        manifest = export(dataset, fmt, tmp_path / fmt)
        assert written_ids(fmt, tmp_path / fmt) == {boxes[0].image_id, boxes[2].image_id}
        left = manifest["completeness"]["images_left_out"]
        assert left["images"] == [{"image_id": excluded.pk, "split": "all", "reasons": ["excluded"]}]
        assert left["by_reason"] == {"excluded": 1}
    assert {a["id"] for a in coco(tmp_path / "coco")["annotations"]} == {boxes[0].pk, boxes[2].pk}
    api_client(organizer).post(url(dataset, excluded, "include"), {}, format="json")
    export(dataset, "coco", tmp_path / "again")
    assert written_ids("coco", tmp_path / "again") == {b.image_id for b in boxes}


def test_only_the_datasets_organizers_exclude_and_the_reason_is_bounded(
    api_client, organizer, dataset, other_organizer_user
):
    img = factories.ImageFactory(dataset=dataset)
    assert api_client(other_organizer_user).post(url(dataset, img, "exclude")).status_code == 404
    long = api_client(organizer).post(url(dataset, img, "exclude"), {"reason": "x" * 501}, format="json")
    assert long.status_code == 400 and "reason" in long.data
    img.refresh_from_db()
    assert img.excluded_at is None


@pytest.fixture
def reviewer_user(db):
    return factories.user_with_roles("reviewer", ("reviewers",))


@pytest.fixture
def other_organizer_user(db):
    return factories.user_with_roles("omar", ("organizers",))
