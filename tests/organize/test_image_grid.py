"""The organizer's image grid: the image list's filters plus stage (where an image stands in the pipelines)
and split (which split of a split version holds it); bad values are 400s naming the parameter."""

from __future__ import annotations

import pytest

from annotation.models import BoxJob, BoxJobStatus, FinalLabel
from benchmark.models import ImageSplit, SplitVersion
from consensus.models import Question, QuestionRole, QuestionState
from hierarchy.models import Hierarchy
from multilabel.models import ImageLabeling, LabelingStatus
from review.models import ReviewItem
from tests import factories

pytestmark = pytest.mark.django_db


def grid(client, dataset, query=""):
    response = client.get(f"/api/v1/datasets/{dataset.pk}/image-grid?{query}")
    return response


def names(response):
    assert response.status_code == 200, response.data
    return sorted(row["original_name"] for row in response.data["results"])


@pytest.fixture
def scene(dataset):
    """One image per stage, one finished image (a decided question, a done job, a final label) and one
    untouched image; a finished image is in no open stage."""
    concept = factories.ConceptFactory(wnid="n02084071", name="dog")
    img = {
        name: factories.ImageFactory(dataset=dataset, original_name=name)
        for name in ("verify", "multi", "box", "review", "finished", "untouched")
    }

    def question(image, state):
        Question.objects.create(
            kind="image_verify", dataset=dataset, concept=concept, image=image,
            role=QuestionRole.PRODUCTION, state=state,
        )  # fmt: skip

    question(img["verify"], QuestionState.OPEN)
    question(img["finished"], QuestionState.ACCEPTED)
    hierarchy = Hierarchy.objects.create(name="voc", version="1", fingerprint="f")
    ImageLabeling.objects.create(image=img["multi"], hierarchy=hierarchy, dataset=dataset)
    ImageLabeling.objects.create(
        image=img["finished"], hierarchy=hierarchy, dataset=dataset, status=LabelingStatus.DONE
    )
    for image, status in ((img["box"], BoxJobStatus.NEEDS_DRAW), (img["finished"], BoxJobStatus.DONE)):
        BoxJob.objects.create(
            dataset=dataset, image=image, concept=concept, state={}, max_boxes=3, max_rounds=3, status=status
        )
    for image, state in ((img["review"], "open"), (img["finished"], "decided")):
        ReviewItem.objects.create(
            kind="ambiguous", dataset=dataset, image=image, subject={"type": "t", "id": image.pk},
            subject_key=f"t:{image.pk}", state=state,
        )  # fmt: skip
    FinalLabel.objects.create(
        dataset=dataset, image=img["finished"], concept=concept, present=True, source="consensus"
    )
    return img


def test_the_stage_filter_finds_the_images_with_open_work_in_each_stage(
    api_client, organizer, dataset, scene
):
    client = api_client(organizer)
    assert len(names(grid(client, dataset))) == 6
    expected = {
        "verification": ["verify"],
        "multilabel": ["multi"],
        "boxing": ["box"],
        "review": ["review"],
        "labelled": ["finished"],
        "unstarted": ["untouched"],
    }
    for stage, wanted in expected.items():
        assert names(grid(client, dataset, f"stage={stage}")) == wanted, stage
    assert names(grid(client, dataset, "stage=labelled&concept=n02084071&name=fin")) == ["finished"]
    refused = grid(client, dataset, "stage=boxed")
    assert refused.status_code == 400 and "stage" in refused.data
    assert "verification" in str(refused.data["stage"])


def test_the_split_filter_reads_the_latest_frozen_version_or_the_one_named(api_client, organizer, dataset):
    client = api_client(organizer)
    images = [factories.ImageFactory(dataset=dataset, original_name=f"i{n}") for n in range(4)]
    refused = grid(client, dataset, "split=train")
    assert refused.status_code == 400 and "no frozen split version" in str(refused.data["split"])

    def version(number, frozen, splits):
        v = SplitVersion.objects.create(
            dataset=dataset, number=number, seed=0, ratios={}, manifest={}, frozen=frozen
        )
        ImageSplit.objects.bulk_create(
            ImageSplit(version=v, image=image, split=split)
            for image, split in zip(images, splits, strict=True)
        )

    version(1, True, ["train", "train", "val", "test"])
    version(2, False, ["train", "val", "val", "test"])  # a preview, not frozen: the default skips it
    assert names(grid(client, dataset, "split=train")) == ["i0", "i1"]
    assert names(grid(client, dataset, "split=val&split_version=2")) == ["i1", "i2"]
    assert names(grid(client, dataset, "split=test&name=i3")) == ["i3"]
    for query, field, text in [
        ("split=holdout", "split", "must be one of train, val, test"),
        ("split=train&split_version=9", "split_version", "no split version 9"),
        ("split=train&split_version=x", "split_version", "must be an id"),
        ("split_version=1", "split_version", "goes with split"),
    ]:
        response = grid(client, dataset, query)
        assert response.status_code == 400 and text in str(response.data[field]), query


def test_another_organizers_dataset_is_not_found_and_a_worker_is_refused(
    api_client, organizer, dataset, worker
):
    other = factories.user_with_roles("organizer-b", ("organizers",))
    assert grid(api_client(other), dataset).status_code == 404
    assert grid(api_client(worker), dataset).status_code == 403
