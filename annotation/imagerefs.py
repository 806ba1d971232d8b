"""Opaque references to images, for workers: a lease names its image by a reference that carries no creation
order, so a worker cannot tell an old image (or an old task: leases carry no task id) from a new one (issue 35,
item 3: gold items were told apart by their ids being older than the real tasks leased around them).

A reference is the image id and a fixed check word, one 16-byte block encrypted with AES under a key derived
from SECRET_KEY (a keyed permutation: the same image always has the same reference, no two images share one,
and it reads back to the id only with the key), in URL-safe base64 (22 characters). A forged reference reads back
to a wrong check word and names no image. Rotating SECRET_KEY changes every reference (leases held then load
their image again after the next lease)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import struct
from functools import lru_cache

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from django.conf import settings

_CHECK = b"imageref"
REF_LENGTH = 22
REF_PATTERN = r"[A-Za-z0-9_-]{22}"


@lru_cache(maxsize=2)
def _cipher(secret: str) -> Cipher:
    key = hmac.new(secret.encode(), b"crowdlabel.image-ref", hashlib.sha256).digest()
    # One block per reference: ECB over exactly one block is the block cipher itself, a keyed permutation.
    return Cipher(algorithms.AES(key), modes.ECB())


def image_ref(image_id: int) -> str:
    encryptor = _cipher(settings.SECRET_KEY).encryptor()
    block = encryptor.update(struct.pack(">Q", image_id) + _CHECK) + encryptor.finalize()
    return base64.urlsafe_b64encode(block).rstrip(b"=").decode()


def image_ref_id(ref: str) -> int | None:
    """The image id a reference names, or None for anything that is not a reference this key made."""
    if len(ref) != REF_LENGTH:
        return None
    try:
        block = base64.urlsafe_b64decode(ref + "==")
    except (binascii.Error, ValueError):
        return None
    if len(block) != 16 or base64.urlsafe_b64encode(block).rstrip(b"=").decode() != ref:
        return None  # the last character holds spare bits: only the one spelling a reference was made with
    decryptor = _cipher(settings.SECRET_KEY).decryptor()
    plain = decryptor.update(block) + decryptor.finalize()
    if plain[8:] != _CHECK:
        return None
    return struct.unpack(">Q", plain[:8])[0]
