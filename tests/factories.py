"""factory_boy factories for the platform's models."""

from __future__ import annotations

import hashlib

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from annotation.models import Dataset, Image, Task
from crowd.models import Worker
from hierarchy.models import Concept


def user_with_roles(username: str, roles: tuple[str, ...], password: str = "pass-for-tests-123"):
    user = get_user_model().objects.create_user(username=username, password=password)
    for role in roles:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    if "workers" in roles:
        Worker.objects.create(user=user)
    return user


class ConceptFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Concept
        django_get_or_create = ("wnid",)

    wnid = factory.Sequence(lambda n: f"n{n:08d}")
    name = factory.Sequence(lambda n: f"thing {n}")
    gloss = "a thing used in tests"


class DatasetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Dataset
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"dataset-{n}")

    @factory.post_generation
    def organizers(self, create, extracted, **kwargs):
        if create and extracted:
            self.organizers.add(*extracted)


class ImageFactory(factory.django.DjangoModelFactory):
    """An image row with a small stored file (the bytes are a placeholder: tests of the queue never decode them)."""

    class Meta:
        model = Image

    dataset = factory.SubFactory(DatasetFactory)
    original_name = factory.Sequence(lambda n: f"img-{n}.png")
    width = 64
    height = 48
    sha256 = factory.Sequence(lambda n: hashlib.sha256(str(n).encode()).hexdigest())
    phash = "0000000000000000"
    file = factory.django.FileField(filename="img.png", data=b"not decoded in these tests")

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        # Counted in the dataset's tally as ingestion (annotation.ingest) counts every image it stores.
        from django.db import transaction

        from annotation import counters

        with transaction.atomic():
            image = super()._create(model_class, *args, **kwargs)
            counters.images_counted(image.dataset_id, 1)
        return image


class TaskFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Task

    kind = "binary_vote"
    image = factory.SubFactory(ImageFactory)
    dataset = factory.SelfAttribute("image.dataset")
    concept = factory.SubFactory(ConceptFactory)
    payload = factory.LazyAttribute(lambda t: {"question": f"Does this image show a {t.concept.name}?"})
    answers_wanted = 1

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        # Through the queue's task writer, as every pipeline creates tasks, so the usage counters count them.
        from annotation import queue

        return queue.task_create(**kwargs)
