"""Fixtures of the organizer-workspace tests: two organizers with a dataset each, a reviewer."""

from __future__ import annotations

import pytest

from tests import factories


@pytest.fixture
def reviewer(db):
    return factories.user_with_roles("reviewer", ("reviewers",))


@pytest.fixture
def other_organizer(db):
    return factories.user_with_roles("organizer-b", ("organizers",))


@pytest.fixture
def other_dataset(other_organizer):
    return factories.DatasetFactory(organizers=[other_organizer])
