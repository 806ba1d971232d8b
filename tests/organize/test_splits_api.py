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
