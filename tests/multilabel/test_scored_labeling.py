"""A multi-label run started with a prediction set: likely classes asked first, nothing skipped before the dataset
has decided images, then the calibrated skips recorded per decision and marked model-inferred; and the API's
validation of the prediction set."""

from __future__ import annotations

import pytest

from annotation.models import FinalLabel
from benchmark.final_labels import final_labels_rebuild
from consensus.models import ConsensusSettings
from hierarchy.models import Concept
from multilabel import scores
from multilabel.labeling import labeling_start, order_cache_clear
from multilabel.model_scores import RULE
from multilabel.models import ImageLabeling, LabelingSkip, LeafLabel
from predictions.models import ClassScore, PredictionSet
from tests import factories
from tests.multilabel.test_labeling import CAR, CAT, DOG, PERSON, drive

URL = "/api/v1/datasets/{}/multilabel/"


@pytest.fixture
def images(dataset):
    return [factories.ImageFactory(dataset=dataset) for _ in range(10)]


def prediction_set(dataset, images, scores_by_wnid: dict[str, float], name: str = "model") -> PredictionSet:
    made = PredictionSet.objects.create(
        dataset=dataset, name=name, source="upload", sha256=name.ljust(64, "0"), score_count=1
    )
    concepts = {c.wnid: c for c in Concept.objects.filter(wnid__in=scores_by_wnid)}
    ClassScore.objects.bulk_create(
        ClassScore(prediction_set=made, image=image, concept=concepts[wnid], score=score)
        for image in images
        for wnid, score in scores_by_wnid.items()
    )
    return made


CAR_LIKELY = {CAR: 0.9, DOG: 0.0003, CAT: 0.0003, PERSON: 0.0003}


@pytest.mark.django_db
def test_a_scored_run_asks_the_likely_class_first_and_skips_nothing_before_any_image_is_decided(
    dataset, tiny_hierarchy, images
):
    predictions = prediction_set(dataset, images, CAR_LIKELY)
    result = labeling_start(
        dataset=dataset, hierarchy=tiny_hierarchy, images=images[:1], prediction_set=predictions
    )
    assert result.prediction_set == predictions.pk
    labeling = ImageLabeling.objects.get()
    assert labeling.pending_node == "q:vehicle"  # breadth-first would ask q:animal first
    asked = drive(labeling, present={CAR})
    assert asked[:2] == ["q:vehicle", CAR]
    assert len(asked) == 4 and not LabelingSkip.objects.exists()
    assert "skipped" not in ImageLabeling.objects.get().state


@pytest.mark.django_db
def test_once_calibrated_a_scored_run_skips_unlikely_questions_and_records_each_skip(
    dataset, tiny_hierarchy, images, monkeypatch
):
    # The tiny hierarchy gives two observations per image: a target of 0.3 is reachable with nine decided images
    # (a zero-positive bucket's 95% bound is 1 - 0.05 ** (1 / 9) = 0.28), where 0.005 would need 600.
    monkeypatch.setattr(scores, "LEAF_REJECT_ERROR", 0.3)
    ConsensusSettings.objects.create(dataset=dataset, reject_error=0.3)
    predictions = prediction_set(dataset, images, CAR_LIKELY)
    labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, images=images[:9], prediction_set=predictions)
    for labeling in ImageLabeling.objects.order_by("id"):
        drive(labeling, present={CAR})
    assert not LabelingSkip.objects.exists()  # each bound was still above the target
    order_cache_clear()  # the calibration is refitted as decided images grow by a fifth: fit on all nine now
    labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, images=images[9:], prediction_set=predictions)
    last = ImageLabeling.objects.get(image=images[9])
    assert drive(last, present={CAR}) in (["q:vehicle", CAR], [CAR])
    skips = {s.node.node_id: s for s in LabelingSkip.objects.filter(labeling=last).select_related("node")}
    assert set(skips) == {"q:animal", PERSON}
    for skip in skips.values():
        assert skip.rule == RULE and skip.score == 0.0003 and skip.target == 0.3
        assert skip.bound < skip.target and (skip.positives, skip.observations) == (0, 9)
        assert skip.calibration_images == 9
    labels = {
        ll.concept.wnid: ll for ll in LeafLabel.objects.filter(labeling=last).select_related("concept", "via")
    }
    assert labels[PERSON].source == "skipped" and not labels[PERSON].present
    assert labels[DOG].source == "no_from_skipped" and labels[DOG].via.node_id == "q:animal"
    assert labels[CAR].present and labels[CAR].source in ("asked", "yes_from_descendant")
    # The final label is the model-inferred absence, its probability the skip's bound; a rebuild agrees.
    final = FinalLabel.objects.get(image=images[9], concept__wnid=DOG)
    assert final.present is False and final.probability == skips["q:animal"].bound
    assert final.evidence["multilabel"]["how"] == "no_from_skipped"
    person = FinalLabel.objects.get(image=images[9], concept__wnid=PERSON)
    assert person.probability == skips[PERSON].bound and person.evidence["multilabel"]["how"] == "skipped"
    final_labels_rebuild(dataset)
    rebuilt = FinalLabel.objects.get(image=images[9], concept__wnid=DOG)
    assert (rebuilt.present, rebuilt.probability) == (False, skips["q:animal"].bound)
    assert FinalLabel.objects.get(image=images[9], concept__wnid=PERSON).probability == skips[PERSON].bound


@pytest.mark.django_db
def test_the_api_refuses_an_unknown_a_foreign_or_a_scoreless_prediction_set_by_name(
    api_client, organizer, dataset, tiny_hierarchy, images
):
    client = api_client(organizer)
    other = factories.DatasetFactory()
    foreign = prediction_set(other, [factories.ImageFactory(dataset=other)], CAR_LIKELY, name="foreign")
    scoreless = PredictionSet.objects.create(
        dataset=dataset, name="boxes only", source="upload", sha256="b" * 64
    )
    for bad in (999999, foreign.pk, scoreless.pk):
        reply = client.post(
            URL.format(dataset.pk), {"hierarchy": tiny_hierarchy.pk, "prediction_set": bad}, format="json"
        )
        assert reply.status_code == 400 and "prediction_set" in reply.json(), reply.json()
    assert not ImageLabeling.objects.exists()
    mine = prediction_set(dataset, images, CAR_LIKELY)
    reply = client.post(
        URL.format(dataset.pk),
        {"hierarchy": tiny_hierarchy.pk, "images": [images[0].pk], "prediction_set": mine.pk},
        format="json",
    )
    assert reply.status_code == 201 and reply.json()["prediction_set"] == mine.pk
    (row,) = client.get(URL.format(dataset.pk)).json()["results"]
    assert row["prediction_set"] == mine.pk and row["pending"] == "q:vehicle" and row["skipped"] == []
