"""A way out (the simulator and first tries left empty datasets in the organizer's list with no way to remove
them): a dataset nobody has worked on is deleted with its images, files and setup; one whose tasks were handed
out is kept (409, saying why, nothing deleted); another tenant's dataset is a 404."""

from __future__ import annotations

import pytest

from annotation.models import AuditEntry, Dataset, Image
from consensus import binary_vote
from crowd import invitations
from crowd.models import Invitation, InvitationRole
from tests import factories
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def delete(organizer, dataset):
    return client_for(organizer).post(f"/api/v1/datasets/{dataset.pk}/delete")


def test_an_untouched_dataset_goes_with_its_images_files_and_setup(
    organizer, dataset, django_capture_on_commit_callbacks
):
    images = factories.ImageFactory.create_batch(2, dataset=dataset)
    storage, names = images[0].file.storage, [i.file.name for i in images]
    assert all(storage.exists(n) for n in names)
    dataset.concepts.add(factories.ConceptFactory(wnid="n02084071", name="dog"))
    invitations.invitation_create(dataset=dataset, role=InvitationRole.WORKER, created_by=organizer)
    AuditEntry.objects.create(
        dataset=dataset, actor=organizer, action="settings.change", parameters={}, result={}
    )
    with django_capture_on_commit_callbacks(execute=True):
        reply = delete(organizer, dataset)
    assert reply.status_code == 200, reply.content
    assert reply.json() == {"deleted": dataset.pk, "images": 2}
    assert not Dataset.objects.filter(pk=dataset.pk).exists()
    assert not Image.objects.exists() and not Invitation.objects.exists() and not AuditEntry.objects.exists()
    assert not any(storage.exists(n) for n in names), "the stored files went after the commit"


def test_a_dataset_with_work_is_kept_and_says_why(organizer, dataset):
    image = factories.ImageFactory(dataset=dataset)
    concept = factories.ConceptFactory(wnid="n02084071", name="dog")
    binary_vote.vote_tasks_create(dataset=dataset, concept=concept, images=[image], answers_wanted=3)
    reply = delete(organizer, dataset)
    assert reply.status_code == 409
    assert "workers have been given tasks of this dataset" in reply.json()["detail"]
    assert Dataset.objects.filter(pk=dataset.pk).exists() and Image.objects.filter(pk=image.pk).exists()


def test_another_tenants_dataset_cannot_be_deleted(dataset):
    other = factories.user_with_roles("other-org", ("organizers",))
    assert delete(other, dataset).status_code == 404
    assert Dataset.objects.filter(pk=dataset.pk).exists()


def test_an_image_nobody_worked_on_is_deleted_and_one_with_work_is_kept(
    organizer, dataset, django_capture_on_commit_callbacks
):
    from annotation.models import DatasetTally

    untouched, worked = factories.ImageFactory.create_batch(2, dataset=dataset)
    DatasetTally.objects.update_or_create(dataset=dataset, defaults={"images": 2})
    binary_vote.vote_tasks_create(dataset=dataset, concept=factories.ConceptFactory(), images=[worked])
    storage, name = untouched.file.storage, untouched.file.name
    client = client_for(organizer)
    with django_capture_on_commit_callbacks(execute=True):
        reply = client.post(f"/api/v1/datasets/{dataset.pk}/images/{untouched.pk}/delete")
    assert reply.status_code == 200 and reply.json() == {"deleted": untouched.pk}
    assert not Image.objects.filter(pk=untouched.pk).exists() and not storage.exists(name)
    assert DatasetTally.objects.get(dataset=dataset).images == 1
    assert AuditEntry.objects.filter(dataset=dataset, action="image.delete").count() == 1
    kept = client.post(f"/api/v1/datasets/{dataset.pk}/images/{worked.pk}/delete")
    assert kept.status_code == 409 and "labels are kept" in kept.json()["detail"]
    assert Image.objects.filter(pk=worked.pk).exists()
    stranger = factories.user_with_roles("other-organizer", ("organizers",))
    assert (
        client_for(stranger).post(f"/api/v1/datasets/{dataset.pk}/images/{worked.pk}/delete").status_code
        == 404
    )
