"""Reports over a whole dataset's labels, computed in the background and kept: the Statistics page's report
(`manage.py dataset_stats`' figures) and the per-class statistics detection sets are chosen by.

Computing one reads every image, box and label of the dataset (about 5 s at 200,000 images and 1,000,000
boxes), far over what a page may take. So a page reads the newest finished `Report` for its parameters and,
when there is none or it is older than `CROWDLABEL_REPORT_MAX_AGE_SECONDS`, asks for a fresh one: a row and
an outbox message in one transaction (nothing is lost when the broker is down; one computation of the same
report at a time, a second request joins it). Meanwhile the page shows the older report with its time, or
says it is being computed. `dataset_stats` still computes synchronously."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.models import Dataset
from outbox import services as outbox

from .dataset_stats import REFERENCE_FIGURES, SplitStats, dataset_statistics, scale_bin_names
from .detection_sets import class_statistics
from .models import DetectionSet, JobState, Report, ReportKind, SplitVersion
from .services import BenchmarkError, export_source

TASK = "benchmark.tasks.report_run"
WITHHELD = ("test",)


class StatisticsChoiceError(ValueError):
    """A split version or detection set the dataset does not have; `param` names the query parameter."""

    def __init__(self, param: str, message: str):
        super().__init__(message)
        self.param = param


def choices(dataset: Dataset, split_version: str | None, detection_set: str | None):
    """The split version (by number; default: the latest frozen, else the latest) and detection set (by name;
    default none) a request names, or StatisticsChoiceError naming the parameter."""
    version = None
    if split_version not in (None, ""):
        if re.fullmatch(r"[0-9]{1,9}", str(split_version)) is None:
            raise StatisticsChoiceError(
                "split_version", f"split_version must be a version number, not {split_version!r}"
            )
        version = SplitVersion.objects.filter(dataset=dataset, number=int(split_version)).first()
        if version is None:
            raise StatisticsChoiceError(
                "split_version", f"dataset {dataset.name} has no split version {split_version}"
            )
    chosen_set = None
    if detection_set not in (None, ""):
        chosen_set = DetectionSet.objects.filter(dataset=dataset, name=detection_set).first()
        if chosen_set is None:
            raise StatisticsChoiceError(
                "detection_set", f"dataset {dataset.name} has no detection set {detection_set!r}"
            )
    return version, chosen_set


def statistics_params(
    dataset: Dataset, version: SplitVersion | None, detection_set: DetectionSet | None
) -> dict[str, Any]:
    """The report's parameters with the default split version resolved, so that the default and the same
    version named explicitly share one report (and freezing a newer version makes a new default)."""
    source = export_source(dataset, "all", version, detection_set)
    return {
        "split_version": source.version.number if source.version is not None else None,
        "detection_set": detection_set.name if detection_set is not None else None,
    }


def _split_figures(s: SplitStats) -> dict[str, Any]:
    figures = s.as_dict()
    images_with_counts = max(sum(s.classes_per_image.values()), 1)
    top = max(s.classes_per_image, default=0)
    figures["classes_per_image"] = [
        {
            "classes": k,
            "images": s.classes_per_image[k],
            "share": round(s.classes_per_image[k] / images_with_counts, 4),
        }
        for k in range(top + 1)
    ]
    total = max(s.instances, 1)
    figures["scale_histogram"] = [
        {"bin": name, "instances": n, "share": round(n / total, 4)}
        for name, n in zip(scale_bin_names(), s.scale_bins, strict=True)
    ]
    figures["per_class"] = [
        {"name": name, "instances": n, "images": s.images_per_class[name]}
        for name, n in sorted(s.instances_per_class.items(), key=lambda item: (-item[1], item[0]))
    ]
    return figures


def dataset_report(
    dataset: Dataset, version: SplitVersion | None = None, detection_set: DetectionSet | None = None
) -> dict[str, Any]:
    """The statistics report's figures, computed now: per split (labels withheld for the test split) and the
    comparison rows with their sources. What the pickers offer is read per request (`picker_choices`)."""
    source = export_source(dataset, "all", version, detection_set)
    splits = dataset_statistics(source, WITHHELD)
    return {
        "dataset": dataset.pk,
        "version": source.dataset_version,
        "split_version": source.version.number if source.version is not None else None,
        "detection_set": detection_set.name if detection_set is not None else None,
        "withheld": [{"split": s.split, "images": s.images} for s in splits if s.split in WITHHELD],
        "splits": [_split_figures(s) for s in splits if s.split not in WITHHELD],
        "references": [dict(ref) for ref in REFERENCE_FIGURES],
    }


def picker_choices(dataset: Dataset) -> dict[str, list]:
    return {
        "split_versions": list(
            SplitVersion.objects.filter(dataset=dataset).order_by("-number").values_list("number", flat=True)
        ),
        "detection_sets": list(
            DetectionSet.objects.filter(dataset=dataset).order_by("name").values_list("name", flat=True)
        ),
    }


def _compute_dataset_statistics(dataset: Dataset, params: dict[str, Any]) -> dict[str, Any]:
    version = None
    if params.get("split_version") is not None:
        version = SplitVersion.objects.filter(dataset=dataset, number=params["split_version"]).first()
        if version is None:
            raise BenchmarkError(f"dataset {dataset.name} has no split version {params['split_version']} now")
    chosen = None
    if params.get("detection_set"):
        chosen = DetectionSet.objects.filter(dataset=dataset, name=params["detection_set"]).first()
        if chosen is None:
            raise BenchmarkError(
                f"dataset {dataset.name} has no detection set {params['detection_set']!r} now"
            )
    return dataset_report(dataset, version, chosen)


def _compute_class_statistics(dataset: Dataset, params: dict[str, Any]) -> dict[str, Any]:
    return {"classes": class_statistics(dataset)}


COMPUTE: dict[str, Callable[[Dataset, dict[str, Any]], dict[str, Any]]] = {
    ReportKind.DATASET_STATISTICS: _compute_dataset_statistics,
    ReportKind.CLASS_STATISTICS: _compute_class_statistics,
}


def report_key(params: dict[str, Any]) -> str:
    return ";".join(f"{k}={params[k]}" for k in sorted(params))


def max_age() -> timedelta:
    return timedelta(seconds=settings.CROWDLABEL["REPORT_MAX_AGE_SECONDS"])


@dataclass(frozen=True)
class ReportView:
    """What a page shows: the newest finished report (None before the first), and the one being computed
    (None when the finished one is fresh)."""

    done: Report | None
    pending: Report | None
    failed: Report | None = None  # the newest computation, when it failed (after `done`, none pending)

    @property
    def refreshing(self) -> bool:
        return self.pending is not None


def _latest(dataset: Dataset, kind: str, key: str) -> ReportView:
    """The newest finished, pending and failed reports of the key in one query (at most a few rows a key
    keeps: newest first, stopping at the first finished one)."""
    done = pending = failed = None
    for report in Report.objects.filter(dataset=dataset, kind=kind, key=key).order_by("-id")[:20]:
        if report.state == JobState.DONE:
            done = report
            break
        if report.state in (JobState.QUEUED, JobState.RUNNING):
            pending = pending or report
        elif failed is None and pending is None:
            failed = report
    return ReportView(done, pending, failed)


def report_request(dataset: Dataset, kind: str, params: dict[str, Any], actor=None) -> Report:
    """Ask for a fresh computation (a row and its outbox message in one transaction); the one in flight
    when there is one."""
    key = report_key(params)
    try:
        with transaction.atomic():
            report = Report.objects.create(
                dataset=dataset, kind=kind, key=key, params=params, requested_by=actor
            )
            outbox.message_enqueue(TASK, (report.pk,), dataset_id=dataset.pk)
            return report
    except IntegrityError:
        pending = Report.objects.filter(
            dataset=dataset, kind=kind, key=key, state__in=[JobState.QUEUED, JobState.RUNNING]
        ).first()
        if pending is None:  # it finished between our insert and this read: ask again
            return report_request(dataset, kind, params, actor)
        return pending


def report_current(dataset: Dataset, kind: str, params: dict[str, Any], actor=None) -> ReportView:
    """The newest finished report and, when it is missing or older than the maximum age, a fresh computation
    asked for (or joined). Without a broker the computation runs when the request commits, so the answer may
    already hold it."""
    key = report_key(params)
    view = _latest(dataset, kind, key)
    oldest_fresh = timezone.now() - max_age()
    stale = view.done is None or view.done.finished_at < oldest_fresh
    failed_lately = view.failed is not None and view.failed.finished_at >= oldest_fresh
    if view.pending is None and stale and not failed_lately:
        report_request(dataset, kind, params, actor)
        view = _latest(dataset, kind, key)
    return view


def report_run(report_id: int) -> Report:
    """Compute a queued report. Idempotent: a finished report is left alone; one whose worker died while
    running is computed again."""
    with transaction.atomic():
        report = (
            Report.objects.select_for_update(of=("self",), no_key=True)
            .select_related("dataset")
            .get(pk=report_id)
        )
        if report.state in (JobState.DONE, JobState.FAILED):
            return report
        report.state = JobState.RUNNING
        report.started_at = timezone.now()
        report.save(update_fields=["state", "started_at"])
    try:
        body = COMPUTE[report.kind](report.dataset, report.params)
    except BenchmarkError as exc:
        Report.objects.filter(pk=report_id).update(
            state=JobState.FAILED, error=str(exc), finished_at=timezone.now()
        )
    else:
        Report.objects.filter(pk=report_id).update(state=JobState.DONE, body=body, finished_at=timezone.now())
    report.refresh_from_db()
    return report


@outbox.on_park(TASK)
def _report_parked(message) -> None:
    """A report whose runs all failed ends failed, so the next request asks for a fresh one."""
    Report.objects.filter(pk=message.args[0], state__in=[JobState.QUEUED, JobState.RUNNING]).update(
        state=JobState.FAILED,
        error=f"the computation failed {message.attempts} times",
        finished_at=timezone.now(),
    )
