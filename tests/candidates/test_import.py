"""URL-list imports against real HTTP servers on loopback: good rows stored once, bad rows reported by reason,
nothing fetched from refused addresses, and a re-run adds nothing."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from annotation.models import Image
from candidates import services
from candidates.models import Candidate, CandidateImport, ImportState, RowState
from outbox.models import Message, MessageState
from tests import factories
from tests.annotation.imagefiles import encode, jpeg, picture
from tests.candidates.server import endless, flaky, slow


def huge(handler, count):
    handler.send_response(200)
    handler.send_header("Content-Type", "image/jpeg")
    handler.send_header("Content-Length", "5000000")
    handler.send_header("Connection", "close")
    handler.end_headers()
    try:
        handler.wfile.write(b"\xff" * 1024)
    except (BrokenPipeError, ConnectionResetError):
        pass
    handler.close_connection = True


@pytest.fixture
def scene(site, refused_site, candidate_settings):
    """The site's endpoints and a CSV that names each once, with what each row must end as."""
    site.image("/a.jpg", jpeg(1))
    site.image("/b.png", encode(picture(2), "PNG"), "image/png")
    site.image("/a-copy.jpg", jpeg(1))  # the same bytes at another URL
    site.routes["/slow.jpg"] = slow(6.0, jpeg(3))
    site.routes["/to-private"] = (302, {"Location": "http://10.0.0.1/x.jpg"}, b"")
    site.routes["/to-other-port"] = (302, {"Location": refused_site.url("/a.jpg")}, b"")
    site.routes["/page.html"] = (200, {"Content-Type": "text/html"}, b"<html>not an image</html>")
    site.routes["/huge.jpg"] = huge
    site.routes["/endless.jpg"] = endless()
    site.image("/corrupt.jpg", b"\xff\xd8 this is not a jpeg" * 20)
    site.routes["/flaky.jpg"] = flaky(1, jpeg(4))
    refused_site.image("/a.jpg", jpeg(1))
    rows = [
        (site.url("/a.jpg"), "n02084071", "dog", RowState.STORED, ""),
        (site.url("/b.png"), "n02084071", "domestic dog", RowState.STORED, ""),
        (site.url("/a-copy.jpg"), "n02084071", "dog puppy", RowState.DUPLICATE, "same bytes as image"),
        (site.url("/slow.jpg"), "n02084071", "dog", RowState.FAILED, "timed out"),
        (site.url("/missing.jpg"), "n02084071", "dog", RowState.FAILED, "HTTP 404"),
        (site.url("/to-private"), "n02084071", "dog", RowState.FAILED, "10.0.0.1 is a private"),
        (site.url("/to-other-port"), "n02084071", "dog", RowState.FAILED, "127.0.0.1 is a loopback"),
        (refused_site.url("/a.jpg"), "n02084071", "dog", RowState.FAILED, "127.0.0.1 is a loopback"),
        (site.url("/page.html"), "n02084071", "dog", RowState.FAILED, "'text/html' is not an image"),
        (site.url("/huge.jpg"), "n02084071", "dog", RowState.FAILED, "5,000,000 bytes, more than the limit"),
        (site.url("/endless.jpg"), "n02084071", "dog", RowState.FAILED, "more than the limit of 200,000"),
        (site.url("/corrupt.jpg"), "n02084071", "dog", RowState.FAILED, "not an image file"),
        (site.url("/flaky.jpg"), "n02084071", "dog", RowState.STORED, ""),
        ("ftp://example.org/a.jpg", "n02084071", "dog", RowState.FAILED, "only http and https"),
        (site.url("/a.jpg"), "n99999999", "dog", RowState.FAILED, "unknown concept 'n99999999'"),
        ("http://169.254.169.254/latest/meta-data/", "n02084071", "dog", RowState.FAILED, "metadata address"),
        ("http://0x7f000001:1/a.jpg", "n02084071", "dog", RowState.FAILED, "loopback"),
    ]
    csv_text = "url,concept,query,source\n" + "".join(f"{u},{c},{q},search\n" for u, c, q, _, _ in rows)
    return rows, csv_text.encode()


def run_import(dataset, name, data, capture):
    with capture(execute=True):
        job = services.candidate_import_create(dataset=dataset, name=name, data=data)
    job.refresh_from_db()
    return job


def test_good_rows_are_stored_once_and_bad_rows_reported_by_reason(
    scene, dataset, dog, site, refused_site, django_capture_on_commit_callbacks
):
    rows, data = scene
    job = run_import(dataset, "list.csv", data, django_capture_on_commit_callbacks)
    assert job.state == ImportState.DONE
    settled = {row.line: row for row in job.rows.all()}
    for line, (url, _, _, state, reason) in enumerate(rows, start=2):
        assert settled[line].state == state, (url, settled[line].reason)
        assert reason in settled[line].reason, (url, settled[line].reason)
    assert (job.total, job.stored, job.duplicates, job.skipped, job.failed) == (17, 3, 1, 0, 13)
    assert dataset.images.count() == 3
    assert "after 2 attempts" in settled[5].reason  # the slow one was retried, then given up
    assert settled[14].attempts == 2  # the flaky one succeeded on its second attempt
    # the duplicate row points at the image its bytes are already stored as, and joins the pool with its query
    assert settled[4].image_id == settled[2].image_id
    pool = set(Candidate.objects.filter(dataset=dataset).values_list("image_id", "query"))
    assert pool == {
        (settled[2].image_id, "dog"),
        (settled[3].image_id, "domestic dog"),
        (settled[2].image_id, "dog puppy"),
        (settled[14].image_id, "dog"),
    }
    assert Image.objects.get(pk=settled[2].image_id).source == site.url("/a.jpg")
    # nothing ever reached the refused server, directly or through a redirect
    assert sum(refused_site.hits.values()) == 0
    assert site.hits["/a.jpg"] == 1  # listed twice (once with an unknown concept): fetched once
    assert site.hits["/huge.jpg"] == 1 and site.hits["/missing.jpg"] == 1  # permanent failures: no retry
    assert Message.objects.get(task_name=services.RUN_TASK).state == MessageState.DONE


def test_a_rerun_fetches_nothing_again_and_adds_nothing(
    scene, dataset, dog, site, django_capture_on_commit_callbacks
):
    _, data = scene
    run_import(dataset, "list.csv", data, django_capture_on_commit_callbacks)
    images, pool, hits = dataset.images.count(), Candidate.objects.count(), dict(site.hits)
    again = run_import(dataset, "list.csv", data, django_capture_on_commit_callbacks)
    assert (again.stored, again.duplicates, again.skipped, again.failed) == (0, 0, 4, 13)
    assert dataset.images.count() == images and Candidate.objects.count() == pool
    for path in ("/a.jpg", "/b.png", "/a-copy.jpg", "/flaky.jpg"):
        assert site.hits[path] == hits[path], path
    assert "URL already fetched" in again.rows.get(line=2).reason


def test_the_same_bytes_at_a_new_url_are_linked_not_stored_again(
    site, candidate_settings, dataset, dog, django_capture_on_commit_callbacks
):
    site.image("/one.jpg", jpeg(7))
    site.image("/mirror/one.jpg", jpeg(7))
    first = f"url,concept,query\n{site.url('/one.jpg')},n02084071,dog\n".encode()
    second = f"url,concept,query\n{site.url('/mirror/one.jpg')},n02084071,hound\n".encode()
    run_import(dataset, "a.csv", first, django_capture_on_commit_callbacks)
    job = run_import(dataset, "b.csv", second, django_capture_on_commit_callbacks)
    assert (job.stored, job.duplicates) == (0, 1)
    assert dataset.images.count() == 1
    assert sorted(Candidate.objects.values_list("query", flat=True)) == ["dog", "hound"]


def test_of_two_urls_with_the_same_bytes_the_earlier_line_stores_them_whichever_download_ends_first(
    site, candidate_settings, dataset, dog, django_capture_on_commit_callbacks
):
    """Downloads finish in any order (the fetch pool runs them at once): the import decides in the file's order,
    so the row an organizer listed first is the one stored (a random-order run of the suite caught the earlier
    test seeing the copy stored when the original's download ended last)."""
    # A busy answer first: the original is retried after its copy was fetched (one host: one fetch at a time).
    site.routes["/original.jpg"] = flaky(1, jpeg(8))
    site.image("/copy.jpg", jpeg(8))
    data = (
        f"url,concept,query\n{site.url('/original.jpg')},n02084071,dog\n"
        f"{site.url('/copy.jpg')},n02084071,dog puppy\n"
    ).encode()
    job = run_import(dataset, "list.csv", data, django_capture_on_commit_callbacks)
    original, copy = job.rows.get(line=2), job.rows.get(line=3)
    assert (original.state, copy.state) == (RowState.STORED, RowState.DUPLICATE)
    assert copy.image_id == original.image_id
    assert Image.objects.get(pk=original.image_id).source == site.url("/original.jpg")


def test_a_big_import_runs_in_batches_each_queueing_the_next(
    site, candidate_settings, dataset, dog, django_capture_on_commit_callbacks
):
    candidate_settings.CROWDLABEL = {**candidate_settings.CROWDLABEL, "CANDIDATE_BATCH_ROWS": 2}
    for n in range(5):
        site.image(f"/{n}.jpg", jpeg(20 + n))
    data = "url,concept\n" + "".join(f"{site.url(f'/{n}.jpg')},n02084071\n" for n in range(5))
    job = run_import(dataset, "five.csv", data.encode(), django_capture_on_commit_callbacks)
    assert (job.state, job.stored) == (ImportState.DONE, 5)
    assert Message.objects.filter(task_name=services.RUN_TASK, state=MessageState.DONE).count() == 3


def test_jsonl_rows_are_validated_one_by_one(
    candidate_settings, dataset, dog, django_capture_on_commit_callbacks
):
    data = "\n".join(
        [
            json.dumps({"url": "https://example.org/a.jpg", "concept": "n02084071", "query": 3}),
            "not json",
            json.dumps(["a list"]),
            json.dumps({"concept": "n02084071"}),
            json.dumps({"url": "s3://bucket", "concept": "n02084071"}),
        ]
    ).encode()
    job = services.candidate_import_create(dataset=dataset, name="rows.jsonl", data=data)
    reasons = list(job.rows.order_by("line").values_list("reason", flat=True))
    assert reasons == [
        "field 'query' must be a string",
        "not JSON: Expecting value",
        "not a JSON object",
        "missing url",
        "s3 URL needs a bucket and a key (s3://bucket/key)",
    ]
    job.refresh_from_db()
    assert job.state == ImportState.DONE and job.failed == 5


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("list.txt", b"url\n", "expected a .csv or .jsonl file"),
        ("list.csv", b"address,label\nx,y\n", "must name the columns url and concept"),
        ("list.csv", b"url,concept\n", "no rows"),
        ("list.csv", b"\xff\xfe\x00bad", "not UTF-8"),
    ],
)
def test_a_list_refused_as_a_whole_names_the_problem_and_records_nothing(db, dataset, name, data, reason):
    with pytest.raises(services.ImportRefused, match=reason):
        services.candidate_import_create(dataset=dataset, name=name, data=data)
    assert not CandidateImport.objects.exists()


def test_command_prints_progress_and_each_failure(
    transactional_db, site, candidate_settings, tmp_path, capsys
):
    # committed for real: the command's downloads start when its transaction commits
    dataset = factories.DatasetFactory(name="pets")
    factories.ConceptFactory(wnid="n02084071", name="dog")
    site.image("/a.jpg", jpeg(1))
    listing = tmp_path / "list.csv"
    listing.write_text(f"url,concept\n{site.url('/a.jpg')},n02084071\n{site.url('/nope.jpg')},n02084071\n")
    call_command("import_candidates", str(listing), "--dataset", dataset.name, "--wait", "30")
    out = capsys.readouterr().out
    assert f"line 3: {site.url('/nope.jpg')}: HTTP 404" in out
    assert (
        "done: 1 stored, 0 duplicates of images already in the dataset, 0 skipped (fetched before), 1 failed"
        in out
    )
    with pytest.raises(CommandError, match="no dataset named 'nope'"):
        call_command("import_candidates", str(listing), "--dataset", "nope")
    with pytest.raises(CommandError, match="cannot read"):
        call_command("import_candidates", str(tmp_path / "missing.csv"), "--dataset", dataset.name)
    with pytest.raises(CommandError, match="needs --concept"):
        call_command("import_candidates", "s3://bucket/prefix", "--dataset", dataset.name)


def test_api_starts_an_import_and_shows_its_progress_to_its_organizers_only(
    site, candidate_settings, dataset, dog, organizer, django_capture_on_commit_callbacks
):
    site.image("/a.jpg", jpeg(1))
    client = APIClient()
    client.force_authenticate(organizer)
    body = f"url,concept,query\n{site.url('/a.jpg')},n02084071,dog\nftp://x/y.jpg,n02084071,dog\n"
    from django.core.files.uploadedfile import SimpleUploadedFile

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/api/v1/datasets/{dataset.pk}/candidate-imports/",
            {"file": SimpleUploadedFile("list.csv", body.encode(), content_type="text/csv")},
            format="multipart",
        )
    assert response.status_code == 202, response.content
    job_id = response.json()["id"]
    progress = client.get(f"/api/v1/datasets/{dataset.pk}/candidate-imports/{job_id}").json()
    assert progress["state"] == "done"
    assert (progress["total"], progress["done"], progress["stored"], progress["failed"]) == (2, 2, 1, 1)
    assert progress["failures"] == [
        {"line": 3, "url": "ftp://x/y.jpg", "reason": "scheme 'ftp' is not allowed: only http and https"}
    ]
    listing = client.get(f"/api/v1/datasets/{dataset.pk}/candidate-imports").json()
    assert [row["id"] for row in listing] == [job_id]
    bad = client.post(
        f"/api/v1/datasets/{dataset.pk}/candidate-imports/",
        {"file": SimpleUploadedFile("list.txt", b"x", content_type="text/plain")},
        format="multipart",
    )
    assert bad.status_code == 400 and "expected a .csv or .jsonl file" in bad.json()["file"][0]
    other = factories.user_with_roles("org-b", ("organizers",))
    client.force_authenticate(other)
    assert client.get(f"/api/v1/datasets/{dataset.pk}/candidate-imports/{job_id}").status_code == 404
