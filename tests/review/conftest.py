"""Fixtures of the review tests: reviewers and boxes on images."""

from __future__ import annotations

import pytest

from annotation.models import Box, BoxState
from tests import factories


@pytest.fixture
def reviewer(db):
    return factories.user_with_roles("reviewer", ("reviewers",))


@pytest.fixture
def other_reviewer(db):
    return factories.user_with_roles("reviewer2", ("reviewers",))


@pytest.fixture
def make_box():
    def make(image, concept, x1, y1, x2, y2, state=BoxState.ACCEPTED) -> Box:
        return Box.objects.create(image=image, concept=concept, x1=x1, y1=y1, x2=x2, y2=y2, state=state)

    return make
