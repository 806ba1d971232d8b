"""Upload denial of service (issue 18, item 4): the header is checked before any pixel is decoded (format
allowed for the dataset, dimensions, frame and page counts, pixels x frames, pixels per byte), a repeated file
is refused before decoding, a request decodes a bounded number of pixels, animations and multi-page files
keep their first frame as PNG, and no byte string makes the validator raise anything but ImageRejected."""

from __future__ import annotations

import functools
import io
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from PIL import Image as PILImage
from PIL import ImageFile

from annotation.imagecheck import ImageRejected, check_image, read_header
from annotation.models import Dataset, Image
from tests.annotation import imagefiles
from tests.conftest import client_for

LIMITS = {
    "max_bytes": 5_000_000,
    "max_pixels": 40_000_000,
    "max_frames": 300,
    "max_frame_pixels": 160_000_000,
}


def animated_gif(frames: int, size=(64, 48), screen: tuple[int, int] | None = None) -> bytes:
    """An animated GIF; `screen` rewrites the logical screen size, which is what Pillow reports and what a
    browser allocates for every frame (the 8 KB, 300-frame, 40-megapixel-per-frame attack)."""
    colours = [(255, 0, 0), (0, 255, 0), (0, 0, 255)]
    images = [PILImage.new("RGB", size, colours[k % 3]) for k in range(frames)]
    buffer = io.BytesIO()
    images[0].save(buffer, "GIF", save_all=True, append_images=images[1:], duration=40, loop=0)
    data = bytearray(buffer.getvalue())
    if screen is not None:
        data[6:10] = struct.pack("<HH", *screen)
    return bytes(data)


def multipage_tiff(pages: int, size=(64, 48)) -> bytes:
    images = [PILImage.new("RGB", size, (40 * k, 80, 120)) for k in range(pages)]
    buffer = io.BytesIO()
    images[0].save(buffer, "TIFF", save_all=True, append_images=images[1:])
    return buffer.getvalue()


@functools.cache
def lossless_webp_bomb() -> bytes:
    """A few hundred bytes that decode to 4.4 million pixels (a larger one is the same attack, only slower
    to make here)."""
    buffer = io.BytesIO()
    PILImage.new("RGB", (2100, 2100)).save(buffer, "WEBP", lossless=True)
    return buffer.getvalue()


def forbid_decoding(monkeypatch) -> None:
    """Any pixel decoding fails the test: what is refused must be refused from the header alone."""

    def refuse(self, *args, **kwargs):
        raise AssertionError("a pixel was decoded")

    monkeypatch.setattr(PILImage.Image, "load", refuse)
    monkeypatch.setattr(ImageFile.ImageFile, "load", refuse)


def test_a_tiny_gif_of_300_frames_of_40_megapixels_is_refused_from_its_header(monkeypatch):
    data = animated_gif(300, size=(2, 2), screen=(6300, 6300))
    forbid_decoding(monkeypatch)
    assert len(data) < 20_000
    with pytest.raises(ImageRejected, match="300 frames of 6300x6300"):
        read_header(data, max_pixels=40_000_000, max_frames=300, max_frame_pixels=160_000_000)


def test_a_file_with_more_frames_than_allowed_is_refused_by_its_frame_count(monkeypatch):
    data = animated_gif(301, size=(2, 2))
    forbid_decoding(monkeypatch)
    with pytest.raises(ImageRejected, match="301 frames or pages, over the limit of 300"):
        read_header(data, max_pixels=40_000_000, max_frames=300)


def test_a_lossless_webp_claiming_millions_of_pixels_in_a_few_hundred_bytes_is_refused_before_decoding(
    monkeypatch,
):
    data = lossless_webp_bomb()
    forbid_decoding(monkeypatch)
    assert len(data) < 2000
    with pytest.raises(ImageRejected, match="is a decompression bomb"):
        check_image(data, **LIMITS)


def test_an_animated_gif_is_stored_as_its_first_frame_in_png():
    checked = check_image(animated_gif(3), **LIMITS)
    assert checked.converted and checked.extension == "png"
    stored = PILImage.open(io.BytesIO(checked.data))
    assert stored.format == "PNG" and getattr(stored, "n_frames", 1) == 1
    assert stored.convert("RGB").getpixel((10, 10)) == (255, 0, 0), "the first frame"


def test_a_multi_page_tiff_is_stored_as_its_first_page_in_png_and_a_single_page_one_too():
    for pages in (3, 1):
        checked = check_image(multipage_tiff(pages), **LIMITS)
        assert (checked.converted, checked.extension, checked.width, checked.height) == (True, "png", 64, 48)
        assert PILImage.open(io.BytesIO(checked.data)).convert("RGB").getpixel((5, 5)) == (0, 80, 120)


def test_a_single_frame_jpeg_is_stored_as_uploaded():
    data = imagefiles.jpeg(1)
    checked = check_image(data, **LIMITS)
    assert not checked.converted and checked.data == data


def test_formats_outside_the_allowed_ones_are_refused_naming_them(monkeypatch):
    data = animated_gif(2)
    forbid_decoding(monkeypatch)
    with pytest.raises(ImageRejected, match="GIF format is not accepted here; use one of JPEG, PNG"):
        read_header(data, max_pixels=40_000_000, formats=["PNG", "JPEG"])


# --- through the API --------------------------------------------------------------------------------------


def upload(client, dataset, *files):
    return client.post(
        f"/api/v1/datasets/{dataset.pk}/images/",
        {"files": [io.BytesIO(data) for data in files]},
        format="multipart",
    )


@pytest.mark.django_db
def test_a_dataset_accepting_only_jpeg_refuses_a_png_upload_and_bad_format_names_are_400(organizer):
    client = client_for(organizer)
    created = client.post(
        "/api/v1/datasets/", {"name": "jpeg-only", "image_formats": ["JPEG"]}, format="json"
    )
    assert created.status_code == 201 and created.json()["image_formats"] == ["JPEG"]
    dataset = Dataset.objects.get(name="jpeg-only")
    png = imagefiles.encode(imagefiles.picture(2), "PNG")
    response = upload(client, dataset, png, imagefiles.jpeg(3))
    assert response.status_code == 201
    assert [r["reason"] for r in response.json()["rejected"]] == [
        "PNG format is not accepted here; use one of JPEG"
    ]
    bad = client.post("/api/v1/datasets/", {"name": "bad", "image_formats": ["SVG"]}, format="json")
    assert bad.status_code == 400 and "image_formats" in bad.json()


@pytest.mark.django_db
def test_one_request_decodes_a_bounded_number_of_pixels_and_names_the_files_past_it(
    organizer, dataset, settings
):
    settings.CROWDLABEL = {**settings.CROWDLABEL, "MAX_PIXELS_PER_REQUEST": 50_000}
    files = [imagefiles.jpeg(seed, size=(160, 120)) for seed in range(4)]  # 19,200 pixels each
    response = upload(client_for(organizer), dataset, *files)
    assert response.status_code == 201
    body = response.json()
    assert len(body["stored"]) == 2
    assert len(body["rejected"]) == 2 and all("another request" in r["reason"] for r in body["rejected"])
    again = upload(client_for(organizer), dataset, *files[2:])
    assert len(again.json()["stored"]) == 2, "the next request has its own budget"


@pytest.mark.django_db
def test_a_repeated_upload_answers_what_the_first_stored_without_decoding_or_storing_again(
    organizer, dataset, monkeypatch
):
    """A client whose upload was answered 503 or not at all (the images stored, the answer lost) sends it
    again: the retry is answered with the images stored the first time, not refused."""
    data, other = imagefiles.jpeg(7), imagefiles.jpeg(8)
    first = upload(client_for(organizer), dataset, data)
    assert first.status_code == 201
    stored = first.json()["stored"][0]
    assert stored["already_stored"] is False

    forbid_decoding(monkeypatch)
    response = upload(client_for(organizer), dataset, data)
    assert response.status_code == 200
    body = response.json()
    assert body["rejected"] == []
    assert body["stored"] == [{**stored, "already_stored": True}]
    assert Image.objects.count() == 1

    monkeypatch.undo()
    mixed = upload(client_for(organizer), dataset, data, other)
    assert mixed.status_code == 201
    assert [s["already_stored"] for s in mixed.json()["stored"]] == [False, True]
    assert Image.objects.count() == 2


# --- fuzzing ----------------------------------------------------------------------------------------------


def seeds() -> list[bytes]:
    picture = imagefiles.picture(5, size=(24, 16))
    return [
        imagefiles.encode(picture, "JPEG", quality=80),
        imagefiles.encode(picture, "PNG"),
        imagefiles.encode(picture, "WEBP"),
        imagefiles.encode(picture, "BMP"),
        imagefiles.encode(picture.convert("P"), "GIF"),
        animated_gif(3, size=(8, 6)),
        multipage_tiff(2, size=(8, 6)),
        imagefiles.encode(picture, "TIFF", compression="tiff_lzw"),
    ]


SEEDS = seeds()


@st.composite
def mutated_images(draw) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(0, 6))):
        action = draw(st.sampled_from(["flip", "set", "cut", "insert"]))
        position = draw(st.integers(0, max(0, len(data) - 1)))
        if action == "flip" and data:
            data[position] ^= 1 << draw(st.integers(0, 7))
        elif action == "set" and data:
            data[position] = draw(st.integers(0, 255))
        elif action == "cut":
            del data[position : position + draw(st.integers(1, 64))]
        else:
            data[position:position] = draw(st.binary(min_size=1, max_size=16))
    return bytes(data)


FUZZ_LIMITS = {
    "max_bytes": 1_000_000,
    "max_pixels": 2_000_000,
    "max_frames": 50,
    "max_frame_pixels": 4_000_000,
}


@hypothesis_settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(mutated_images(), st.binary(max_size=512)))
def test_no_byte_string_makes_the_validator_raise_anything_but_a_refusal(data):
    try:
        checked = check_image(data, **FUZZ_LIMITS)
    except ImageRejected as exc:
        assert str(exc)
        return
    assert checked.width * checked.height <= FUZZ_LIMITS["max_pixels"]
    assert len(checked.sha256) == 64 and len(checked.phash) == 16
    assert np.asarray(PILImage.open(io.BytesIO(checked.data))).size > 0
