"""Near-duplicate flags from the organizer's side: the flags still to confirm are listed; confirming keeps the
flag and takes it off the list, dismissing clears it (the two become distinct images for splits); each verdict
is recorded once and audited; another dataset's flags stay out."""

from __future__ import annotations

import pytest

from annotation.models import AuditEntry, Image
from organize.models import NearDuplicateReview
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def flagged(dataset):
    original = factories.ImageFactory(dataset=dataset, original_name="cat.jpg")
    copies = [
        factories.ImageFactory(dataset=dataset, original_name=f"cat-{k}.jpg", near_duplicate_of=original)
        for k in range(3)
    ]
    return original, copies


def test_confirm_and_dismiss_take_flags_off_the_list(api_client, organizer, dataset, flagged, other_dataset):
    original, (a, b, c) = flagged
    factories.ImageFactory(
        dataset=other_dataset, near_duplicate_of=factories.ImageFactory(dataset=other_dataset)
    )
    client = api_client(organizer)
    url = f"/api/v1/datasets/{dataset.pk}/near-duplicates"
    listed = client.get(url).json()
    assert [r["id"] for r in listed["results"]] == [a.pk, b.pk, c.pk]
    assert listed["results"][0]["original_name"] == "cat.jpg"

    assert client.post(f"{url}/{a.pk}", {"decision": "confirm"}, format="json").status_code == 201
    assert client.post(f"{url}/{b.pk}", {"decision": "dismiss"}, format="json").status_code == 201
    assert Image.objects.get(pk=a.pk).near_duplicate_of_id == original.pk  # kept with its original
    assert Image.objects.get(pk=b.pk).near_duplicate_of_id is None  # a distinct image now
    assert [r["id"] for r in client.get(url).json()["results"]] == [c.pk]

    again = client.post(f"{url}/{a.pk}", {"decision": "confirm"}, format="json")
    assert again.status_code == 409
    assert client.post(f"{url}/{b.pk}", {"decision": "confirm"}, format="json").status_code == 404  # no flag
    assert client.post(f"{url}/{original.pk}", {"decision": "dismiss"}, format="json").status_code == 404
    assert list(NearDuplicateReview.objects.values_list("image", "decision").order_by("id")) == [
        (a.pk, "confirm"),
        (b.pk, "dismiss"),
    ]
    actions = list(AuditEntry.objects.filter(dataset=dataset).values_list("action", flat=True).order_by("id"))
    assert actions == ["near_duplicate.confirm", "near_duplicate.dismiss"]


def test_the_flag_list_takes_a_fixed_number_of_queries(
    api_client, organizer, dataset, flagged, django_assert_max_num_queries
):
    with django_assert_max_num_queries(5):
        assert (
            api_client(organizer).get(f"/api/v1/datasets/{dataset.pk}/near-duplicates").json()["count"] == 3
        )
