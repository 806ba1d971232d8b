"""Importing predictions (predictions/services.py and the import_predictions command): a file is stored whole as
one prediction set or not at all, each bad row is named, and the same file again stores nothing twice."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from annotation.models import AuditEntry
from predictions import rows, services
from predictions.models import BoxPrediction, ClassScore, PredictionSet, PredictionSource
from tests import factories

from .conftest import as_bytes, coco


def imported(scene, document, **kwargs):
    return services.prediction_file_import(dataset=scene["dataset"], data=as_bytes(document), **kwargs)


def refused(scene, document):
    with pytest.raises(rows.PredictionsRefused) as caught:
        imported(scene, document)
    assert not PredictionSet.objects.exists() and not BoxPrediction.objects.exists()
    assert not ClassScore.objects.exists()
    return [(p.where, p.code) for p in caught.value.problems]


def test_a_coco_results_file_is_stored_as_corners_with_its_set(scene, organizer):
    prediction_set, created = imported(scene, [coco(scene)], actor=organizer, name="run 1")
    assert created and prediction_set.name == "run 1" and prediction_set.box_count == 1
    box = BoxPrediction.objects.get()
    assert (box.image_id, box.concept_id) == (scene["first"].pk, scene["dog"].pk)
    assert (box.x1, box.y1, box.x2, box.y2, box.score) == (10, 20, 110, 70, 0.8)
    entry = AuditEntry.objects.get(action="predictions.import")
    assert entry.result["prediction_set"] == prediction_set.pk and entry.actor == organizer


def test_file_names_wnids_and_class_scores_resolve(scene):
    document = {
        "name": "frcnn on val",
        "model": {"name": "frcnn", "version": "r50-1"},
        "detections": [
            {"file_name": "second.jpg", "wnid": "n02121808", "bbox": [0, 0, 320, 240], "score": 1}
        ],
        "classifications": [
            {"file_name": "first.jpg", "wnid": "n02084071", "score": 0.9},
            {"image_id": scene["first"].pk, "category_id": scene["cat"].pk, "score": 0.05},
        ],
    }
    prediction_set, _ = imported(scene, document)
    assert (prediction_set.name, prediction_set.model_name, prediction_set.model_version) == (
        "frcnn on val",
        "frcnn",
        "r50-1",
    )
    assert BoxPrediction.objects.get().image_id == scene["second"].pk
    scores = {(s.image_id, s.concept_id): s.score for s in ClassScore.objects.all()}
    assert scores == {(scene["first"].pk, scene["dog"].pk): 0.9, (scene["first"].pk, scene["cat"].pk): 0.05}


def test_one_bad_row_stores_nothing_and_every_problem_is_named(scene):
    other = factories.ImageFactory()  # another dataset's image is unknown here
    outsider = factories.ConceptFactory(wnid="n99999999")  # a concept the dataset did not pick
    document = {
        "detections": [
            coco(scene),
            coco(scene, image_id=other.pk),
            coco(scene, category_id=outsider.pk),
            coco(scene, wnid="n99999999", category_id=None),
            coco(scene, bbox=[600, 0, 50, 10]),
            coco(scene, bbox=[0, 0, 1e400, 10]),
            coco(scene),
        ],
        "classifications": [{"file_name": "nowhere.jpg", "category_id": scene["dog"].pk, "score": 0.5}],
    }
    assert refused(scene, document) == [
        ("detections[1]", rows.Code.UNKNOWN_IMAGE),
        ("detections[2]", rows.Code.UNKNOWN_CLASS),
        ("detections[3]", rows.Code.UNKNOWN_CLASS),
        ("detections[4]", rows.Code.OUTSIDE_IMAGE),
        ("detections[5]", rows.Code.NON_FINITE),
        ("detections[6]", rows.Code.DUPLICATE),
        ("classifications[0]", rows.Code.UNKNOWN_IMAGE),
    ]


def test_a_box_is_checked_against_its_own_image_size(scene):
    # 400 px wide fits the first image (640 px) but not the second (320 px).
    assert imported(scene, [coco(scene, bbox=[0, 0, 400, 10])])[1]
    assert refused_again(scene, [coco(scene, image_id=scene["second"].pk, bbox=[0, 0, 400, 10])]) == [
        ("detections[0]", rows.Code.OUTSIDE_IMAGE)
    ]


def refused_again(scene, document):
    with pytest.raises(rows.PredictionsRefused) as caught:
        imported(scene, document)
    return [(p.where, p.code) for p in caught.value.problems]


def test_the_same_file_again_answers_the_first_set(scene):
    first, created = imported(scene, [coco(scene)])
    again, created_again = imported(scene, [coco(scene)], name="another name")
    assert created and not created_again and again.pk == first.pk
    assert PredictionSet.objects.count() == 1 and BoxPrediction.objects.count() == 1


def test_without_picked_classes_every_concept_of_the_hierarchy_is_known(dataset):
    image = factories.ImageFactory(dataset=dataset)
    concept = factories.ConceptFactory()
    row = {"image_id": image.pk, "category_id": concept.pk, "bbox": [0, 0, 5, 5], "score": 0.5}
    assert services.prediction_file_import(dataset=dataset, data=as_bytes([row]))[1]


# --- the command ---------------------------------------------------------------------------------------------


def test_the_command_imports_a_file_and_says_so(scene, tmp_path, capsys):
    path = tmp_path / "detections.json"
    path.write_bytes(as_bytes([coco(scene)]))
    call_command("import_predictions", str(path), "--dataset", scene["dataset"].name, "--model", "yolo")
    assert "1 boxes, 0 class scores" in capsys.readouterr().out
    prediction_set = PredictionSet.objects.get()
    assert (prediction_set.name, prediction_set.model_name, prediction_set.source) == (
        "detections.json",
        "yolo",
        PredictionSource.COMMAND,
    )
    call_command("import_predictions", str(path), "--dataset", scene["dataset"].name)
    assert "was imported before" in capsys.readouterr().out


def test_the_command_names_the_bad_rows_and_stores_nothing(scene, tmp_path):
    path = tmp_path / "bad.json"
    path.write_bytes(as_bytes([coco(scene), coco(scene, score=float("nan"))]))
    with pytest.raises(CommandError, match=r"detections\[1\]: non_finite"):
        call_command("import_predictions", str(path), "--dataset", scene["dataset"].name)
    assert not PredictionSet.objects.exists()


def test_the_command_names_a_missing_dataset_file_or_user(scene, tmp_path):
    with pytest.raises(CommandError, match="no dataset named 'nope'"):
        call_command("import_predictions", "x.json", "--dataset", "nope")
    with pytest.raises(CommandError, match="cannot read"):
        call_command("import_predictions", str(tmp_path / "missing.json"), "--dataset", scene["dataset"].name)
    with pytest.raises(CommandError, match="no user named 'ghost'"):
        call_command("import_predictions", "x.json", "--dataset", scene["dataset"].name, "--user", "ghost")


def test_lookups_in_chunks_find_every_image_and_class(scene, monkeypatch):
    monkeypatch.setattr(services, "LOOKUP_CHUNK", 1)
    document = {
        "detections": [
            coco(scene),
            coco(scene, image_id=None, file_name="second.jpg", category_id=None, wnid="n02121808"),
        ],
        "classifications": [{"file_name": "first.jpg", "category_id": scene["cat"].pk, "score": 0.1}],
    }
    prediction_set, _ = imported(scene, document)
    assert (prediction_set.box_count, prediction_set.score_count) == (2, 1)
