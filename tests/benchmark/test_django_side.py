"""Splits, label selection, the export and evaluate commands on a database-backed dataset."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Box, BoxState
from benchmark.final_labels import final_labels_rebuild
from benchmark.models import ImageSplit, SplitVersion
from benchmark.selectors import image_labels
from tests import factories


def splits_of(version: SplitVersion) -> dict[int, str]:
    return dict(ImageSplit.objects.filter(version=version).values_list("image_id", "split"))


def make_splits(dataset, *extra: str) -> dict:
    out = io.StringIO()
    call_command("make_splits", "--dataset", dataset.name, *extra, stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def test_image_labels_read_accepted_boxes_and_finished_votes_only(labelled):
    images, dog, cat = labelled["images"], labelled["dog"], labelled["cat"]
    labels = {(lab.image_id, lab.concept_id): lab for lab in image_labels(labelled["dataset"])}
    assert (
        labels[(images[3].pk, cat.pk)].positive and labels[(images[3].pk, cat.pk)].pipeline == "binary_vote"
    )
    assert labels[(images[3].pk, dog.pk)].pipeline == "box"
    assert not labels[(images[6].pk, dog.pk)].positive  # verified negative
    assert labels[(images[6].pk, dog.pk)].no == 3
    assert (images[7].pk, cat.pk) not in labels  # cancelled vote
    # Image 0 has removed (dog) and rejected (cat) boxes besides its accepted cat box.
    assert (images[0].pk, dog.pk) not in labels
    keys = list(labels)
    assert keys == sorted(keys)


def test_consensus_decisions_are_final_labels_with_their_probability_and_outrank_fixed_votes(labelled):
    from consensus.models import Question, QuestionKind, QuestionState

    images, dog, cat = labelled["images"], labelled["dog"], labelled["cat"]
    dataset = labelled["dataset"]
    common = {"dataset": dataset, "kind": QuestionKind.IMAGE_VERIFY}
    # Image 3 has a fixed-majority "yes" for cat; consensus says no: the calibrated decision wins.
    Question.objects.create(
        **common, concept=cat, image=images[3], state=QuestionState.REJECTED, no_count=4, p=0.01
    )
    Question.objects.create(
        **common, concept=dog, image=images[8], state=QuestionState.ACCEPTED, yes_count=3, p=0.998
    )
    Question.objects.create(
        **common, concept=dog, image=images[10], state=QuestionState.REVIEW, yes_count=6, no_count=6
    )
    final_labels_rebuild(dataset)  # questions written straight to the table: backfill their final labels
    labels = {(lab.image_id, lab.concept_id): lab for lab in image_labels(dataset)}
    overruled = labels[(images[3].pk, cat.pk)]
    assert (overruled.positive, overruled.pipeline, overruled.probability) == (False, "consensus", 0.01)
    accepted = labels[(images[8].pk, dog.pk)]
    assert (accepted.positive, accepted.pipeline, accepted.probability, accepted.yes) == (
        True,
        "consensus",
        0.998,
        3,
    )
    assert (images[10].pk, dog.pk) not in labels  # sent to review: not final


def test_make_splits_is_deterministic_for_a_seed(labelled):
    first = make_splits(labelled["dataset"], "--seed", "3")
    second = make_splits(labelled["dataset"], "--seed", "3")
    v1, v2 = SplitVersion.objects.order_by("number")
    assert splits_of(v1) == splits_of(v2)
    assert first["version_hash"] == second["version_hash"]
    assert (first["version"], second["version"]) == (1, 2)
    assert sum(first["counts"].values()) == 36


def test_frozen_splits_never_move_when_images_are_added(labelled):
    dataset = labelled["dataset"]
    make_splits(dataset, "--freeze")
    before = splits_of(SplitVersion.objects.get(number=1))
    for k in range(12):
        image = factories.ImageFactory(dataset=dataset)
        Box.objects.create(
            image=image, concept=labelled["dog"], x1=1, y1=1, x2=9, y2=9, state=BoxState.ACCEPTED
        )
        if k == 0:  # a new near-duplicate of an old test or val image joins its split
            anchor = next(i for i in labelled["images"] if before[i.pk] != "train")
            image.near_duplicate_of = anchor
            image.save(update_fields=["near_duplicate_of"])
            joined = (image.pk, before[anchor.pk])
    manifest = make_splits(dataset)
    after = splits_of(SplitVersion.objects.get(number=2))
    assert {k: after[k] for k in before} == before
    assert after[joined[0]] == joined[1]
    assert manifest["new_images"] == 12 and manifest["previous_version"] == 1


def test_near_duplicates_never_straddle_two_splits(labelled):
    images = labelled["images"]
    for seed in range(5):
        make_splits(labelled["dataset"], "--seed", str(seed))
        version = SplitVersion.objects.order_by("-number").first()
        split = splits_of(version)
        assert split[images[0].pk] == split[images[1].pk] == split[images[2].pk]
        assert split[images[4].pk] == split[images[5].pk]


def test_source_rule_sends_a_source_only_to_val_and_test(labelled):
    make_splits(labelled["dataset"], "--source-rule", "flickr=0.33:0.67", "--seed", "1")
    split = splits_of(SplitVersion.objects.get())
    flickr = [i for i in labelled["images"] if i.source == "flickr" and i.near_duplicate_of_id is None]
    assert flickr and all(
        split[i.pk] in ("val", "test")
        for i in flickr
        if i.pk not in {labelled["images"][k].pk for k in (0, 4)}
    )


def test_bad_ratios_fail_with_a_message(labelled):
    with pytest.raises(CommandError, match="sum to 1"):
        make_splits(labelled["dataset"], "--train", "0.9", "--val", "0.2", "--test", "0.1")


def export_cmd(dataset, *args: str) -> str:
    out = io.StringIO()
    call_command(
        "export", "--dataset", dataset.name, "--no-progress", *args, stdout=out, stderr=io.StringIO()
    )
    return out.getvalue()


def label_values(path: Path) -> set[float]:
    """The numbers a file can carry a label in, read from its structure: JSON numbers, the coordinates of VOC
    XML boxes, the numeric fields of list and label files. A substring search also hit the digits of a
    timestamp (`"exported_at": "...T19:25:20.252014"` holds `20.25`), so it failed with the clock."""
    text = path.read_bytes().decode("utf-8", "replace")
    if path.suffix == ".json":
        found: set[float] = set()

        def walk(value) -> None:
            if isinstance(value, bool):
                return
            if isinstance(value, int | float):
                found.add(float(value))
            elif isinstance(value, dict):
                for item in value.values():
                    walk(item)
            elif isinstance(value, list):
                for item in value:
                    walk(item)

        walk(json.loads(text))
        return found
    if path.suffix == ".xml":
        from xml.etree import ElementTree

        tags = ("xmin", "ymin", "xmax", "ymax")
        return {float(e.text) for e in ElementTree.fromstring(text).iter() if e.tag in tags and e.text}
    numbers = set()
    for token in text.replace(",", " ").split():
        try:
            numbers.add(float(token))
        except ValueError:
            pass
    return numbers


def test_label_values_read_numbers_from_structure_not_from_timestamps(tmp_path):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"exported_at": "2026-12-04T19:25:20.252014+00:00", "bbox": [20.25, 1]}))
    assert label_values(manifest) == {20.25, 1.0}
    voc = tmp_path / "a.xml"
    voc.write_text(
        "<annotation><size><width>61</width></size><object><bndbox><xmax>61</xmax></bndbox>"
        "</object></annotation>"
    )
    assert label_values(voc) == {61.0}
    listing = tmp_path / "a.txt"
    listing.write_text("000000000001 20.25\n2026-12-04T19:25:20.252014\n")
    assert label_values(listing) == {1.0, 20.25}


@pytest.mark.parametrize("fmt", ["coco", "voc", "ilsvrc", "yolo", "imagefolder"])
def test_no_label_of_a_test_image_appears_in_any_export_of_test(labelled, tmp_path, fmt):
    dataset = labelled["dataset"]
    make_splits(dataset, "--freeze")
    split = splits_of(SplitVersion.objects.get())
    test_images = [i for i in labelled["images"] if split[i.pk] == "test"]
    assert test_images
    boxes = Box.objects.filter(image__in=test_images, state=BoxState.ACCEPTED)
    # The fixture's coordinates end in .25 and .75, so no id, size or count can equal them by chance; VOC
    # writes whole pixels, whose values are compared within VOC's box elements only.
    exact = {b.x1 for b in boxes} | {b.x2 for b in boxes}
    voc_pixels = {float(round(b.x2)) for b in boxes}
    out = tmp_path / "test-export"
    text = export_cmd(dataset, "--format", fmt, "--split", "test", "--out", str(out), "--provenance")
    assert "withheld" in text
    files = [path for path in out.rglob("*") if path.is_file() and path.suffix not in (".jpg", ".png")]
    assert files
    for path in files:
        values = label_values(path)
        assert not values & exact, path
        if path.suffix == ".xml":
            assert not values & voc_pixels, path
        if fmt == "yolo" and path.suffix == ".txt" and "labels" in path.parts:
            assert not path.read_text().strip(), path  # a YOLO label file of a test image holds no box
        # No list line pairs a test image with a verdict or a class.
        lines = set(path.read_bytes().decode("utf-8", "replace").splitlines())
        for image in test_images:
            stem = f"{image.pk:012d}"
            verdicts = {f"{stem} 1", f"{stem}  1", f"{stem} 0", f"{stem} -1"}
            classes = {f"{image.pk} {c.pk}" for c in (labelled["dog"], labelled["cat"])}
            assert not lines & (verdicts | classes), path
    truth = Path(str(out) + "-test-groundtruth")
    truth_values = (
        set().union(*(label_values(p) for p in truth.rglob("*") if p.is_file())) if truth.is_dir() else set()
    )
    assert truth_values & (exact | voc_pixels) or fmt in ("yolo", "imagefolder")


def test_coco_export_skips_removed_and_rejected_boxes_and_names_supercategories(labelled, tmp_path):
    dataset = labelled["dataset"]
    make_splits(dataset, "--freeze")
    export_cmd(dataset, "--format", "coco", "--split", "train", "--out", str(tmp_path / "c"))
    data = json.loads((tmp_path / "c/annotations/instances_train.json").read_text())
    train = set(ImageSplit.objects.filter(split="train").values_list("image_id", flat=True))
    accepted = set(
        Box.objects.filter(image_id__in=train, state=BoxState.ACCEPTED).values_list("id", flat=True)
    )
    assert {a["id"] for a in data["annotations"]} == accepted
    assert {c["name"]: c["supercategory"] for c in data["categories"]} == {
        "dog": "animal",
        "domestic cat": "animal",
    }
    assert len(list((tmp_path / "c/images/train").iterdir())) == len(train)  # image bytes copied
    manifest = json.loads((tmp_path / "c/manifest.json").read_text())
    assert manifest["dataset_version"].startswith("v1-") and manifest["counts"]["images"] == {
        "train": len(train)
    }


def test_export_to_an_archive_and_unknown_dataset_errors(labelled, tmp_path):
    export_cmd(
        labelled["dataset"],
        "--format",
        "voc",
        "--split",
        "all",
        "--out",
        str(tmp_path / "x.tar.gz"),
        "--no-images",
    )
    assert (tmp_path / "x.tar.gz").stat().st_size > 0
    with pytest.raises(CommandError, match="no dataset"):
        call_command("export", "--dataset", "nope", "--format", "coco", "--out", str(tmp_path / "y"))


def evaluate_cmd(*args: str) -> dict:
    out = io.StringIO()
    call_command("evaluate", *args, stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def test_evaluate_scores_an_exported_val_set_with_every_detection_protocol(labelled, tmp_path):
    dataset = labelled["dataset"]
    make_splits(dataset, "--freeze")
    export_cmd(dataset, "--format", "coco", "--split", "val", "--out", str(tmp_path / "c"), "--no-images")
    gt_file = tmp_path / "c/annotations/instances_val.json"
    data = json.loads(gt_file.read_text())
    results = [
        {"image_id": a["image_id"], "category_id": a["category_id"], "bbox": a["bbox"], "score": 0.9}
        for a in data["annotations"]
    ]
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps(results))
    coco = evaluate_cmd("--protocol", "coco", "--gt", str(gt_file), "--pred", str(pred), "--bootstrap", "20")
    assert set(coco) >= {"AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "bootstrap"}
    assert set(coco["bootstrap"]) >= {"AP", "AR100", "ARl"}
    assert coco["AP50"] == pytest.approx(1.0)
    voc = evaluate_cmd("--protocol", "voc12", "--gt", str(gt_file), "--pred", str(pred))
    assert set(voc["AP_per_class"]) <= {"dog", "domestic cat"} and voc["mAP"] == pytest.approx(1.0)


def test_evaluate_ilsvrc_classification_on_an_exported_archive(labelled, tmp_path):
    dataset = labelled["dataset"]
    make_splits(dataset, "--freeze")
    archive = tmp_path / "i.zip"
    export_cmd(dataset, "--format", "ilsvrc", "--split", "val", "--out", str(archive), "--no-images")
    import zipfile

    with zipfile.ZipFile(archive) as zf:
        truth = [line.split() for line in zf.read("CLS-LOC/val_labels.txt").decode().splitlines()]
    other = {str(labelled["dog"].pk): labelled["cat"].pk, str(labelled["cat"].pk): labelled["dog"].pk}
    pred = tmp_path / "cls.txt"
    pred.write_text("".join(f"{i} {other[c]} {c}\n" for i, c in truth))
    result = evaluate_cmd("--protocol", "ilsvrc-cls", "--gt", str(archive), "--pred", str(pred))
    assert result == {"top1_error": 1.0, "top5_error": 0.0}


def test_evaluate_refuses_a_malformed_submission_listing_every_problem(labelled, tmp_path):
    dataset = labelled["dataset"]
    make_splits(dataset, "--freeze")
    export_cmd(dataset, "--format", "coco", "--split", "val", "--out", str(tmp_path / "c"), "--no-images")
    gt_file = tmp_path / "c/annotations/instances_val.json"
    image_id = json.loads(gt_file.read_text())["images"][0]["id"]
    bad = [
        {"image_id": image_id, "category_id": labelled["dog"].pk, "bbox": [1, 1, 5, 5], "score": 0.5},
        {"image_id": 999999, "category_id": labelled["dog"].pk, "bbox": [1, 1, 5, 5], "score": 0.5},
        {"image_id": image_id, "category_id": labelled["dog"].pk, "bbox": [1, 1, -5, 5], "score": 0.5},
        {"image_id": image_id, "bbox": [1, 1, 5, 5], "score": 0.5},
    ]
    pred = tmp_path / "bad.json"
    pred.write_text(json.dumps(bad))
    err = io.StringIO()
    with pytest.raises(CommandError, match="3 problem"):
        call_command("evaluate", "--protocol", "coco", "--gt", str(gt_file), "--pred", str(pred), stderr=err)
    lines = err.getvalue().splitlines()
    assert any("entry 1" in line and "unknown image_id 999999" in line for line in lines)
    assert any("entry 2" in line and "must be positive" in line for line in lines)
    assert any("entry 3" in line and "missing key" in line for line in lines)


def test_evaluate_scores_boxes_past_the_border_as_given_and_counts_them(labelled, tmp_path):
    dataset = labelled["dataset"]
    make_splits(dataset, "--freeze")
    export_cmd(dataset, "--format", "coco", "--split", "val", "--out", str(tmp_path / "c"), "--no-images")
    gt_file = tmp_path / "c/annotations/instances_val.json"
    data = json.loads(gt_file.read_text())
    widths = {i["id"]: i["width"] for i in data["images"]}
    results = [
        {"image_id": a["image_id"], "category_id": a["category_id"], "bbox": a["bbox"], "score": 0.9}
        for a in data["annotations"]
    ]
    first = data["annotations"][0]
    x, y, w, h = first["bbox"]
    overshoot = widths[first["image_id"]] + 2 - x  # 2 px past the right border
    results.append(
        {
            "image_id": first["image_id"],
            "category_id": first["category_id"],
            "bbox": [x, y, overshoot, h],
            "score": 0.1,
        }
    )
    # Wholly outside (left of the image): a false positive, as pycocotools scores it, not a refused file.
    results.append({**results[-1], "bbox": [-50.0, y, 20.0, h], "score": 0.05})
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps(results))
    coco = evaluate_cmd("--protocol", "coco", "--gt", str(gt_file), "--pred", str(pred))
    assert coco["boxes_past_border"] == 2 and coco["boxes_outside_image"] == 1
    assert coco["AP50"] == pytest.approx(1.0)
    assert {"AR1", "AR10", "AR100", "ARs", "ARm", "ARl"} <= set(coco) and coco["AR100"] == pytest.approx(1.0)
