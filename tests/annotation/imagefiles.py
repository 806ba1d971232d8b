"""Crafted image files for the ingestion tests: pictures, near-copies, bombs, truncations, EXIF rotations."""

from __future__ import annotations

import functools
import io
import struct
import zlib

import numpy as np
from PIL import Image as PILImage


def picture(seed: int, size: tuple[int, int] = (160, 120)) -> PILImage.Image:
    """A smooth, photo-like picture (a few random waves): its perceptual hash survives rescaling, unlike
    noise, and two seeds give clearly different hashes."""
    rng = np.random.default_rng(seed)
    width, height = size
    y, x = np.mgrid[0:height, 0:width] / max(size)
    channels = []
    for _ in range(3):
        field = np.zeros((height, width))
        for _ in range(4):
            fx, fy = rng.uniform(0.5, 4.0, 2)
            phase = rng.uniform(0, 2 * np.pi)
            field += np.sin(2 * np.pi * (fx * x + fy * y) + phase)
        channels.append((field - field.min()) / (np.ptp(field) or 1) * 255)
    return PILImage.fromarray(np.stack(channels, axis=-1).astype(np.uint8))


def encode(image: PILImage.Image, fmt: str = "JPEG", **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def jpeg(seed: int, size: tuple[int, int] = (160, 120), quality: int = 90) -> bytes:
    return encode(picture(seed, size), "JPEG", quality=quality)


def near_copy(seed: int) -> bytes:
    """The same picture as jpeg(seed), rescaled by a few percent and re-encoded at a lower quality."""
    return encode(picture(seed).resize((150, 112), PILImage.Resampling.BILINEAR), "JPEG", quality=70)


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


@functools.cache
def bomb_png(width: int = 10_000, height: int = 10_000) -> bytes:
    """A valid 1-bit greyscale PNG of width x height all-black pixels: a few kB on disk, gigantic decoded."""
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)  # bit depth 1, greyscale
    row = b"\x00" * (1 + (width + 7) // 8)  # filter byte + packed bits
    compressor = zlib.compressobj(9)
    data = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", data)
        + _png_chunk(b"IEND", b"")
    )


def truncated_jpeg(seed: int = 7) -> bytes:
    data = jpeg(seed)
    return data[: len(data) // 2]


def exif_rotated_jpeg(orientation: int = 6) -> bytes:
    """A 40x20 JPEG (left half red, right half blue) whose EXIF says "rotate for display"."""
    image = PILImage.new("RGB", (40, 20), (220, 20, 20))
    image.paste((20, 20, 220), (20, 0, 40, 20))
    exif = PILImage.Exif()
    exif[0x0112] = orientation
    return encode(image, "JPEG", quality=95, exif=exif.tobytes())


TEXT = b"Shopping list:\n- milk\n- eggs\nThis is not a picture, whatever its name says.\n"
