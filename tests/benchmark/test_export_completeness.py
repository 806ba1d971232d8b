"""Exports that say what they hold (issue 31): every final box is exported at once, whatever another box is
waiting for; images whose labelling is unfinished, gold images and unlabelled images are never written as
backgrounds, in any format; the manifest lists them, and the boxes not final, with reasons; the organizer may
include provisional boxes."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation.models import Box, BoxJob, BoxJobStatus, BoxState, TaskState
from benchmark.final_labels import final_labels_rebuild
from benchmark.services import export_run
from gold.models import GoldItem
from review.models import ItemState, ReviewItem
from tests import factories
from tests.conftest import client_for

pytestmark = pytest.mark.django_db

FORMATS = ("coco", "voc", "ilsvrc", "yolo", "imagefolder")


@pytest.fixture
def dog(db):
    return factories.ConceptFactory(wnid="n02084071", name="dog")


def image(dataset):
    return factories.ImageFactory(dataset=dataset, width=200, height=100)


def job(img, concept, status=BoxJobStatus.DONE):
    return BoxJob.objects.create(
        dataset=img.dataset, image=img, concept=concept, status=status, state={}, max_boxes=10, max_rounds=10
    )


def box(img, concept, x1=10.0, state=BoxState.ACCEPTED, width=40.0):
    return Box.objects.create(image=img, concept=concept, x1=x1, y1=10, x2=x1 + width, y2=60, state=state)


def vote(img, concept, answer: bool):
    factories.TaskFactory(
        image=img,
        dataset=img.dataset,
        concept=concept,
        state=TaskState.DONE,
        result={"answer": answer, "yes": 3 if answer else 0, "no": 0 if answer else 3},
    )


def boxed(dataset, concept, n: int) -> list[Box]:
    boxes = []
    for _ in range(n):
        img = image(dataset)
        job(img, concept)
        boxes.append(box(img, concept))
    return boxes


def export(dataset, fmt: str, out: Path, **options) -> dict:
    manifest, _ = export_run(
        dataset=dataset, format_name=fmt, split="all", out=out, include_images=False, **options
    )
    return manifest


def coco(out: Path) -> dict:
    return json.loads((out / "annotations" / "instances_all.json").read_text())


def written_ids(fmt: str, out: Path) -> set[int]:
    """The images an export wrote, read from each format's own listing."""
    if fmt == "coco":
        return {i["id"] for i in coco(out)["images"]}
    if fmt == "voc":
        return {int(line) for line in (out / "ImageSets/Main/all.txt").read_text().split()}
    if fmt == "ilsvrc":
        return {int(line.split()[1]) for line in (out / "ImageSets/all.txt").read_text().splitlines()}
    if fmt == "yolo":
        return {int(p.stem) for p in (out / "labels/all").glob("*.txt")}
    return {int(Path(line.split()[0]).stem) for line in (out / "all.txt").read_text().splitlines()}


def test_one_box_waiting_for_its_quality_vote_holds_back_no_other_box(dataset, dog, tmp_path):
    before = boxed(dataset, dog, 3)
    waiting = image(dataset)
    job(waiting, dog, BoxJobStatus.AWAITING_QUALITY)
    box(waiting, dog, state=BoxState.PENDING)  # its quality vote never comes
    after = boxed(dataset, dog, 3)  # accepted after it, a moment ago
    final_labels_rebuild(dataset)

    manifest = export(dataset, "coco", tmp_path / "coco")

    exported = {a["id"] for a in coco(tmp_path / "coco")["annotations"]}
    assert exported == {b.pk for b in before + after}, "every accepted box but the waiting one's image"
    left = manifest["completeness"]["images_left_out"]
    assert left["images"] == [{"image_id": waiting.pk, "split": "all", "reasons": ["box_job_open"]}]


def test_boxes_accepted_a_moment_ago_are_exported_at_once(dataset, dog, tmp_path):
    boxes = boxed(dataset, dog, 4)  # created now: no settle window, no scan waited for
    final_labels_rebuild(dataset)
    manifest = export(dataset, "coco", tmp_path / "coco")
    assert {a["id"] for a in coco(tmp_path / "coco")["annotations"]} == {b.pk for b in boxes}
    assert manifest["completeness"]["complete"] is True


@pytest.fixture
def mixed(dataset, dog):
    """Finished images (two boxed, one verified without a dog) beside an image whose box job is still open
    (the dog was verified present), a gold image and an image nobody labelled."""
    finished = boxed(dataset, dog, 2)
    background = image(dataset)
    vote(background, dog, False)
    unfinished = image(dataset)
    vote(unfinished, dog, True)
    job(unfinished, dog, BoxJobStatus.NEEDS_DRAW)
    gold = image(dataset)
    GoldItem.objects.create(dataset=dataset, kind="image_verify", concept=dog, image=gold, answer=True)
    unlabelled = image(dataset)
    final_labels_rebuild(dataset)
    return {
        "boxed": [b.image_id for b in finished],
        "background": background.pk,
        "unfinished": unfinished.pk,
        "gold": gold.pk,
        "unlabelled": unlabelled.pk,
    }


@pytest.mark.parametrize("fmt", FORMATS)
def test_unfinished_gold_and_unlabelled_images_are_never_written_as_backgrounds(
    dataset, mixed, fmt, tmp_path
):
    manifest = export(dataset, fmt, tmp_path / fmt)

    written = written_ids(fmt, tmp_path / fmt)
    expected = set(mixed["boxed"])
    if fmt != "imagefolder":  # image folders hold images showing exactly one class
        expected.add(mixed["background"])
    assert written == expected
    left = {row["image_id"]: row["reasons"] for row in manifest["completeness"]["images_left_out"]["images"]}
    assert left == {
        mixed["unfinished"]: ["box_job_open"],
        mixed["gold"]: ["gold"],
        mixed["unlabelled"]: ["unlabelled"],
    }
    assert manifest["counts"]["images"] == {"all": 3}, "the images every format was given"


def test_the_manifest_counts_per_class_what_is_not_final_and_why(dataset, dog, mixed, tmp_path):
    img = image(dataset)
    job(img, dog)
    a, b = box(img, dog), box(img, dog, x1=12)  # a duplicate pair: a review item opens
    final_labels_rebuild(dataset)

    manifest = export(dataset, "coco", tmp_path / "coco")

    assert ReviewItem.objects.filter(box_a=a, box_b=b, state=ItemState.OPEN).exists()
    completeness = manifest["completeness"]
    assert completeness["labels"] == "final" and completeness["complete"] is False
    assert completeness["classes"]["dog"] == {
        "accepted_boxes_not_final": {"total": 2, "review_open": 2},
        "images_unfinished": {"total": 2, "box_job_open": 1, "boxes_not_final": 1},
    }
    assert completeness["image_wide"] == {"gold": 1, "unlabelled": 1}
    assert img.pk not in written_ids("coco", tmp_path / "coco"), "written without its boxes it would lie"


def test_include_provisional_writes_boxes_not_final_and_says_so(dataset, dog, tmp_path):
    final = boxed(dataset, dog, 2)
    img = image(dataset)
    job(img, dog)
    pair = [box(img, dog), box(img, dog, x1=12)]
    final_labels_rebuild(dataset)

    strict = export(dataset, "coco", tmp_path / "final")
    loose = export(dataset, "coco", tmp_path / "provisional", include_provisional=True, provenance=True)

    assert {a["id"] for a in coco(tmp_path / "final")["annotations"]} == {b.pk for b in final}
    assert {a["id"] for a in coco(tmp_path / "provisional")["annotations"]} == {b.pk for b in final + pair}
    assert strict["completeness"]["labels"] == "final"
    assert loose["completeness"]["labels"] == "provisional"
    assert loose["completeness"]["provisional_boxes_written"] == 2
    lines = (tmp_path / "provisional" / "provenance" / "all.jsonl").read_text().splitlines()
    final_flags = {row["box_id"]: row["final"] for row in map(json.loads, lines) if "box_id" in row}
    assert final_flags == {**{b.pk: True for b in final}, **{b.pk: False for b in pair}}


def test_the_export_command_takes_include_provisional(dataset, dog, tmp_path):
    img = image(dataset)
    job(img, dog)
    box(img, dog), box(img, dog, x1=12)
    final_labels_rebuild(dataset)
    out = io.StringIO()
    call_command(
        "export",
        *("--dataset", dataset.name, "--format", "coco", "--split", "all", "--out", str(tmp_path / "x")),
        *("--no-images", "--no-progress", "--include-provisional"),
        stdout=out,
        stderr=io.StringIO(),
    )
    assert "labels: provisional" in out.getvalue() and "2 accepted boxes not final (written" in out.getvalue()
    assert len(coco(tmp_path / "x")["annotations"]) == 2


def test_an_export_job_takes_include_provisional_and_reports_completeness(
    organizer, dataset, dog, django_capture_on_commit_callbacks
):
    dataset.organizers.add(organizer)
    img = image(dataset)
    job(img, dog)
    box(img, dog), box(img, dog, x1=12)
    final_labels_rebuild(dataset)
    client = client_for(organizer)
    url = f"/api/v1/datasets/{dataset.pk}/exports/"

    bad = client.post(url, {"format": "coco", "include_provisional": "sometimes"}, format="json")
    assert bad.status_code == 400 and "include_provisional" in bad.json()
    with django_capture_on_commit_callbacks(execute=True):
        final = client.post(url, {"format": "coco", "include_images": False}, format="json").json()
        loose = client.post(
            url, {"format": "coco", "include_images": False, "include_provisional": True}, format="json"
        ).json()

    assert loose["id"] != final["id"], "a different export, not the one in flight"
    final = client.get(f"/api/v1/exports/{final['id']}/").json()
    loose = client.get(f"/api/v1/exports/{loose['id']}/").json()
    assert (final["include_provisional"], loose["include_provisional"]) == (False, True)
    assert final["manifest"]["completeness"]["images_left_out"]["by_reason"] == {"boxes_not_final": 1}
    assert final["progress"] == 0
    assert loose["manifest"]["completeness"]["labels"] == "provisional" and loose["progress"] == 1
    assert loose["manifest"]["counts"]["boxes"] == {"all": 2}


def test_an_export_requested_right_after_the_last_decision_holds_every_accepted_box(
    organizer, dataset, dog, django_capture_on_commit_callbacks
):
    """Issue 31: the export an organizer asks for the moment the last review decision is in holds every
    accepted box (the decision's boxes included), with no scan or schedule waited for in between."""
    import zipfile

    from annotation.models import FinalBox
    from review.scan import overlaps_check_images

    dataset.organizers.add(organizer)
    reviewer = factories.user_with_roles("reviewer", ("reviewers",))
    pair_image, lone_image = image(dataset), image(dataset)
    job(pair_image, dog), job(lone_image, dog)
    kept, duplicate, lone = box(pair_image, dog), box(pair_image, dog, x1=11), box(lone_image, dog)
    final_labels_rebuild(dataset)
    overlaps_check_images(dataset, [pair_image.pk, lone_image.pk])  # as on acceptance: the pair is queued
    assert set(FinalBox.objects.values_list("box_id", flat=True)) == {lone.pk}, (
        "the pair waits for a reviewer"
    )
    reviewing, organizing = client_for(reviewer), client_for(organizer)
    item = reviewing.get("/api/v1/review/next", {"dataset": dataset.pk}).json()
    assert {item["box_a"]["id"], item["box_b"]["id"]} == {kept.pk, duplicate.pk}
    keep = "duplicate_keep_a" if item["box_a"]["id"] == kept.pk else "duplicate_keep_b"

    with django_capture_on_commit_callbacks(execute=True):
        decided = reviewing.post(
            f"/api/v1/review/items/{item['id']}/decide", {"decision": keep}, format="json"
        )
    with django_capture_on_commit_callbacks(execute=True):
        started = organizing.post(
            f"/api/v1/datasets/{dataset.pk}/exports/",
            {"format": "coco", "split": "all", "include_images": False},
            format="json",
        )

    assert decided.status_code == 201 and started.status_code == 201, (decided.content, started.content)
    done = organizing.get(f"/api/v1/exports/{started.json()['id']}/").json()
    assert done["state"] == "done" and done["manifest"]["completeness"]["complete"] is True
    download = organizing.get(f"/api/v1/exports/{done['id']}/file")
    archive = zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content)))
    exported = {a["id"] for a in json.loads(archive.read("annotations/instances_all.json"))["annotations"]}
    accepted = set(Box.objects.filter(state=BoxState.ACCEPTED).values_list("pk", flat=True))
    assert exported == accepted == {kept.pk, lone.pk}
