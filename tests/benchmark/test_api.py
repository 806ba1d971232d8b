"""Export jobs over the API (eager Celery) and challenge submissions: validation, the team quota, scoring,
the leaderboard, and who may do what."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from annotation.models import Box, BoxState
from benchmark.final_labels import final_labels_rebuild
from benchmark.models import Challenge, ExportJob, ImageSplit, SplitVersion, Submission, Team
from config.dbconnection import CommitWatch
from tests import factories
from tests.conftest import client_for


@pytest.fixture
def frozen(labelled):
    call_command(
        "make_splits",
        "--dataset",
        labelled["dataset"].name,
        "--freeze",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    return SplitVersion.objects.get()


def start_export(client, dataset, **body):
    return client.post(f"/api/v1/datasets/{dataset.pk}/exports/", {"format": "coco", **body}, format="json")


def test_export_job_runs_end_to_end_and_offers_the_archive(
    organizer, labelled, frozen, django_capture_on_commit_callbacks
):
    client = client_for(organizer)
    with django_capture_on_commit_callbacks(execute=True):
        response = start_export(client, labelled["dataset"], split="all", include_images=False)
    assert response.status_code == 201, response.content
    job = client.get(f"/api/v1/exports/{response.json()['id']}/").json()
    assert job["state"] == "done" and job["progress"] == 36 and job["split_version"] == 1
    assert job["download_url"].endswith(f"/api/v1/exports/{job['id']}/file")
    download = client.get(f"/api/v1/exports/{job['id']}/file")
    archive = zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content)))
    names = set(archive.namelist())
    assert {"annotations/instances_train.json", "annotations/image_info_test.json", "manifest.json"} <= names
    assert not any("groundtruth" in n for n in names)
    test_info = json.loads(archive.read("annotations/image_info_test.json"))
    assert test_info["annotations"] == [] and len(test_info["images"]) == frozen.manifest["counts"]["test"]


def test_a_finished_export_of_one_split_reports_its_progress_complete(
    organizer, labelled, frozen, django_capture_on_commit_callbacks
):
    client = client_for(organizer)
    with django_capture_on_commit_callbacks(execute=True):
        response = start_export(client, labelled["dataset"], split="train", include_images=False)
    job = client.get(f"/api/v1/exports/{response.json()['id']}/").json()
    assert job["state"] == "done"
    assert 0 < job["progress"] == job["total"] < labelled["dataset"].images.count()


def test_a_repeated_export_request_joins_the_job_in_flight(
    organizer, labelled, frozen, django_capture_on_commit_callbacks
):
    client = client_for(organizer)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        first = start_export(client, labelled["dataset"], split="train")
        second = start_export(client, labelled["dataset"], split="train")
    assert (first.status_code, second.status_code) == (201, 200)
    # One send, the job's (the requests' commit watch, config.dbconnection.CommitWatch, registers its notes too).
    sends = [c for c in callbacks if not isinstance(getattr(c, "__self__", None), CommitWatch)]
    assert first.json()["id"] == second.json()["id"] and len(sends) == 1
    assert first.json()["state"] == "queued"
    other = start_export(client, labelled["dataset"], split="val")
    assert other.status_code == 201 and ExportJob.objects.count() == 2


def test_only_the_datasets_organizers_see_its_exports(
    organizer, labelled, frozen, worker, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job_id = start_export(client_for(organizer), labelled["dataset"], include_images=False).json()["id"]
    stranger = factories.user_with_roles("other-organizer", ("organizers",))
    assert client_for(stranger).get(f"/api/v1/exports/{job_id}/").status_code == 404
    assert client_for(stranger).get(f"/api/v1/exports/{job_id}/file").status_code == 404
    assert start_export(client_for(stranger), labelled["dataset"]).status_code == 404
    assert client_for(worker).get(f"/api/v1/exports/{job_id}/").status_code == 403
    from rest_framework.test import APIClient

    assert APIClient().get(f"/api/v1/exports/{job_id}/").status_code == 401


def test_the_dataset_lists_every_earlier_export_with_who_when_and_its_download(
    organizer, labelled, frozen, django_assert_max_num_queries, django_capture_on_commit_callbacks
):
    client = client_for(organizer)
    dataset = labelled["dataset"]
    with django_capture_on_commit_callbacks(execute=True):
        first = start_export(client, dataset, split="train", include_images=False).json()
        second = start_export(client, dataset, format="voc", split="val", include_images=False).json()
    with django_capture_on_commit_callbacks(execute=False):
        queued = start_export(client, dataset, format="yolo", split="train").json()
    with django_assert_max_num_queries(8):  # no query per row
        listed = client.get(f"/api/v1/datasets/{dataset.pk}/exports/")
    assert listed.status_code == 200, listed.content
    rows = listed.json()["results"]
    assert listed.json()["count"] == 3
    assert [r["id"] for r in rows] == [queued["id"], second["id"], first["id"]]  # newest first
    assert [(r["format"], r["split"], r["state"]) for r in rows] == [
        ("yolo", "train", "queued"),
        ("voc", "val", "done"),
        ("coco", "train", "done"),
    ]
    assert {r["requested_by"] for r in rows} == {organizer.username}
    assert all(r["created_at"] for r in rows) and "manifest" not in rows[0]
    assert rows[0]["download_url"] is None
    # The earliest archive is still there to download.
    earliest = client.get(rows[2]["download_url"])
    assert earliest.status_code == 200
    names = zipfile.ZipFile(io.BytesIO(b"".join(earliest.streaming_content))).namelist()
    assert "annotations/instances_train.json" in names
    stranger = factories.user_with_roles("other-organizer", ("organizers",))
    assert client_for(stranger).get(f"/api/v1/datasets/{dataset.pk}/exports/").status_code == 404
    assert client.get(f"/api/v1/datasets/{dataset.pk}/exports/?page=x").status_code == 400


def test_a_coco_export_can_name_images_by_their_upload_names(
    organizer, labelled, frozen, django_capture_on_commit_callbacks
):
    client = client_for(organizer)
    dataset = labelled["dataset"]
    first, second = labelled["images"][:2]
    second.original_name = f"folder/{first.original_name}"  # two uploads with one name
    second.save(update_fields=["original_name"])
    refused = start_export(client, dataset, format="voc", file_names="original")
    assert refused.status_code == 400 and "coco" in refused.json()["file_names"][0]
    assert start_export(client, dataset, file_names="ids").status_code == 400
    with django_capture_on_commit_callbacks(execute=True):
        response = start_export(client, dataset, split="all", file_names="original")
    assert response.status_code == 201, response.content
    job = client.get(f"/api/v1/exports/{response.json()['id']}/").json()
    assert job["state"] == "done" and job["file_names"] == "original"
    archive = zipfile.ZipFile(io.BytesIO(b"".join(client.get(job["download_url"]).streaming_content)))
    manifest = json.loads(archive.read("manifest.json"))
    originals = dict(dataset.images.values_list("id", "original_name"))
    rows = {row["id"]: row for row in manifest["images"]}
    assert rows and all(row["original_name"] == originals[pk] for pk, row in rows.items())
    written = {}
    for split in manifest["counts"]["images"]:
        name = "instances" if split != "test" else "image_info"
        for image in json.loads(archive.read(f"annotations/{name}_{split}.json"))["images"]:
            written[image["id"]] = image["file_name"]
            assert f"images/{split}/{image['file_name']}" in archive.namelist()
    assert written == {pk: row["file_name"] for pk, row in rows.items()}
    assert written[first.pk] == first.original_name  # the first keeps the shared name
    assert written[second.pk] == first.original_name.replace(".png", f"-{second.pk}.png")
    others = set(written) - {first.pk, second.pk}
    assert all(written[pk] == originals[pk] for pk in others)
    assert manifest["file_names_renamed"] == 1
    # The same export by ids is a different job, not the one above joined.
    with django_capture_on_commit_callbacks(execute=True):
        by_id = start_export(client, dataset, split="all")
    assert by_id.status_code == 201 and by_id.json()["file_names"] == "id"


def test_a_split_export_without_any_split_version_is_refused(organizer, labelled):
    response = start_export(client_for(organizer), labelled["dataset"], split="test")
    assert response.status_code == 400 and "make splits" in response.json()["split"]


# --- challenges ---------------------------------------------------------------------------------------------


@pytest.fixture
def challenge(labelled, frozen):
    return Challenge.objects.create(
        name="det", dataset=labelled["dataset"], split_version=frozen, protocol="coco"
    )


@pytest.fixture
def team_user(challenge):
    user = factories.user_with_roles("alice", ())
    team = Team.objects.create(challenge=challenge, name="alices")
    team.members.add(user)
    return user


def hidden_boxes(challenge):
    return hidden_boxes_of(challenge.split_version)


def hidden_boxes_of(version):
    ids = ImageSplit.objects.filter(version=version, split="test").values_list("image_id", flat=True)
    return list(Box.objects.filter(image_id__in=ids, state=BoxState.ACCEPTED))


def perfect_results(challenge) -> bytes:
    return json.dumps(
        [
            {
                "image_id": b.image_id,
                "category_id": b.concept_id,
                "bbox": [b.x1, b.y1, b.x2 - b.x1, b.y2 - b.y1],
                "score": 0.9,
            }
            for b in hidden_boxes(challenge)
        ]
    ).encode()


def submit(user, challenge, data: bytes, name="results.json"):
    return client_for(user).post(
        f"/api/v1/challenges/{challenge.pk}/submissions/",
        {"file": SimpleUploadedFile(name, data)},
        format="multipart",
    )


def test_a_valid_submission_is_scored_against_the_hidden_test_labels(challenge, team_user):
    response = submit(team_user, challenge, perfect_results(challenge))
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["state"] == "scored" and body["scores"]["AP50"] == pytest.approx(1.0)
    # all 12 COCOeval stats, AR included
    assert {"AR1", "AR10", "AR100", "ARs", "ARm", "ARl"} <= set(body["scores"])
    assert body["scores"]["AR100"] == pytest.approx(1.0)
    board = client_for(team_user).get(f"/api/v1/challenges/{challenge.pk}/leaderboard").json()
    assert board[0]["team"] == "alices" and board[0]["metric"] == "AP" and board[0]["rank"] == 1


def test_a_challenge_reusing_an_old_id_and_truth_file_name_is_scored_against_its_own_labels(
    challenge, team_user
):
    """Ids come back after a database is rebuilt, and the truth file's name with them: the truth read once per
    process must still be this challenge's own hidden labels, not the earlier row's."""
    assert submit(team_user, challenge, perfect_results(challenge)).status_code == 201
    challenge.refresh_from_db()
    pk, truth_name = challenge.pk, challenge.ground_truth.name
    dataset, version = challenge.dataset, challenge.split_version
    assert truth_name
    challenge.ground_truth.delete(save=False)
    Submission.objects.filter(team__challenge=challenge).delete()
    challenge.delete()
    for box in hidden_boxes_of(version):
        box.x1, box.x2 = box.x1 + 40, box.x2 + 40  # the labels change while the old truth sits in memory
        box.save(update_fields=["x1", "x2"])
    final_labels_rebuild(dataset)
    again = Challenge.objects.create(
        pk=pk, name="det", dataset=dataset, split_version=version, protocol="coco"
    )
    team = Team.objects.create(challenge=again, name="alices")
    team.members.add(team_user)
    response = submit(team_user, again, perfect_results(again))
    # The same id and the same file name as before.
    assert Challenge.objects.get(pk=pk).ground_truth.name == truth_name
    assert response.status_code == 201, response.content
    assert response.json()["scores"]["AP50"] == pytest.approx(1.0)


def test_bad_submissions_are_refused_with_every_problem_and_do_not_count(challenge, team_user):
    box = hidden_boxes(challenge)[0]
    train_image = ImageSplit.objects.filter(version=challenge.split_version, split="train").first().image_id
    rows = [
        {"image_id": box.image_id, "category_id": box.concept_id, "bbox": [1, 1, 5, 5], "score": 0.5},
        {"image_id": train_image, "category_id": box.concept_id, "bbox": [1, 1, 5, 5], "score": 0.5},
        {"image_id": box.image_id, "category_id": box.concept_id, "bbox": [1, 1, 0, 5], "score": 0.5},
        {"image_id": box.image_id, "category_id": 424242, "bbox": [1, 1, 5, 5], "score": "high"},
    ]
    response = submit(team_user, challenge, json.dumps(rows).encode())
    assert response.status_code == 400
    problems = response.json()["problems"]
    assert {
        "where": "entry 1",
        "reason": f"unknown image_id {train_image}",
    } in problems  # train ids are unknown
    assert any(p["where"] == "entry 2" and "must be positive" in p["reason"] for p in problems)
    assert any(p["where"] == "entry 3" and "unknown category_id" in p["reason"] for p in problems)
    assert any(p["where"] == "entry 3" and "score" in p["reason"] for p in problems)
    syntax = submit(team_user, challenge, b'[{"image_id": 1,\n "bbox": ]')
    assert syntax.status_code == 400 and syntax.json()["problems"][0]["where"] == "line 2"
    assert Submission.objects.count() == 0


def test_a_team_gets_two_submissions_per_seven_days(challenge, team_user):
    good = perfect_results(challenge)
    teammate = factories.user_with_roles("bob", ())
    Team.objects.get().members.add(teammate)
    assert submit(team_user, challenge, good).status_code == 201
    assert submit(teammate, challenge, good).status_code == 201
    third = submit(team_user, challenge, good)
    assert third.status_code == 429 and "at most 2" in third.json()["detail"]
    Submission.objects.filter(pk=Submission.objects.order_by("id").first().pk).update(
        created_at=Submission.objects.first().created_at - timedelta(days=8)
    )
    assert submit(team_user, challenge, good).status_code == 201
    assert Submission.objects.count() == 3


def test_only_team_members_may_submit(challenge, worker):
    assert submit(worker, challenge, b"[]").status_code == 403


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_parallel_uploads_of_a_team_cannot_pass_the_quota_together(labelled):
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    call_command(
        "make_splits",
        "--dataset",
        labelled["dataset"].name,
        "--freeze",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    challenge = Challenge.objects.create(
        name="race", dataset=labelled["dataset"], split_version=SplitVersion.objects.get(), protocol="voc12"
    )
    user = factories.user_with_roles("racer", ())
    Team.objects.create(challenge=challenge, name="racers").members.add(user)
    data = perfect_results(challenge)
    assert submit(user, challenge, b"{").status_code == 400  # builds the hidden truth once, uncounted

    def one(_):
        try:
            return submit(user, challenge, data).status_code
        finally:
            connection.close()

    with ThreadPoolExecutor(4) as pool:
        codes = sorted(pool.map(one, range(4)))
    assert codes == [201, 201, 429, 429]
