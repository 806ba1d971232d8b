"""Image checks and perceptual hashes, without a database: what a file must pass and how near-copies match."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image as PILImage

from annotation.imagecheck import ImageRejected, check_image, difference_hash, hamming_distances
from tests.annotation import imagefiles

LIMITS = {"max_bytes": 5_000_000, "max_pixels": 40_000_000}


def gradient(width: int = 90, height: int = 80, rising: bool = True) -> PILImage.Image:
    row = np.linspace(0, 255, width) if rising else np.linspace(255, 0, width)
    return PILImage.fromarray(np.tile(row, (height, 1)).astype(np.uint8))


def test_difference_hash_is_sixteen_hex_digits():
    value = difference_hash(imagefiles.picture(1))
    assert len(value) == 16
    int(value, 16)  # parses as hex


def test_difference_hash_of_left_to_right_brightening_sets_every_bit():
    assert difference_hash(gradient(rising=True)) == "ffffffffffffffff"
    assert difference_hash(gradient(rising=False)) == "0000000000000000"


def test_difference_hash_of_a_flat_image_is_zero():
    assert difference_hash(PILImage.new("RGB", (50, 50), (90, 140, 30))) == "0" * 16


def test_difference_hash_survives_rescaling_but_separates_different_pictures():
    original = imagefiles.picture(3)
    smaller = original.resize((120, 90), PILImage.Resampling.BILINEAR)
    other = imagefiles.picture(4)
    same = hamming_distances(difference_hash(original), [difference_hash(smaller)])[0]
    different = hamming_distances(difference_hash(original), [difference_hash(other)])[0]
    assert same <= 3
    assert different >= 16


def test_hamming_distances_counts_differing_bits_against_each_hash():
    distances = hamming_distances("0" * 16, ["f" * 16, "0" * 15 + "1", "0" * 16, "8" + "0" * 15, "0f" * 8])
    assert distances.tolist() == [64, 1, 0, 1, 32]


def test_hamming_distances_handles_the_top_bit_without_overflow():
    assert hamming_distances("8" + "0" * 15, ["7" + "f" * 15])[0] == 64


def test_hamming_distances_of_no_hashes_is_empty():
    distances = hamming_distances("abcdef0123456789", [])
    assert distances.shape == (0,)


def test_check_image_refuses_a_bomb_from_its_header_alone():
    with pytest.raises(ImageRejected, match="decompression bomb"):
        check_image(imagefiles.bomb_png(), **LIMITS)


def test_check_image_refuses_a_picture_over_our_pixel_limit_below_pillows_own():
    data = imagefiles.bomb_png(3000, 3000)  # 9 Mpx: Pillow would open it, our limit says no
    with pytest.raises(ImageRejected, match="over the limit of 1,000,000"):
        check_image(data, max_bytes=5_000_000, max_pixels=1_000_000)


def test_check_image_uses_the_declared_size_when_only_the_start_was_read():
    data = imagefiles.jpeg(1)
    with pytest.raises(ImageRejected, match="the file is 9,999,999 bytes"):
        check_image(data, max_bytes=5_000_000, max_pixels=40_000_000, size=9_999_999)


def test_check_image_refuses_an_empty_file():
    with pytest.raises(ImageRejected, match="empty"):
        check_image(b"", **LIMITS)


def test_check_image_reports_upright_dimensions_and_stores_an_upright_copy():
    checked = check_image(imagefiles.exif_rotated_jpeg(6), **LIMITS)
    assert (checked.width, checked.height) == (20, 40)
    assert checked.reoriented
    stored = PILImage.open(io.BytesIO(checked.data))
    assert stored.size == (20, 40)
    assert stored.getexif().get(0x0112, 1) == 1  # not rotated a second time by viewers
