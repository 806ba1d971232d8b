"""The organizer's image grid: the dataset's images with the image list's filters (name, near-duplicate, class)
plus where each image stands in the pipelines (`stage`) and which split of a split version holds it (`split`),
paginated, in a fixed number of queries (each filter is one EXISTS subquery, never a query per image)."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q, QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated

from annotation.image_filters import IMAGE_FILTER_PARAMETERS, images_filtered
from annotation.models import BoxJob, BoxJobStatus, Dataset, FinalLabel, Image
from annotation.serializers import ImageSerializer
from benchmark.models import ImageSplit, SplitName, SplitVersion
from config.pagination import StrictPageNumberPagination
from config.queryparams import query_id
from config.roles import IsOrganizer
from consensus.models import Question, QuestionKind, QuestionState
from multilabel.models import ImageLabeling, LabelingStatus
from review.models import OPEN_STATES, ReviewItem

from .scoping import organizer_dataset

_IMAGE = OuterRef("pk")


def _stage_conditions() -> dict[str, Q | Exists]:
    open_questions = (QuestionState.WAITING, QuestionState.OPEN)
    open_jobs = (BoxJobStatus.NEEDS_DRAW, BoxJobStatus.AWAITING_QUALITY, BoxJobStatus.AWAITING_COVERAGE)
    in_review = Q(image=_IMAGE)  # the image the reviewer looks at (a pair's, an ambiguous item's)
    # NOT EXISTS ... AND NOT EXISTS ... (not NOT (EXISTS OR EXISTS)): PostgreSQL plans each as an anti-join.
    unstarted = (
        ~Exists(Question.objects.filter(image=_IMAGE))
        & ~Exists(ImageLabeling.objects.filter(image=_IMAGE))
        & ~Exists(BoxJob.objects.filter(image=_IMAGE))
        & ~Exists(ReviewItem.objects.filter(in_review))
        & ~Exists(FinalLabel.objects.filter(image=_IMAGE))
    )
    return {
        "unstarted": unstarted,
        "verification": Exists(
            Question.objects.filter(image=_IMAGE, kind=QuestionKind.IMAGE_VERIFY, state__in=open_questions)
        ),
        "multilabel": Exists(ImageLabeling.objects.filter(image=_IMAGE, status=LabelingStatus.RUNNING)),
        "boxing": Exists(BoxJob.objects.filter(image=_IMAGE, status__in=open_jobs)),
        "review": Exists(ReviewItem.objects.filter(in_review, state__in=OPEN_STATES)),
        "labelled": Exists(FinalLabel.objects.filter(image=_IMAGE)),
    }


STAGES = {
    "unstarted": "nothing yet: no question, multi-labelling, box job, review item or final label",
    "verification": "a candidate verification question still collecting votes",
    "multilabel": "multi-label questioning (Algorithm 1) still running",
    "boxing": "a box job still drawing or checking boxes",
    "review": "an open review item",
    "labelled": "at least one final label",
}


def _split_version(dataset: Dataset, raw: str | None) -> SplitVersion:
    versions = SplitVersion.objects.filter(dataset=dataset)
    if raw in (None, ""):
        latest = versions.filter(frozen=True).order_by("-number").first()
        if latest is None:
            raise ValidationError(
                {"split": "the dataset has no frozen split version yet: freeze one on the Benchmark page"}
            )
        return latest
    number = query_id({"split_version": raw}, "split_version")
    found = versions.filter(number=number).first()
    if found is None:
        raise ValidationError({"split_version": f"the dataset has no split version {number}"})
    return found


def images_in_grid(dataset: Dataset, params) -> QuerySet:
    images = images_filtered(Image.objects.filter(dataset=dataset).order_by("id"), params)
    stage = params.get("stage")
    if stage:
        if stage not in STAGES:
            raise ValidationError({"stage": f"must be one of {', '.join(STAGES)}"})
        images = images.filter(_stage_conditions()[stage])
    split = params.get("split")
    if split:
        if split not in SplitName.values:
            raise ValidationError({"split": f"must be one of {', '.join(SplitName.values)}"})
        version = _split_version(dataset, params.get("split_version"))
        images = images.filter(Exists(ImageSplit.objects.filter(version=version, split=split, image=_IMAGE)))
    elif params.get("split_version") not in (None, ""):
        raise ValidationError({"split_version": "goes with split (train, val or test)"})
    return images


class DatasetImageGridView(generics.ListAPIView):
    """The dataset's images for the organizer's grid, filtered by name, near-duplicate flag, class, stage and
    split (paginated)."""

    permission_classes = [IsAuthenticated, IsOrganizer]
    serializer_class = ImageSerializer
    pagination_class = StrictPageNumberPagination

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation runs without a user
            return Image.objects.none()
        dataset = organizer_dataset(self.request.user, self.kwargs["dataset_id"])
        return images_in_grid(dataset, self.request.query_params)

    @extend_schema(
        parameters=[
            *IMAGE_FILTER_PARAMETERS,
            OpenApiParameter(
                "stage",
                str,
                enum=list(STAGES),
                description="Where the image stands: "
                + "; ".join(f"{key}: {text}" for key, text in STAGES.items())
                + ".",
            ),
            OpenApiParameter("split", str, enum=SplitName.values, description="Only images in this split."),
            OpenApiParameter(
                "split_version",
                int,
                description="The split version `split` reads (its number); default the latest frozen one.",
            ),
        ]
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)
