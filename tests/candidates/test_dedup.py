"""Near-duplicate removal for candidate pools: resized and recompressed copies are found, different images are
not merged, the kept copy is the one with the most pixels (until the group has been asked about), splits see
one group, and verification takes each group once; per-query precision once verdicts are in."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from annotation.final_labels import LabelVerdict, final_labels_record
from annotation.models import FinalLabelSource, Image
from benchmark.selectors import near_duplicate_groups
from candidates import services
from candidates.models import Candidate, RowState
from candidates.selectors import pool_images, query_precision
from consensus.models import Question
from consensus.verification import verification_queue
from tests import factories
from tests.annotation.imagefiles import encode, picture


def copy(seed: int, size: tuple[int, int], quality: int = 90) -> bytes:
    return encode(picture(seed, size), "JPEG", quality=quality)


def import_rows(dataset, site, rows, capture):
    """rows: (path, bytes, query); serves each and imports them in that order, one import per row."""
    jobs = []
    for path, data, query in rows:
        site.image(path, data)
        body = f"url,concept,query\n{site.url(path)},n02084071,{query}\n".encode()
        with capture(execute=True):
            jobs.append(services.candidate_import_create(dataset=dataset, name="l.csv", data=body))
    return [job.rows.get() for job in jobs]


def image_of(row) -> Image:
    row.refresh_from_db()
    return Image.objects.get(pk=row.image_id)


def test_a_higher_resolution_later_copy_becomes_the_kept_copy(
    site, candidate_settings, dataset, dog, django_capture_on_commit_callbacks
):
    small, big, recompressed, other = import_rows(
        dataset,
        site,
        [
            ("/small.jpg", copy(30, (100, 75)), "dog"),
            ("/big.jpg", copy(30, (400, 300)), "dog photo"),
            ("/recompressed.jpg", copy(30, (200, 150), quality=35), "puppy"),
            ("/other.jpg", copy(31, (400, 300)), "dog photo"),
        ],
        django_capture_on_commit_callbacks,
    )
    assert all(row.state == RowState.STORED for row in (small, big, recompressed, other))
    small, big, recompressed, other = map(image_of, (small, big, recompressed, other))
    assert big.near_duplicate_of_id is None
    assert small.near_duplicate_of_id == big.pk  # the earlier, smaller copy now points at the bigger one
    assert recompressed.near_duplicate_of_id == big.pk  # the group is kept flat
    assert other.near_duplicate_of_id is None  # a different picture is never merged
    # splits group by these links: the three copies are one group, the other picture on its own
    groups = near_duplicate_groups(dataset)
    assert groups[small.pk] == groups[recompressed.pk] == groups.get(big.pk, big.pk) == big.pk
    assert other.pk not in groups
    # verification asks about each group once, through its kept copy
    assert [i.pk for i in pool_images(dataset, dog)] == [big.pk, other.pk]
    plan = verification_queue(dataset=dataset, concept=dog)
    assert plan.from_pool and plan.created == 2
    assert set(Question.objects.values_list("image_id", flat=True)) == {big.pk, other.pk}


def test_once_a_group_has_a_task_its_kept_copy_stays(
    site, candidate_settings, dataset, dog, django_capture_on_commit_callbacks
):
    (small,) = import_rows(
        dataset, site, [("/small.jpg", copy(40, (100, 75)), "dog")], django_capture_on_commit_callbacks
    )
    factories.TaskFactory(dataset=dataset, image=image_of(small), concept=dog)
    (big,) = import_rows(
        dataset, site, [("/big.jpg", copy(40, (400, 300)), "dog")], django_capture_on_commit_callbacks
    )
    small, big = image_of(small), image_of(big)
    assert small.near_duplicate_of_id is None
    assert big.near_duplicate_of_id == small.pk
    assert "near-duplicate of image" in Candidate.objects.get(image=big).row.reason


def test_verification_without_a_pool_still_takes_every_image(db, dataset, dog):
    images = [factories.ImageFactory(dataset=dataset) for _ in range(3)]
    plan = verification_queue(dataset=dataset, concept=dog)
    assert not plan.from_pool and plan.created == len(images)


def test_per_query_precision_counts_verdicts_of_kept_copies(
    site, candidate_settings, dataset, dog, organizer, django_capture_on_commit_callbacks, capsys
):
    rows = import_rows(
        dataset,
        site,
        [
            ("/1.jpg", copy(50, (200, 150)), "dog"),
            ("/2.jpg", copy(51, (200, 150)), "dog"),
            ("/3.jpg", copy(52, (200, 150)), "hot dog"),
            ("/4.jpg", copy(50, (400, 300)), "hot dog"),  # a bigger copy of /1.jpg: judged through it
            ("/5.jpg", copy(53, (200, 150)), "dog"),  # not decided yet
        ],
        django_capture_on_commit_callbacks,
    )
    one, two, three, four, _ = map(image_of, rows)
    assert one.near_duplicate_of_id == four.pk
    verdicts = [(four, True), (two, True), (three, False)]
    final_labels_record(
        dataset_id=dataset.pk,
        source=FinalLabelSource.CONSENSUS,
        verdicts=[LabelVerdict(image_id=i.pk, concept_id=dog.pk, present=p) for i, p in verdicts],
    )
    report = {row["query"]: row for row in query_precision(dataset, dog)}
    assert report["dog"] == {"query": "dog", "found": 3, "decided": 2, "present": 2, "precision": 1.0}
    assert report["hot dog"] == {"query": "hot dog", "found": 2, "decided": 2, "present": 1, "precision": 0.5}
    client = APIClient()
    client.force_authenticate(organizer)
    response = client.get(f"/api/v1/datasets/{dataset.pk}/candidates/{dog.wnid}/precision")
    assert response.status_code == 200 and response.json() == [report["dog"], report["hot dog"]]
    call_command("query_precision", "--dataset", dataset.name, "--concept", dog.wnid)
    out = capsys.readouterr().out
    assert "100.0%        2/2            3  dog" in out and "50.0%        1/2            2  hot dog" in out


@pytest.mark.parametrize("quality", [30, 60])
def test_recompressed_copies_are_found_at_any_quality(
    site, candidate_settings, dataset, dog, django_capture_on_commit_callbacks, quality
):
    first, second = import_rows(
        dataset,
        site,
        [("/a.jpg", copy(60, (300, 200)), "dog"), ("/b.jpg", copy(60, (300, 200), quality=quality), "dog")],
        django_capture_on_commit_callbacks,
    )
    assert image_of(second).near_duplicate_of_id == image_of(first).pk


def test_copies_within_one_import_keep_the_biggest_and_exact_repeats_link(
    site, candidate_settings, dataset, dog, django_capture_on_commit_callbacks
):
    files = {
        "/small.jpg": copy(70, (100, 75)),
        "/big.jpg": copy(70, (500, 375)),
        "/mid.jpg": copy(70, (250, 187), quality=50),
        "/again.jpg": copy(70, (100, 75)),  # the same bytes as /small.jpg
        "/else.jpg": copy(71, (300, 200)),
    }
    for path, data in files.items():
        site.image(path, data)
    body = "url,concept,query\n" + "".join(f"{site.url(p)},n02084071,dog\n" for p in files)
    with django_capture_on_commit_callbacks(execute=True):
        job = services.candidate_import_create(dataset=dataset, name="l.csv", data=body.encode())
    job.refresh_from_db()
    assert (job.stored, job.duplicates, job.failed) == (4, 1, 0)
    rows = {row.url.rsplit("/", 1)[1]: row for row in job.rows.all()}
    assert rows["again.jpg"].image_id == rows["small.jpg"].image_id
    big = Image.objects.get(pk=rows["big.jpg"].image_id)
    assert big.near_duplicate_of_id is None
    for name in ("small.jpg", "mid.jpg"):
        assert Image.objects.get(pk=rows[name].image_id).near_duplicate_of_id == big.pk
    assert Image.objects.get(pk=rows["else.jpg"].image_id).near_duplicate_of_id is None
    assert sorted(i.pk for i in pool_images(dataset, dog)) == sorted([big.pk, rows["else.jpg"].image_id])
