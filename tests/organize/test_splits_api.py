"""Split versions from the browser's API: compute a preview with its counts, freeze it; audited; scoped."""

from __future__ import annotations

import pytest

from annotation.models import AuditEntry
from benchmark.models import SplitVersion
from tests import factories

pytestmark = pytest.mark.django_db


def test_a_previewed_version_shows_its_counts_and_freezes_once(api_client, organizer, dataset):
    factories.ImageFactory.create_batch(10, dataset=dataset)
    client = api_client(organizer)
    body = {"train": 0.6, "val": 0.2, "test": 0.2, "seed": 3}
    preview = client.post(f"/api/v1/datasets/{dataset.pk}/split-versions", body, format="json")
    assert preview.status_code == 201, preview.data
    assert preview.data["frozen"] is False and preview.data["seed"] == 3
    assert sum(preview.data["manifest"]["counts"].values()) == 10
    frozen = client.post(f"/api/v1/datasets/{dataset.pk}/split-versions/1/freeze")
    assert frozen.status_code == 200 and frozen.data["frozen"] is True
    again = client.post(f"/api/v1/datasets/{dataset.pk}/split-versions/1/freeze")
    assert again.status_code == 200
    assert SplitVersion.objects.get().frozen
    actions = list(AuditEntry.objects.order_by("id").values_list("action", flat=True))
    assert actions == ["splits.compute", "splits.freeze"]
    assert [v["number"] for v in client.get(f"/api/v1/datasets/{dataset.pk}/split-versions").data] == [1]


def test_ratios_that_do_not_sum_to_one_are_refused(api_client, organizer, dataset):
    body = {"train": 0.6, "val": 0.6, "test": 0.2}
    response = api_client(organizer).post(
        f"/api/v1/datasets/{dataset.pk}/split-versions", body, format="json"
    )
    assert response.status_code == 400 and "sum to 1" in str(response.data)
    assert not SplitVersion.objects.exists()


def test_another_organizer_cannot_see_or_freeze_the_versions(api_client, organizer, dataset, other_organizer):
    factories.ImageFactory.create_batch(3, dataset=dataset)
    api_client(organizer).post(f"/api/v1/datasets/{dataset.pk}/split-versions", {}, format="json")
    stranger = api_client(other_organizer)
    assert stranger.get(f"/api/v1/datasets/{dataset.pk}/split-versions").status_code == 404
    assert stranger.post(f"/api/v1/datasets/{dataset.pk}/split-versions/1/freeze").status_code == 404
    assert not SplitVersion.objects.get().frozen


def test_source_rules_from_the_browser_give_their_images_other_shares_as_make_splits_does(
    api_client, organizer, dataset
):
    """An organizer puts every image from one source in test (e.g. a contributor's photos held out), the rest
    at the dataset's ratios; the version keeps the rules and the audit entry names them."""
    held = [factories.ImageFactory(dataset=dataset, source=f"lab-b/{n}") for n in range(6)]
    factories.ImageFactory.create_batch(10, dataset=dataset, source="flickr")
    body = {
        "train": 1.0, "val": 0.0, "test": 0.0, "seed": 1,
        "source_rules": [{"source": "lab-b", "train": 0, "val": 0, "test": 1}],
    }  # fmt: skip
    response = api_client(organizer).post(
        f"/api/v1/datasets/{dataset.pk}/split-versions", body, format="json"
    )
    assert response.status_code == 201, response.data
    assert response.data["source_rules"] == {"lab-b": {"train": 0.0, "val": 0.0, "test": 1.0}}
    version = SplitVersion.objects.get()
    splits = dict(version.images.values_list("image_id", "split"))
    assert {splits[i.pk] for i in held} == {"test"}
    assert sorted(splits.values()).count("train") == 10
    entry = AuditEntry.objects.get(action="splits.compute")
    assert entry.parameters["source_rules"] == response.data["source_rules"]


@pytest.mark.parametrize(
    ("rules", "text"),
    [
        ([{"source": "a", "train": 0.5, "val": 0.5, "test": 0.5}], "source 'a': "),
        ([{"source": "a", "train": 1, "val": 0, "test": 0}] * 2, "given more than once: 'a'"),
        ([{"source": "", "train": 1, "val": 0, "test": 0}], "blank"),
    ],
)
def test_a_bad_source_rule_is_refused_naming_it_and_stores_no_version(
    api_client, organizer, dataset, rules, text
):
    factories.ImageFactory.create_batch(2, dataset=dataset)
    body = {"train": 0.6, "val": 0.2, "test": 0.2, "source_rules": rules}
    response = api_client(organizer).post(
        f"/api/v1/datasets/{dataset.pk}/split-versions", body, format="json"
    )
    assert response.status_code == 400 and text in str(response.data), response.data
    assert not SplitVersion.objects.exists() and not AuditEntry.objects.exists()
