"""Image validation and fingerprints for ingestion (Pillow + numpy, no Django).

Everything an uploaded file must pass before it is stored: size, then the cheap header checks (format allowed,
dimensions, frame and page counts, pixels x frames, pixels per byte) before a single pixel is decoded, then real
image data without truncation; plus the EXIF-upright re-encoding, the first frame of animations and multi-page
files re-encoded as PNG, the sha256 and a 64-bit perceptual (difference) hash.
"""

from __future__ import annotations

import hashlib
import io
import struct
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

ACCEPTED_FORMATS = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp", "GIF": "gif", "BMP": "bmp", "TIFF": "tif"}
EXIF_ORIENTATION_TAG = 0x0112


class ImageRejected(ValueError):
    """The file cannot be ingested; the message names the reason in words an organizer can act on."""


@dataclass(frozen=True)
class CheckedImage:
    data: bytes  # the bytes to store: the original, or a re-encoding (upright, first frame, browser format)
    extension: str
    width: int  # upright dimensions
    height: int
    sha256: str  # of the uploaded bytes, so re-uploading the same file is recognised
    phash: str  # 16 hex digits
    reoriented: bool
    converted: bool = False  # a multi-frame file or a format browsers cannot show, stored as its first frame


@dataclass(frozen=True)
class Header:
    """What the file says about itself, read without decoding a pixel."""

    format: str
    width: int
    height: int
    frames: int

    @property
    def pixels(self) -> int:
        return self.width * self.height


# Formats every browser shows as they are; anything else (TIFF), and any file with several frames or pages, is
# stored as its first frame in PNG.
BROWSER_FORMATS = {"JPEG", "PNG", "WEBP", "GIF", "BMP"}
# Real photographs hold far fewer pixels per byte of file than this; a file claiming more for a big picture is
# built to blow up in the decoder (a 40-byte lossless WebP of 6300x6300 decodes to hundreds of MB).
MAX_PIXELS_PER_BYTE = 4000
RATIO_CHECK_ABOVE_PIXELS = 4_000_000


def read_header(
    data: bytes,
    *,
    max_pixels: int,
    max_frames: int = 1000,
    max_frame_pixels: int | None = None,
    formats: Iterable[str] | None = None,
) -> Header:
    """The cheap checks, from the header alone: a known and allowed format, dimensions within `max_pixels`,
    at most `max_frames` frames or pages, width x height x frames within `max_frame_pixels`, and a pixel count
    a file of this size can plausibly hold. Raises ImageRejected naming the problem."""
    allowed = ACCEPTED_FORMATS.keys() if formats is None else set(formats) & ACCEPTED_FORMATS.keys()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # Pillow's notes on corrupt tags: refused or fine
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                fmt = image.format or ""
                width, height = image.size
                if fmt not in allowed:
                    raise ImageRejected(
                        f"{fmt or 'this'} format is not accepted here; use one of {', '.join(sorted(allowed))}"
                    )
                if width < 1 or height < 1:
                    raise ImageRejected(f"the image claims {width}x{height} pixels")
                if width * height > max_pixels:
                    raise ImageRejected(
                        f"the image is {width}x{height} = {width * height:,} pixels, over the limit of "
                        f"{max_pixels:,} (a decompression bomb or simply too large)"
                    )
                if width * height > RATIO_CHECK_ABOVE_PIXELS and width * height > MAX_PIXELS_PER_BYTE * len(
                    data
                ):
                    raise ImageRejected(
                        f"a {len(data):,}-byte file claiming {width}x{height} pixels is a decompression bomb"
                    )
                frames = int(getattr(image, "n_frames", 1) or 1)
    except ImageRejected:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageRejected(f"decompression bomb refused: {exc}") from None
    except UnidentifiedImageError:
        raise ImageRejected("not an image file (the content is not a recognised image format)") from None
    except (OSError, SyntaxError, ValueError, EOFError, struct.error, IndexError, KeyError, TypeError) as exc:
        raise ImageRejected(f"the image header is corrupt ({exc})") from None
    if frames > max_frames:
        raise ImageRejected(f"the file has {frames:,} frames or pages, over the limit of {max_frames:,}")
    budget = max_frame_pixels if max_frame_pixels is not None else max_pixels
    if width * height * frames > budget:
        raise ImageRejected(
            f"{frames:,} frames of {width}x{height} are {width * height * frames:,} pixels in all, over the "
            f"limit of {budget:,}"
        )
    return Header(fmt, width, height, frames)


def check_image(
    data: bytes,
    *,
    max_bytes: int,
    max_pixels: int,
    size: int | None = None,
    max_frames: int = 1000,
    max_frame_pixels: int | None = None,
    formats: Iterable[str] | None = None,
    before_decode: Callable[[Header], None] | None = None,
) -> CheckedImage:
    """`size` is the file's full size when the caller read only its first `max_bytes + 1` bytes (so an
    over-size file is refused without ever being held in memory whole). The header is checked first
    (`read_header`), then `before_decode` sees it; only then is the first frame decoded."""
    if len(data) == 0:
        raise ImageRejected("the file is empty")
    total = len(data) if size is None else max(size, len(data))
    if total > max_bytes:
        raise ImageRejected(f"the file is {total:,} bytes, over the limit of {max_bytes:,} bytes")
    header = read_header(
        data, max_pixels=max_pixels, max_frames=max_frames, max_frame_pixels=max_frame_pixels, formats=formats
    )
    if before_decode is not None:
        before_decode(header)  # the caller's own budget, e.g. pixels per request; may raise ImageRejected
    fmt = header.format
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # Pillow's notes on corrupt tags: refused or fine
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image: Image.Image = Image.open(io.BytesIO(data))
            if image.size != (header.width, header.height):
                raise ImageRejected("the image header changed between reads")
            image.load()  # decodes the first frame only: catches truncated and corrupt files
    except ImageRejected:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageRejected(f"decompression bomb refused: {exc}") from None
    except UnidentifiedImageError:
        raise ImageRejected("not an image file (the content is not a recognised image format)") from None
    except (OSError, SyntaxError, ValueError, EOFError, struct.error, IndexError, KeyError, TypeError) as exc:
        raise ImageRejected(f"the image data is truncated or corrupt ({exc})") from None
    except MemoryError:
        raise ImageRejected("the image is too large to decode") from None

    try:
        orientation = image.getexif().get(EXIF_ORIENTATION_TAG, 1)
    except (OSError, SyntaxError, ValueError, EOFError, struct.error, IndexError, KeyError, TypeError):
        orientation = 1  # unreadable EXIF: store the pixels as they are
    reoriented = orientation in (2, 3, 4, 5, 6, 7, 8)
    converted = header.frames > 1 or fmt not in BROWSER_FORMATS
    stored = data
    if reoriented or converted:
        try:
            if reoriented:
                image = ImageOps.exif_transpose(image)
        except (
            OSError,
            SyntaxError,
            ValueError,
            EOFError,
            struct.error,
            IndexError,
            KeyError,
            TypeError,
        ) as exc:
            raise ImageRejected(f"the image data is truncated or corrupt ({exc})") from None
        save_format = "PNG" if converted else (fmt if fmt in ("JPEG", "PNG", "WEBP") else "PNG")
        stored, image = _encode(image, save_format)
        fmt = save_format
    return CheckedImage(
        data=stored,
        extension=ACCEPTED_FORMATS[fmt],
        width=image.size[0],
        height=image.size[1],
        sha256=hashlib.sha256(data).hexdigest(),
        phash=difference_hash(image),
        reoriented=reoriented,
        converted=converted,
    )


def _encode(image: Image.Image, save_format: str) -> tuple[bytes, Image.Image]:
    """Re-encode one decoded frame in a format browsers show, converting modes that format cannot hold."""
    if save_format == "PNG" and image.mode not in ("1", "L", "LA", "P", "RGB", "RGBA", "I;16"):
        image = image.convert("RGBA" if "A" in image.mode or "transparency" in image.info else "RGB")
    if save_format == "JPEG" and image.mode not in ("RGB", "L"):
        image = image.convert("RGB")
    buffer = io.BytesIO()
    options = {"quality": 95} if save_format in ("JPEG", "WEBP") else {}
    image.save(buffer, format=save_format, **options)
    return buffer.getvalue(), image


def difference_hash(image: Image.Image, size: int = 8) -> str:
    """64-bit dHash: compares neighbouring pixels of a 9x8 greyscale thumbnail; robust to rescaling and
    re-encoding, which is what near-duplicate web images differ by."""
    small = image.convert("L").resize((size + 1, size), Image.Resampling.LANCZOS)
    pixels = np.asarray(small, dtype=np.int16)
    bits = (pixels[:, 1:] > pixels[:, :-1]).flatten()
    value = 0
    for bit in bits:
        value = (value << 1) | int(bit)
    return f"{value:016x}"


def hamming_distances(phash: str, others: list[str]) -> np.ndarray:
    """Bit distances between one hash and many, vectorized."""
    if not others:
        return np.zeros(0, dtype=np.int64)
    target = np.uint64(int(phash, 16))
    array = np.array([int(h, 16) for h in others], dtype=np.uint64)
    return np.bitwise_count(np.bitwise_xor(array, target)).astype(np.int64)
