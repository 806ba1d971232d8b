"""Reports kept for the Statistics page (benchmark/reports.py): before the first is computed the endpoint
answers 202 and the page reloads itself; one computation of a report at a time; a report older than the
maximum age is shown (marked refreshing) while a fresh one is computed; a failed computation is named, and not
asked for again on every request; a run is idempotent and a parked one ends failed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client, TestCase
from django.utils import timezone

from benchmark import reports
from benchmark.models import DetectionSet, JobState, Report, ReportKind
from outbox.models import Message
from tests.conftest import client_for
from tests.organize.test_statistics import freeze_splits, scene

pytestmark = pytest.mark.django_db  # on-commit work runs only where a test says so: the report stays queued

KIND = ReportKind.DATASET_STATISTICS


def url(dataset, query=""):
    return f"/api/v1/datasets/{dataset.pk}/statistics{query}"


def page_of(user, dataset):
    client = Client()
    client.force_login(user)
    return client.get(f"/organize/datasets/{dataset.pk}/statistics/")


def test_before_the_first_report_the_endpoint_answers_202_and_a_second_request_joins_it(organizer, dataset):
    scene(dataset)
    api = client_for(organizer)
    first, second = api.get(url(dataset)), api.get(url(dataset))
    assert first.status_code == second.status_code == 202
    assert first.json()["state"] == "queued" and "being computed" in first.json()["detail"]
    (report,) = Report.objects.filter(dataset=dataset)
    assert (report.kind, report.state, report.params) == (
        KIND,
        "queued",
        {"split_version": None, "detection_set": None},
    )
    assert Message.objects.filter(task_name=reports.TASK, args=[report.pk]).count() == 1
    html = page_of(organizer, dataset).content.decode()
    assert '<meta http-equiv="refresh" content="3">' in html and "being computed" in html
    assert 'id="statistics-splits"' not in html


def test_once_computed_the_report_is_read_not_computed_again(organizer, dataset):
    scene(dataset)
    api = client_for(organizer)
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert api.get(url(dataset)).status_code == 202
    body = api.get(url(dataset)).json()
    assert body["refreshing"] is False and body["computed_at"]
    assert body["splits"][0]["instances"] == 4
    assert Report.objects.filter(dataset=dataset, state="done").count() == 1
    assert Report.objects.filter(dataset=dataset).count() == 1  # fresh: nothing new asked for
    html = page_of(organizer, dataset).content.decode()
    assert (
        'id="statistics-splits"' in html
        and "http-equiv" not in html
        and "Computed from the labels at" in html
    )


def test_a_report_older_than_the_maximum_age_is_shown_while_a_fresh_one_is_computed(
    organizer, dataset, settings
):
    scene(dataset)
    api = client_for(organizer)
    with TestCase.captureOnCommitCallbacks(execute=True):
        api.get(url(dataset))
    Report.objects.filter(dataset=dataset).update(finished_at=timezone.now() - timedelta(minutes=6))
    stale = api.get(url(dataset)).json()
    assert stale["refreshing"] is True and stale["splits"][0]["instances"] == 4
    assert list(Report.objects.filter(dataset=dataset).values_list("state", flat=True)) == ["queued", "done"]
    assert "a fresh report is being computed" in page_of(organizer, dataset).content.decode()
    assert Report.objects.filter(dataset=dataset).count() == 2  # the page joined the one in flight


def test_the_default_split_version_and_the_same_version_named_share_one_report(organizer, dataset):
    scene(dataset)
    freeze_splits(dataset)
    api = client_for(organizer)
    api.get(url(dataset))
    api.get(url(dataset, "?split_version=1"))
    (report,) = Report.objects.filter(dataset=dataset)
    assert report.params == {"split_version": 1, "detection_set": None}


def test_a_failed_computation_is_named_and_not_asked_again_on_every_request(organizer, dataset):
    scene(dataset)
    freeze_splits(dataset)
    DetectionSet.objects.create(dataset=dataset, name="dogs", classes=[])
    api = client_for(organizer)
    assert api.get(url(dataset, "?detection_set=dogs")).status_code == 202
    DetectionSet.objects.filter(dataset=dataset, name="dogs").delete()  # gone before a worker took it
    (report,) = Report.objects.filter(dataset=dataset)
    assert reports.report_run(report.pk).state == JobState.FAILED
    DetectionSet.objects.create(dataset=dataset, name="dogs", classes=[])
    answer = api.get(url(dataset, "?detection_set=dogs"))
    assert answer.status_code == 409 and "no detection set 'dogs' now" in answer.json()["detail"]
    assert Report.objects.filter(dataset=dataset).count() == 1


def test_a_run_is_idempotent_and_a_parked_computation_ends_failed(organizer, dataset):
    scene(dataset)
    report = reports.report_request(dataset, KIND, {"split_version": None, "detection_set": None})
    assert reports.report_run(report.pk).state == JobState.DONE
    finished = Report.objects.get(pk=report.pk).finished_at
    assert reports.report_run(report.pk).finished_at == finished  # a redelivered message changes nothing
    other = reports.report_request(dataset, KIND, {"split_version": None, "detection_set": "x"})
    message = Message.objects.get(task_name=reports.TASK, args=[other.pk])
    message.attempts = 3
    reports._report_parked(message)
    assert Report.objects.get(pk=other.pk).state == JobState.FAILED
