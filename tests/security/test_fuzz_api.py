"""schemathesis against the committed OpenAPI schema, in-process against the WSGI app, with every check it has
(no 5xx, status codes, content types, headers and bodies conforming to the schema, schema-valid data accepted and
schema-violating data refused, authentication enforced, ...): a sweep of every operation, and a stateful run that
follows the links schemathesis infers between operations (create a dataset, then use its id). The caller holds
every role, so each call reaches the view's logic, not just a 403; path ids point at real rows half of the time.

Schema-valid is not the same as usable: a wnid of the right shape may name no concept, a task kind list may name
an unknown kind. The API answers those with a documented 400, so 400 is an accepted answer to positive data."""

from __future__ import annotations

from pathlib import Path

import pytest
import schemathesis
from django.core import signals
from django.core.cache import cache
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from schemathesis.config import SchemathesisConfig

from config.wsgi import application
from consensus.binary_vote import vote_tasks_create
from tests import factories

CONFIG = SchemathesisConfig.from_dict(
    {
        "checks": {
            "positive_data_acceptance": {
                "expected-statuses": ["2xx", "3xx", "400", "401", "403", "404", "409", "429"]
            }
        }
    }
)
SCHEMA = schemathesis.openapi.from_path(
    Path(__file__).resolve().parents[2] / "docs" / "openapi.yaml", config=CONFIG
)
SCHEMA.app = application  # calls go to the WSGI app in this process, inside the test's transaction
OPERATIONS = [result.ok() for result in SCHEMA.get_all_operations()]
EXAMPLES_PER_OPERATION = 10
STATEFUL_SCENARIOS = 60
STATEFUL_STEPS = 8
HYPOTHESIS = {
    "deadline": None,
    "derandomize": True,
    "suppress_health_check": list(HealthCheck),
    "database": None,
}


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
    token = Token.objects.create(user=user).key
    return {"headers": {"Authorization": f"Token {token}"}, "dataset": dataset.pk, "wnid": concept.wnid}


def test_every_operation_is_covered():
    assert len(OPERATIONS) >= 40, "the schema lost its operations: the sweep would prove nothing"


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: f"{op.method.upper()} {op.path}")
def test_every_operation_passes_every_check(world, operation):
    @seed(18)
    @settings(max_examples=EXAMPLES_PER_OPERATION, **HYPOTHESIS)
    @given(case=operation.as_strategy(), real=st.booleans())
    def sweep(case, real):
        if real and case.path_parameters:
            for name in case.path_parameters:
                case.path_parameters[name] = world["wnid"] if name == "wnid" else world["dataset"]
        response = case.call(headers=world["headers"])
        # The headers are named again so the authentication check knows they are real credentials and
        # probes the same call without them (and with made-up ones): it must then be refused.
        case.validate_response(response, headers=world["headers"])

    sweep()


def test_stateful_sequences_pass_every_check(world):
    headers = world["headers"]
    steps = []

    class Sequences(SCHEMA.as_state_machine()):
        """Each scenario starts from the same rows (a savepoint rolled back at its end), so Hypothesis can
        replay and shrink one."""

        def setup(self):
            cache.clear()  # rate-limit histories
            self.savepoint = transaction.savepoint()

        def teardown(self):
            transaction.savepoint_rollback(self.savepoint)

        def get_call_kwargs(self, case):
            return {"headers": headers}

        def after_call(self, response, case):
            super().after_call(response, case)
            steps.append(response.status_code)

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            case.validate_response(
                response,
                headers=headers,
                additional_checks=additional_checks,
                transport_kwargs=kwargs or None,
                recorder=self.recorder,
            )

    Sequences.run(
        settings=settings(max_examples=STATEFUL_SCENARIOS, stateful_step_count=STATEFUL_STEPS, **HYPOTHESIS)
    )
    assert len(steps) > STATEFUL_SCENARIOS, (
        "the scenarios made no calls beyond their first: no link was followed"
    )
    assert any(200 <= code < 300 for code in steps), "no step succeeded: the sequences tested only refusals"
