"""Image ingestion through the service and `POST /api/v1/datasets/{id}/images/`: every file is judged on its
own, good ones are stored whole, bad ones are named with their reason and leave nothing behind."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image as PILImage
from rest_framework.test import APIClient

from annotation.imagerefs import image_ref
from annotation.ingest import IngestItem, images_ingest, item_read
from annotation.models import Image
from tests import factories
from tests.annotation import imagefiles

pytestmark = pytest.mark.django_db


def ingest(dataset, *files: tuple[str, bytes]):
    return images_ingest(dataset=dataset, items=(IngestItem(name=n, data=d) for n, d in files))


def reasons(report) -> dict[str, str]:
    return dict(report.rejected)


def media_files(settings) -> list[Path]:
    root = Path(settings.MEDIA_ROOT)
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def limits(settings, **changes):
    settings.CROWDLABEL = {**settings.CROWDLABEL, **changes}


# --- the service -----------------------------------------------------------------------------------------


def test_good_batch_is_stored_with_dimensions_hashes_and_files(dataset, settings):
    report = ingest(dataset, ("a.jpg", imagefiles.jpeg(1)), ("b.jpg", imagefiles.jpeg(2, (100, 80))))
    assert report.rejected == [] and report.near_duplicates == []
    assert [i.original_name for i in report.stored] == ["a.jpg", "b.jpg"]
    b = Image.objects.get(original_name="b.jpg")
    assert (b.width, b.height) == (100, 80)
    assert len(b.sha256) == 64 and len(b.phash) == 16
    with b.file.open("rb") as stored:
        assert PILImage.open(stored).size == (100, 80)
    assert len(media_files(settings)) == 2


def test_decompression_bomb_is_refused_without_a_row_or_file(dataset, settings):
    report = ingest(dataset, ("bomb.png", imagefiles.bomb_png()))
    assert "decompression bomb" in reasons(report)["bomb.png"]
    assert not Image.objects.exists() and media_files(settings) == []


def test_image_over_the_configured_pixel_limit_is_refused(dataset, settings):
    limits(settings, MAX_IMAGE_PIXELS=1_000_000)
    report = ingest(dataset, ("big.png", imagefiles.bomb_png(2000, 1000)))
    assert "2000x1000" in reasons(report)["big.png"]
    assert not Image.objects.exists()


def test_truncated_jpeg_is_refused_as_truncated(dataset):
    report = ingest(dataset, ("half.jpg", imagefiles.truncated_jpeg()))
    assert "truncated" in reasons(report)["half.jpg"]
    assert not Image.objects.exists()


def test_text_file_named_jpg_is_refused_as_not_an_image(dataset):
    report = ingest(dataset, ("notes.jpg", imagefiles.TEXT))
    assert "not an image" in reasons(report)["notes.jpg"]
    assert not Image.objects.exists()


def test_file_over_the_byte_limit_is_refused_with_both_sizes(dataset, settings):
    limits(settings, MAX_IMAGE_BYTES=2_000)
    data = imagefiles.jpeg(1)
    assert len(data) > 2_000
    report = ingest(dataset, ("large.jpg", data))
    assert reasons(report)["large.jpg"] == f"the file is {len(data):,} bytes, over the limit of 2,000 bytes"
    assert not Image.objects.exists()


def test_item_read_never_reads_more_than_the_limit_plus_one_byte(settings):
    limits(settings, MAX_IMAGE_BYTES=1_000)
    stream = io.BytesIO(b"x" * 50_000)
    item = item_read("huge.bin", stream, size=50_000)
    assert len(item.data) == 1_001 and stream.tell() == 1_001
    assert item.size == 50_000


def test_exact_duplicate_is_not_stored_twice_and_names_the_image_already_stored(dataset):
    data = imagefiles.jpeg(5)
    first = ingest(dataset, ("first.jpg", data)).stored[0]
    report = ingest(dataset, ("again.jpg", data))
    assert report.stored == [] and report.rejected == []
    assert report.already_stored == [("again.jpg", first.pk)] and report.nothing_new
    assert report.as_dict()["stored"] == [
        {"id": first.pk, "ref": image_ref(first.pk), "name": "again.jpg", "already_stored": True}
    ]
    assert Image.objects.count() == 1


def test_exact_duplicate_within_one_batch_is_stored_once(dataset, settings):
    data = imagefiles.jpeg(5)
    report = ingest(dataset, ("one.jpg", data), ("two.jpg", data))
    assert [i.original_name for i in report.stored] == ["one.jpg"]
    assert report.already_stored == [("two.jpg", report.stored[0].pk)]
    assert len(media_files(settings)) == 1


def test_the_same_file_may_enter_two_different_datasets(dataset, organizer):
    data = imagefiles.jpeg(5)
    other = factories.DatasetFactory(organizers=[organizer])
    assert len(ingest(dataset, ("a.jpg", data)).stored) == 1
    assert len(ingest(other, ("a.jpg", data)).stored) == 1


def test_near_duplicate_is_stored_and_flagged_with_the_image_it_resembles(dataset):
    original = ingest(dataset, ("cat.jpg", imagefiles.jpeg(9))).stored[0]
    report = ingest(dataset, ("cat-small.jpg", imagefiles.near_copy(9)), ("dog.jpg", imagefiles.jpeg(10)))
    copy = Image.objects.get(original_name="cat-small.jpg")
    assert copy.near_duplicate_of_id == original.pk
    assert report.near_duplicates == [copy]
    assert Image.objects.get(original_name="dog.jpg").near_duplicate_of_id is None


def test_near_duplicate_distance_threshold_comes_from_settings(dataset, settings):
    limits(settings, NEAR_DUPLICATE_DISTANCE=-1)  # nothing is close enough
    ingest(dataset, ("cat.jpg", imagefiles.jpeg(9)))
    report = ingest(dataset, ("cat-small.jpg", imagefiles.near_copy(9)))
    assert report.near_duplicates == [] and len(report.stored) == 1


def test_exif_rotated_jpeg_is_stored_upright(dataset):
    image = ingest(dataset, ("rotated.jpg", imagefiles.exif_rotated_jpeg(6))).stored[0]
    image.refresh_from_db()
    assert (image.width, image.height) == (20, 40)
    with image.file.open("rb") as stored:
        decoded = PILImage.open(stored)
        decoded.load()
    assert decoded.size == (20, 40)
    # Orientation 6 means "turn 90° clockwise to view": the left (red) half ends up on top.
    red, _, blue = decoded.convert("RGB").getpixel((10, 5))
    assert red > 150 and blue < 100


def test_mixed_batch_keeps_the_good_files_and_names_each_bad_one(dataset, settings):
    limits(settings, MAX_IMAGE_BYTES=60_000)
    kept = ingest(dataset, ("kept.jpg", imagefiles.jpeg(1))).stored[0]
    report = ingest(
        dataset,
        ("good-1.jpg", imagefiles.jpeg(2)),
        ("bomb.png", imagefiles.bomb_png()),
        ("half.jpg", imagefiles.truncated_jpeg()),
        ("good-2.png", imagefiles.encode(imagefiles.picture(3), "PNG")),
        ("readme.jpg", imagefiles.TEXT),
        ("repeat.jpg", imagefiles.jpeg(1)),
        ("empty.jpg", b""),
        ("huge.png", imagefiles.encode(imagefiles.picture(4, (400, 300)), "PNG")),
        ("rotated.jpg", imagefiles.exif_rotated_jpeg()),
    )
    assert [i.original_name for i in report.stored] == ["good-1.jpg", "good-2.png", "rotated.jpg"]
    why = reasons(report)
    assert sorted(why) == ["bomb.png", "empty.jpg", "half.jpg", "huge.png", "readme.jpg"]
    assert report.already_stored == [("repeat.jpg", kept.pk)]
    assert "decompression bomb" in why["bomb.png"]
    assert "truncated" in why["half.jpg"]
    assert "not an image" in why["readme.jpg"]
    assert "empty" in why["empty.jpg"]
    assert "over the limit of 60,000 bytes" in why["huge.png"]
    # Nothing half-written: exactly one row and one stored file per kept image.
    assert Image.objects.count() == 4
    assert sorted(p.name for p in media_files(settings)) == sorted(
        Path(i.file.name).name for i in Image.objects.all()
    )


def test_progress_callback_is_called_once_per_file_good_or_bad(dataset):
    seen: list[str] = []
    images_ingest(
        dataset=dataset,
        items=iter([IngestItem("a.jpg", imagefiles.jpeg(1)), IngestItem("b.jpg", b"nope")]),
        progress=seen.append,
    )
    assert seen == ["a.jpg", "b.jpg"]


# --- the API ---------------------------------------------------------------------------------------------


def upload(client, dataset_id, *files: tuple[str, bytes], **extra):
    return client.post(
        f"/api/v1/datasets/{dataset_id}/images/",
        {"files": [SimpleUploadedFile(name, data) for name, data in files], **extra},
        format="multipart",
    )


def test_api_upload_of_many_files_stores_good_ones_and_reports_the_rest(organizer, dataset, api_client):
    response = upload(
        api_client(organizer),
        dataset.pk,
        ("a.jpg", imagefiles.jpeg(1)),
        ("b.jpg", imagefiles.jpeg(2)),
        ("c.jpg", imagefiles.near_copy(1)),
        ("notes.jpg", imagefiles.TEXT),
        source="https://example.org/search?q=cat",
    )
    assert response.status_code == 201
    body = response.json()
    assert [s["name"] for s in body["stored"]] == ["a.jpg", "b.jpg", "c.jpg"]
    a_id = body["stored"][0]["id"]
    assert body["near_duplicates"] == [
        {
            "id": body["stored"][2]["id"],
            "ref": body["stored"][2]["ref"],
            "name": "c.jpg",
            "near_duplicate_of": a_id,
        }
    ]
    assert [r["name"] for r in body["rejected"]] == ["notes.jpg"]
    assert "not an image" in body["rejected"][0]["reason"]
    assert set(dataset.images.values_list("source", flat=True)) == {"https://example.org/search?q=cat"}


def test_api_upload_is_400_when_no_file_was_stored(organizer, dataset, api_client, settings):
    response = upload(
        api_client(organizer), dataset.pk, ("bomb.png", imagefiles.bomb_png()), ("x.jpg", imagefiles.TEXT)
    )
    assert response.status_code == 400
    assert [r["name"] for r in response.json()["rejected"]] == ["bomb.png", "x.jpg"]
    assert not Image.objects.exists() and media_files(settings) == []


def test_api_upload_without_files_is_400(organizer, dataset, api_client):
    response = api_client(organizer).post(f"/api/v1/datasets/{dataset.pk}/images/", {}, format="multipart")
    assert response.status_code == 400
    assert "files" in response.json()


def test_api_upload_over_the_byte_limit_is_refused_per_file(organizer, dataset, api_client, settings):
    limits(settings, MAX_IMAGE_BYTES=2_000)
    big = imagefiles.jpeg(1)
    response = upload(api_client(organizer), dataset.pk, ("big.jpg", big))
    assert response.status_code == 400
    assert f"{len(big):,} bytes" in response.json()["rejected"][0]["reason"]


def test_api_upload_to_another_organizers_dataset_is_404(dataset, api_client):
    stranger = factories.user_with_roles("stranger", ("organizers",))
    response = upload(api_client(stranger), dataset.pk, ("a.jpg", imagefiles.jpeg(1)))
    assert response.status_code == 404  # scoped out of its queryset: its existence is not revealed
    assert not Image.objects.exists()


def test_api_upload_is_refused_to_workers_and_anonymous_callers(worker, dataset, api_client):
    assert upload(api_client(worker), dataset.pk, ("a.jpg", imagefiles.jpeg(1))).status_code == 403
    assert upload(APIClient(), dataset.pk, ("a.jpg", imagefiles.jpeg(1))).status_code in (401, 403)
    assert not Image.objects.exists()
