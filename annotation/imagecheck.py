"""Image validation and fingerprints for ingestion (Pillow + numpy, no Django).

Everything an uploaded file must pass before it is stored: size, real image data, no decompression bomb,
no truncation; plus the EXIF-upright re-encoding, the sha256 and a 64-bit perceptual (difference) hash.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

ACCEPTED_FORMATS = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp", "GIF": "gif", "BMP": "bmp", "TIFF": "tif"}
EXIF_ORIENTATION_TAG = 0x0112


class ImageRejected(ValueError):
    """The file cannot be ingested; the message names the reason in words an organizer can act on."""


@dataclass(frozen=True)
class CheckedImage:
    data: bytes  # the bytes to store: the original, or an upright re-encoding when EXIF asked for a rotation
    extension: str
    width: int  # upright dimensions
    height: int
    sha256: str  # of the uploaded bytes, so re-uploading the same file is recognised
    phash: str  # 16 hex digits
    reoriented: bool


def check_image(data: bytes, *, max_bytes: int, max_pixels: int, size: int | None = None) -> CheckedImage:
    """`size` is the file's full size when the caller read only its first `max_bytes + 1` bytes (so an
    over-size file is refused without ever being held in memory whole)."""
    if len(data) == 0:
        raise ImageRejected("the file is empty")
    total = len(data) if size is None else max(size, len(data))
    if total > max_bytes:
        raise ImageRejected(f"the file is {total:,} bytes, over the limit of {max_bytes:,} bytes")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image: Image.Image = Image.open(io.BytesIO(data))
            fmt = image.format or ""
            width, height = image.size
            if width * height > max_pixels:
                raise ImageRejected(
                    f"the image is {width}x{height} = {width * height:,} pixels, over the limit of "
                    f"{max_pixels:,} (a decompression bomb or simply too large)"
                )
            if fmt not in ACCEPTED_FORMATS:
                raise ImageRejected(
                    f"{fmt or 'this'} format is not accepted; use one of {', '.join(ACCEPTED_FORMATS)}"
                )
            image.load()  # decodes every pixel: catches truncated and corrupt files
    except ImageRejected:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageRejected(f"decompression bomb refused: {exc}") from None
    except UnidentifiedImageError:
        raise ImageRejected("not an image file (the content is not a recognised image format)") from None
    except (OSError, SyntaxError, ValueError) as exc:
        raise ImageRejected(f"the image data is truncated or corrupt ({exc})") from None

    orientation = image.getexif().get(EXIF_ORIENTATION_TAG, 1)
    reoriented = orientation not in (1, None)
    stored = data
    if reoriented:
        upright = ImageOps.exif_transpose(image)
        buffer = io.BytesIO()
        save_format = fmt if fmt in ("JPEG", "PNG", "WEBP") else "PNG"
        options = {"quality": 95} if save_format in ("JPEG", "WEBP") else {}
        if save_format == "JPEG" and upright.mode not in ("RGB", "L"):
            upright = upright.convert("RGB")
        upright.save(buffer, format=save_format, **options)
        stored = buffer.getvalue()
        image = upright
        fmt = save_format
    return CheckedImage(
        data=stored,
        extension=ACCEPTED_FORMATS[fmt],
        width=image.size[0],
        height=image.size[1],
        sha256=hashlib.sha256(data).hexdigest(),
        phash=difference_hash(image),
        reoriented=reoriented,
    )


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
