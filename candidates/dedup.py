"""Which copy of a near-duplicate group is kept (PASCAL VOC §3.1 removed near duplicates before annotation).

The ingestion flags a new image whose difference hash is within `NEAR_DUPLICATE_DISTANCE` bits of one already
in the dataset (`near_duplicate_of`, the whole dataset searched, so within a pool and across pools alike).
Here the group is kept flat, every member pointing at one kept copy, and the kept copy is the one with the
most pixels: a higher-resolution later copy takes over before anyone has been asked about the group (no task
on any member yet). Splits group images by these links (`benchmark.selectors` follows the chains), so a
group never straddles two splits whichever copy is kept."""

from __future__ import annotations

from django.db import transaction

from annotation.models import Image, Task

MAX_CHAIN = 100


def kept_copy(image: Image) -> Image:
    """The group's kept copy: the end of the near_duplicate_of chain (the image itself when it is kept)."""
    seen = {image.pk}
    current = image
    while current.near_duplicate_of_id is not None and len(seen) < MAX_CHAIN:
        current = Image.objects.get(pk=current.near_duplicate_of_id)
        if current.pk in seen:
            break
        seen.add(current.pk)
    return current


def kept_copy_choose(image: Image) -> Image:
    """After `image` was stored: link it to its group's kept copy, or make it the kept copy when it has more
    pixels and no member of the group has a task yet. Returns the kept copy."""
    if image.near_duplicate_of_id is None:
        return image
    with transaction.atomic():
        root = kept_copy(Image.objects.get(pk=image.near_duplicate_of_id))
        root = Image.objects.select_for_update(no_key=True).get(pk=root.pk)
        members = list(
            Image.objects.filter(near_duplicate_of=root).exclude(pk=image.pk).values_list("pk", flat=True)
        )
        group = [root.pk, *members]
        asked = Task.objects.filter(image_id__in=group).exists()
        if image.width * image.height > root.width * root.height and not asked:
            Image.objects.filter(pk__in=group).update(near_duplicate_of=image)
            Image.objects.filter(pk=image.pk).update(near_duplicate_of=None)
            image.near_duplicate_of = None
            return image
        if image.near_duplicate_of_id != root.pk:
            Image.objects.filter(pk=image.pk).update(near_duplicate_of=root)
            image.near_duplicate_of = root
        return root
