"""A schemathesis sweep over every operation of the committed OpenAPI schema, in-process against the WSGI app,
as a user holding every role (so each call reaches the view's logic, not just a 403), with path ids pointing at
the dataset (or the concept) half of the time: no generated request may get a 5xx."""

from __future__ import annotations

from pathlib import Path

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error

from annotation.vote_tasks import vote_tasks_create
from config.wsgi import application
from tests import factories

SCHEMA = schemathesis.openapi.from_path(Path(__file__).resolve().parents[2] / "docs" / "openapi.yaml")
OPERATIONS = [result.ok() for result in SCHEMA.get_all_operations()]
EXAMPLES_PER_OPERATION = 10


@pytest.fixture
def keep_test_connection():
    """Call the real WSGI handler inside the test's transaction: like Django's test client, stop it closing the
    connection at each request's start and end (on PostgreSQL that would abort the test transaction)."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


@pytest.fixture
def world(db, keep_test_connection):
    """A user with every role and worker identity, and a dataset with images, a concept and open vote tasks."""
    user = factories.user_with_roles("root", ("organizers", "reviewers", "workers"))
    dataset = factories.DatasetFactory(organizers=[user])
    factories.ImageFactory(dataset=dataset)
    concept = factories.ConceptFactory(wnid="n02084071", name="dog")
    vote_tasks_create(dataset=dataset, concept=concept, answers_wanted=3)
    return {"token": Token.objects.create(user=user).key, "dataset": dataset.pk, "wnid": concept.wnid}


def test_every_operation_is_covered():
    assert len(OPERATIONS) >= 40, "the schema lost its operations: the sweep would prove nothing"


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: f"{op.method.upper()} {op.path}")
def test_no_generated_request_gets_a_server_error(world, operation):
    @seed(18)
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(case=operation.as_strategy(), real=st.booleans())
    def sweep(case, real):
        if real and case.path_parameters:
            for name in case.path_parameters:
                case.path_parameters[name] = world["wnid"] if name == "wnid" else world["dataset"]
        response = case.call(app=application, headers={"Authorization": f"Token {world['token']}"})
        case.validate_response(response, checks=[not_a_server_error])

    sweep()
