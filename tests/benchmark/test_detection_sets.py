"""Freezing a detection benchmark on a hand-made dataset: class selection through the API and the command,
basic-level merging in exports with its to-do list, verified negatives, the reviewers' blacklist and box
attributes, VOC scoring of difficult boxes, and the statistics report."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import TestCase
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.models import AuditEntry, Box, BoxJob, BoxState, TaskState
from benchmark.models import BlacklistEntry, DetectionSet, Report, SplitVersion
from hierarchy.models import Concept, ConceptEdge
from tests import factories
from tests.benchmark.conftest import finalize
from tests.conftest import client_for

W, H = 200, 100


def concept(wnid, name, parent=None):
    c = Concept.objects.create(wnid=wnid, name=name)
    if parent is not None:
        ConceptEdge.objects.create(parent=parent, child=c)
    return c


def vote(dataset, image, c, answer):
    factories.TaskFactory(
        image=image,
        dataset=dataset,
        concept=c,
        state=TaskState.DONE,
        result={"answer": answer, "yes": 3 if answer else 0, "no": 0 if answer else 3},
    )


def add_box(image, c, x1, y1, x2, y2):
    return Box.objects.create(image=image, concept=c, x1=x1, y1=y1, x2=x2, y2=y2, state=BoxState.ACCEPTED)


@pytest.fixture
def zoo(dataset):
    """animal -> dog -> {dalmatian, beagle}, animal -> domestic cat, vehicle -> car (cars fill the frame)."""
    animal = concept("n00015388", "animal")
    dog = concept("n02084071", "dog", animal)
    dalmatian = concept("n02110341", "dalmatian", dog)
    beagle = concept("n02088364", "beagle", dog)
    cat = concept("n02121808", "domestic cat", animal)
    vehicle = concept("n04524313", "vehicle")
    car = concept("n02958343", "car", vehicle)
    img = [factories.ImageFactory(dataset=dataset, width=W, height=H) for _ in range(10)]
    boxes = {
        "dal0": add_box(img[0], dalmatian, 10, 10, 50, 50),  # only a dalmatian boxed: other dogs owed
        "dal1": add_box(img[1], dalmatian, 10, 10, 50, 50),
        "bea1": add_box(img[1], beagle, 100, 10, 150, 60),
        "car2": add_box(img[2], car, 5, 5, 195, 95),  # 85% of the image
        "car3": add_box(img[3], car, 0, 0, 190, 90),
        "cat6": add_box(img[6], cat, 20, 20, 80, 80),
        "cat7": add_box(img[7], cat, 30, 20, 90, 70),
        "cat8": add_box(img[8], cat, 40, 30, 60, 60),
        "cat9": add_box(img[9], cat, 40, 30, 60, 60),
    }
    vote(dataset, img[1], dog, False)  # no "other" dog beside the two breeds: exhaustive for dog
    for c in (dog, dalmatian, beagle, cat, car):
        vote(dataset, img[4], c, False)  # verified absent for everything: a negative image
    vote(dataset, img[5], dog, False)  # "no dog" but breeds undecided: not a dog negative after merging
    vote(dataset, img[5], cat, False)
    vote(dataset, img[8], dog, False)
    vote(dataset, img[8], dalmatian, False)
    vote(dataset, img[8], beagle, False)
    finalize(dataset)
    return {
        "dataset": dataset,
        "images": img,
        "boxes": boxes,
        **{c.name.replace("domestic ", ""): c for c in (animal, dog, dalmatian, beagle, cat, vehicle, car)},
    }


@pytest.fixture
def reviewer(db):
    return factories.user_with_roles("reviewer", ("reviewers",))


def create_set(client, dataset, **body):
    return client.post(f"/api/v1/datasets/{dataset.pk}/detection-sets/", body, format="json")


def cmd(name, *args) -> str:
    out = io.StringIO()
    call_command(name, *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def freeze_splits(dataset):
    cmd("make_splits", "--dataset", dataset.name, "--train", "1", "--val", "0", "--test", "0", "--freeze")


def test_class_statistics_endpoint_counts_instances_images_and_scale(organizer, zoo):
    api = client_for(organizer)
    url = f"/api/v1/datasets/{zoo['dataset'].pk}/class-statistics/"
    with TestCase.captureOnCommitCallbacks(execute=True):
        first = api.get(url)
    assert first.status_code == 202 and "being computed" in first.json()["detail"]
    kept = api.get(url)
    assert kept.status_code == 200 and kept["Last-Modified"], "a kept report, with when it was computed"
    rows = kept.json()
    by_name = {r["name"]: r for r in rows}
    assert by_name["car"]["instances"] == 2 and by_name["car"]["images"] == 2
    assert by_name["car"]["mean_area_share"] == pytest.approx((190 * 90 + 190 * 90) / 2 / (W * H))
    assert by_name["domestic cat"]["instances"] == 4 and by_name["dalmatian"]["images"] == 2


def test_an_ancestor_conflict_is_refused_naming_both_classes(organizer, zoo):
    response = create_set(
        client_for(organizer), zoo["dataset"], name="det", classes=[zoo["dog"].wnid, zoo["dalmatian"].wnid]
    )
    assert response.status_code == 400
    assert "dog is an ancestor of dalmatian" in response.json()["classes"]
    assert not DetectionSet.objects.exists()
    unknown = create_set(client_for(organizer), zoo["dataset"], name="det", classes=["n99999999"])
    assert unknown.status_code == 400 and "n99999999" in unknown.json()["classes"]


def test_selection_drops_large_classes_merges_breeds_and_reports_the_to_do(organizer, zoo):
    client = client_for(organizer)
    response = create_set(
        client,
        zoo["dataset"],
        name="det",
        classes=[zoo["dog"].wnid, zoo["cat"].wnid, zoo["car"].wnid],
        merge=True,
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["classes"] == sorted([zoo["dog"].pk, zoo["cat"].pk])
    assert [d["name"] for d in body["report"]["dropped"]] == ["car"]
    assert "over 50%" in body["report"]["dropped"][0]["reason"]
    assert body["merges"] == {str(zoo["dalmatian"].pk): zoo["dog"].pk, str(zoo["beagle"].pk): zoo["dog"].pk}
    todo = client.get(f"/api/v1/datasets/{zoo['dataset'].pk}/detection-sets/det/todo/").json()
    # Image 0 has only a dalmatian box: every other dog must be boxed. Image 1 is exhaustive (both breeds
    # boxed, "no other dog"). Image 8 has no dog at all.
    assert todo == [
        {
            "image": zoo["images"][0].pk,
            "concept_id": zoo["dog"].pk,
            "boxed": [zoo["dalmatian"].pk],
            "owed": sorted([zoo["dog"].pk, zoo["beagle"].pk]),
        }
    ]
    started = client.post(f"/api/v1/datasets/{zoo['dataset'].pk}/detection-sets/det/todo/").json()
    assert started == {"owed": 1, "created": 1, "existing": 0}
    assert BoxJob.objects.filter(image=zoo["images"][0], concept=zoo["dog"]).count() == 1
    again = client.post(f"/api/v1/datasets/{zoo['dataset'].pk}/detection-sets/det/todo/").json()
    assert again == {"owed": 1, "created": 0, "existing": 1}  # idempotent
    assert AuditEntry.objects.filter(action="detection_set.create").count() == 1


def test_merged_export_names_the_basic_class_and_keeps_the_fine_label(organizer, zoo, tmp_path):
    create_set(
        client_for(organizer),
        zoo["dataset"],
        name="det",
        classes=[zoo["dog"].wnid, zoo["cat"].wnid],
        merge=True,
    )
    cmd("export", "--dataset", zoo["dataset"].name, "--format", "coco", "--out", str(tmp_path / "c"),
        "--no-images", "--detection-set", "det", "--no-progress")  # fmt: skip
    data = json.loads((tmp_path / "c/annotations/instances_all.json").read_text())
    assert {c["name"]: c["supercategory"] for c in data["categories"]} == {
        "dog": "animal",
        "domestic cat": "animal",
    }
    by_id = {a["id"]: a for a in data["annotations"]}
    dal = by_id[zoo["boxes"]["dal0"].pk]
    assert dal["category_id"] == zoo["dog"].pk and dal["attributes"]["fine_label"] == "dalmatian"
    assert dal["bbox"] == [10.0, 10.0, 40.0, 40.0]
    assert zoo["boxes"]["car2"].pk not in by_id  # a dropped class is not exported
    cmd("export", "--dataset", zoo["dataset"].name, "--format", "voc", "--out", str(tmp_path / "v"),
        "--no-images", "--detection-set", "det", "--no-progress")  # fmt: skip
    xml = (tmp_path / f"v/Annotations/{zoo['images'][1].pk:012d}.xml").read_text()
    assert xml.count("<name>dog</name>") == 2 and "<value>beagle</value>" in xml


def test_negatives_never_contain_a_positive_box_and_negative_images_are_reverified(organizer, zoo, tmp_path):
    create_set(
        client_for(organizer),
        zoo["dataset"],
        name="det",
        classes=[zoo["dog"].wnid, zoo["cat"].wnid],
        merge=True,
    )
    out = tmp_path / "i"
    cmd("export", "--dataset", zoo["dataset"].name, "--format", "ilsvrc", "--out", str(out), "--no-images",
        "--detection-set", "det", "--no-progress")  # fmt: skip
    boxed = {(b.image_id, c) for b in Box.objects.filter(state=BoxState.ACCEPTED) for c in (b.concept_id,)}
    merged = {zoo["dalmatian"].pk: zoo["dog"].pk, zoo["beagle"].pk: zoo["dog"].pk}
    boxed = {(i, merged.get(c, c)) for i, c in boxed}
    for c in (zoo["dog"], zoo["cat"]):
        lines = (out / f"ImageSets/DET/all_{c.wnid}.txt").read_text().split("\n")
        negatives = {int(line.split()[0]) for line in lines if line.endswith(" -1")}
        assert negatives and not {(i, c.pk) for i in negatives} & boxed
    dog_lines = (out / f"ImageSets/DET/all_{zoo['dog'].wnid}.txt").read_text()
    assert f"{zoo['images'][5].pk:012d} 0" in dog_lines  # "no dog" alone: breeds undecided, not a negative
    assert f"{zoo['images'][8].pk:012d} -1" in dog_lines  # every member absent
    negative_images = (out / "ImageSets/DET/all_negative_images.txt").read_text().split()
    assert negative_images[1::2] == [str(zoo["images"][4].pk)]  # absent for dog and cat alike
    report = DetectionSet.objects.get().report["negatives"]
    assert report["negative_images"] == 1 and report["to_reverify"] == 1  # image 5: cat absent, dog undecided


def test_a_reviewer_blacklists_an_image_its_boxes_leave_the_localization_truth(reviewer, zoo, tmp_path):
    client = client_for(reviewer)
    image = zoo["images"][7]
    url = f"/api/v1/datasets/{zoo['dataset'].pk}/blacklist/"
    body = {"image": image.pk, "wnid": zoo["cat"].wnid, "reason": "a pile of cats"}
    first = client.post(url, body, format="json")
    assert first.status_code == 201, first.content
    assert client.post(url, body, format="json").status_code == 200  # idempotent
    assert client.post(url, {"image": 999999, "reason": "x"}, format="json").status_code == 400
    assert [e["image"] for e in client.get(url).json()] == [image.pk]
    assert AuditEntry.objects.filter(action="blacklist.flag").count() == 1
    cat_box = zoo["boxes"]["cat7"]
    for fmt in ("coco", "voc", "ilsvrc", "yolo"):
        out = tmp_path / fmt
        cmd("export", "--dataset", zoo["dataset"].name, "--format", fmt, "--out", str(out), "--no-images",
            "--no-progress")  # fmt: skip
        assert (out / "blacklist/all.txt").read_text() == f"{image.pk} {zoo['cat'].pk} {zoo['cat'].wnid}\n"
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["counts"]["classes"]["domestic cat"]["all"]["boxes"] == 3  # 4 cat boxes, 1 flagged
    coco = json.loads((tmp_path / "coco/annotations/instances_all.json").read_text())
    assert cat_box.pk not in {a["id"] for a in coco["annotations"]}
    assert "<object>" not in (tmp_path / f"voc/Annotations/{image.pk:012d}.xml").read_text()
    assert not (tmp_path / f"yolo/labels/all/{image.pk:012d}.txt").read_text().strip()
    blacklist = (tmp_path / "ilsvrc/ImageSets/DET/all_blacklist.txt").read_text()
    assert f"{image.pk} {zoo['cat'].wnid}" in blacklist


def test_lifting_a_flag_keeps_the_entry_and_brings_the_boxes_back(reviewer, zoo, tmp_path):
    client = client_for(reviewer)
    image = zoo["images"][7]
    url = f"/api/v1/datasets/{zoo['dataset'].pk}/blacklist/"
    client.post(url, {"image": image.pk, "wnid": zoo["cat"].wnid, "reason": "a pile of cats"}, format="json")
    lifted = client.post(url + "lift/", {"image": image.pk, "wnid": zoo["cat"].wnid}, format="json")
    assert lifted.status_code == 200 and lifted.json()["lifted_at"]
    again = client.post(url + "lift/", {"image": image.pk, "wnid": zoo["cat"].wnid}, format="json")
    assert again.status_code == 400 and "no active blacklist flag" in again.json()["image"]
    assert client.get(url).json() == []
    assert BlacklistEntry.objects.count() == 1  # lifted, not deleted
    assert AuditEntry.objects.filter(action="blacklist.lift").count() == 1
    cmd("export", "--dataset", zoo["dataset"].name, "--format", "coco", "--out", str(tmp_path / "c"),
        "--no-images", "--no-progress")  # fmt: skip
    coco = json.loads((tmp_path / "c/annotations/instances_all.json").read_text())
    assert zoo["boxes"]["cat7"].pk in {a["id"] for a in coco["annotations"]}
    # A new flag after lifting is a new entry (one active flag per pair).
    assert (
        client.post(
            url, {"image": image.pk, "wnid": zoo["cat"].wnid, "reason": "again"}, format="json"
        ).status_code
        == 201
    )


def test_box_attributes_reach_voc_xml_and_difficult_boxes_are_neither_tp_nor_fp(reviewer, zoo, tmp_path):
    client = client_for(reviewer)
    url = f"/api/v1/datasets/{zoo['dataset'].pk}/box-attributes/"
    hard = zoo["boxes"]["cat8"]
    response = client.post(url, {"box": hard.pk, "difficult": True, "viewpoint": "rear"}, format="json")
    assert response.status_code == 201, response.content
    second = client.post(url, {"box": hard.pk, "occluded": True}, format="json").json()
    assert second["difficult"] and second["occluded"] and second["viewpoint"] == "rear"  # kept
    assert client.post(url, {"box": hard.pk}, format="json").status_code == 400
    assert client.post(url, {"box": hard.pk, "viewpoint": "sideways"}, format="json").status_code == 400
    assert AuditEntry.objects.filter(action="box.attributes").count() == 2
    out = tmp_path / "v"
    cmd("export", "--dataset", zoo["dataset"].name, "--format", "voc", "--out", str(out), "--no-images",
        "--no-progress")  # fmt: skip
    xml = (out / f"Annotations/{hard.image_id:012d}.xml").read_text()
    assert (
        "<difficult>1</difficult>" in xml and "<occluded>1</occluded>" in xml and "<pose>Rear</pose>" in xml
    )
    # VOCdevkit: a detection on a difficult object is neither a true nor a false positive, and difficult
    # objects are not counted. With a top-scored detection on the difficult cat, AP stays 1 (were the cat
    # dropped from the truth, that detection would be a false positive ranked first); without it, AP stays 1
    # too (were the cat counted, missing it would cap recall at 3/4).
    cats = [b for b in Box.objects.filter(concept=zoo["cat"], state=BoxState.ACCEPTED).order_by("id")]
    lines = []
    for b in cats:
        score = 0.99 if b.pk == hard.pk else 0.5
        lines.append(
            f"{b.image_id} {zoo['cat'].pk} {score} {round(b.x1) + 1} {round(b.y1) + 1} {round(b.x2)} {round(b.y2)}"
        )
    pred = tmp_path / "pred.txt"
    pred.write_text("\n".join(lines) + "\n")
    for protocol in ("voc07", "voc12"):
        scores = json.loads(cmd("evaluate", "--protocol", protocol, "--gt", str(out), "--pred", str(pred)))
        assert scores["AP_per_class"]["domestic_cat"] == pytest.approx(1.0), protocol
    # Without the difficult box's detection the result is the same (it is not counted).
    pred.write_text("\n".join(line for b, line in zip(cats, lines, strict=True) if b.pk != hard.pk) + "\n")
    scores = json.loads(cmd("evaluate", "--protocol", "voc12", "--gt", str(out), "--pred", str(pred)))
    assert scores["AP_per_class"]["domestic_cat"] == pytest.approx(1.0)


def test_a_frozen_detection_set_keeps_its_blacklist_and_attributes(organizer, reviewer, zoo, tmp_path):
    dataset = zoo["dataset"]
    client = client_for(organizer)
    create_set(client, dataset, name="det", classes=[zoo["dog"].wnid, zoo["cat"].wnid], merge=True)
    refused = client.post(f"/api/v1/datasets/{dataset.pk}/detection-sets/det/freeze/")
    assert refused.status_code == 400 and "frozen split version" in refused.json()["split_version"]
    freeze_splits(dataset)
    client_for(reviewer).post(
        f"/api/v1/datasets/{dataset.pk}/blacklist/",
        {"image": zoo["images"][6].pk, "reason": "ambiguous"},
        format="json",
    )
    frozen = client.post(f"/api/v1/datasets/{dataset.pk}/detection-sets/det/freeze/").json()
    assert frozen["frozen"] and frozen["split_version"] == SplitVersion.objects.get().number
    # Flags after freezing do not move the frozen benchmark.
    client_for(reviewer).post(
        f"/api/v1/datasets/{dataset.pk}/blacklist/",
        {"image": zoo["images"][9].pk, "wnid": zoo["cat"].wnid, "reason": "late"},
        format="json",
    )
    cmd("export", "--dataset", dataset.name, "--format", "coco", "--split", "train", "--out", str(tmp_path / "c"),
        "--no-images", "--detection-set", "det", "--no-progress")  # fmt: skip
    blacklist = (tmp_path / "c/blacklist/train.txt").read_text().split("\n")
    whole_image = {f"{zoo['images'][6].pk} {c.pk} {c.wnid}" for c in (zoo["dog"], zoo["cat"])}
    assert set(filter(None, blacklist)) == whole_image
    again = create_set(client, dataset, name="det", classes=[zoo["cat"].wnid])
    assert again.status_code == 400 and "frozen" in again.json()["classes"]


def test_detection_set_command_reports_and_refuses_with_a_message(zoo):
    dataset = zoo["dataset"]
    report = json.loads(
        cmd(
            "detection_set",
            "--dataset",
            dataset.name,
            "--name",
            "det",
            "--classes",
            f"{zoo['dog'].wnid},{zoo['cat'].wnid},{zoo['car'].wnid}",
            "--merge",
            "--todo",
        )  # fmt: skip
    )
    assert [d["name"] for d in report["dropped"]] == ["car"] and len(report["todo"]) == 1
    with pytest.raises(CommandError, match="dog is an ancestor of beagle"):
        cmd(
            "detection_set",
            "--dataset",
            dataset.name,
            "--name",
            "x",
            "--classes",
            f"{zoo['dog'].wnid},{zoo['beagle'].wnid}",
        )
    with pytest.raises(CommandError, match="no frozen split version"):
        cmd("detection_set", "--dataset", dataset.name, "--name", "det", "--freeze")
    freeze_splits(dataset)
    frozen = json.loads(cmd("detection_set", "--dataset", dataset.name, "--name", "det", "--freeze"))
    assert frozen["frozen"]["negatives"]["train"]["negative_images"] == 1


def test_dataset_stats_command_writes_markdown_json_and_plots(zoo, tmp_path):
    dataset = zoo["dataset"]
    out = tmp_path / "stats"
    text = cmd("dataset_stats", "--dataset", dataset.name, "--out", str(out))
    assert "all 10 images 9 instances" in text
    figures = json.loads((out / "statistics.json").read_text())
    (split,) = figures["splits"]
    assert split["instances"] == 9 and split["classes_with_instances"] == 4
    assert split["instances_per_class"] == {
        "min": 1,
        "median": 2.0,
        "max": 4,
    }  # beagle 1, car 2, dal 2, cat 4
    assert split["clutter"] == pytest.approx(9 / 8)  # 8 images have a box, image 1 has two
    readme = (out / "README.md").read_text()
    assert "ILSVRC 2014 DET val" in readme and "20,121" in readme and "ILSVRC 2015 devkit readme" in readme
    assert (out / "object_scale.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "classes_per_image.png").stat().st_size > 1000
    with pytest.raises(CommandError, match="not an empty directory"):
        cmd("dataset_stats", "--dataset", dataset.name, "--out", str(out))


def test_an_export_job_of_a_frozen_detection_set_holds_only_its_classes(
    organizer, zoo, django_capture_on_commit_callbacks
):
    dataset = zoo["dataset"]
    client = client_for(organizer)
    create_set(client, dataset, name="det", classes=[zoo["dog"].wnid], merge=True)
    freeze_splits(dataset)
    client.post(f"/api/v1/datasets/{dataset.pk}/detection-sets/det/freeze/")
    url = f"/api/v1/datasets/{dataset.pk}/exports/"
    missing = client.post(url, {"format": "coco", "detection_set": "nope"}, format="json")
    assert missing.status_code == 400 and "no detection set 'nope'" in missing.json()["detection_set"]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            url,
            {"format": "coco", "split": "train", "include_images": False, "detection_set": "det"},
            format="json",
        )
    assert response.status_code == 201, response.content
    job = client.get(f"/api/v1/exports/{response.json()['id']}/").json()
    assert job["state"] == "done" and job["detection_set"] == "det"
    download = client.get(f"/api/v1/exports/{job['id']}/file")
    archive = zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content)))
    data = json.loads(archive.read("annotations/instances_train.json"))
    assert [c["name"] for c in data["categories"]] == ["dog"]
    assert {a["attributes"].get("fine_label") for a in data["annotations"]} == {"dalmatian", "beagle"}
    # The same export without the set is another job, not this one joined.
    with django_capture_on_commit_callbacks(execute=True):
        other = client.post(url, {"format": "coco", "split": "train", "include_images": False}, format="json")
    assert other.status_code == 201 and other.json()["id"] != job["id"]


def test_class_statistics_are_read_from_the_kept_report_until_it_is_stale(organizer, zoo):
    """A box finalized after the report is not in it until the report is older than the maximum age: the
    endpoint reads the kept report (fast at any size), never the boxes."""
    api = client_for(organizer)
    url = f"/api/v1/datasets/{zoo['dataset'].pk}/class-statistics/"
    with TestCase.captureOnCommitCallbacks(execute=True):
        api.get(url)
    before = {r["name"]: r["instances"] for r in api.get(url).json()}
    with CaptureQueriesContext(connection) as queries:
        assert api.get(url).status_code == 200
    assert not any("annotation_finalbox" in q["sql"] for q in queries.captured_queries)
    Report.objects.filter(dataset=zoo["dataset"]).update(finished_at=timezone.now() - timedelta(days=1))
    with TestCase.captureOnCommitCallbacks(execute=True):
        stale = api.get(url)
    assert stale.status_code == 200 and {r["name"]: r["instances"] for r in stale.json()} == before
    assert Report.objects.filter(dataset=zoo["dataset"], kind="class_statistics", state="done").count() == 2
