"""Token authentication: the worker identity comes with the user; bad and inactive tokens are refused."""

from __future__ import annotations

import pytest
from rest_framework.exceptions import AuthenticationFailed

from crowd.authentication import WorkerTokenAuthentication
from crowd.services import token_for
from tests import factories

pytestmark = pytest.mark.django_db


def test_token_authentication_loads_the_worker_without_a_second_query(worker, django_assert_num_queries):
    key = token_for(worker)
    with django_assert_num_queries(1):
        user, _token = WorkerTokenAuthentication().authenticate_credentials(key)
        assert user.worker.pk == worker.worker.pk


def test_token_authentication_of_a_user_without_worker_identity_has_no_worker(organizer):
    user, _token = WorkerTokenAuthentication().authenticate_credentials(token_for(organizer))
    assert user.pk == organizer.pk
    assert not hasattr(user, "worker")


def test_token_authentication_refuses_unknown_and_inactive_tokens():
    user = factories.user_with_roles("gone", ("workers",))
    key = token_for(user)
    user.is_active = False
    user.save(update_fields=["is_active"])
    with pytest.raises(AuthenticationFailed, match="inactive"):
        WorkerTokenAuthentication().authenticate_credentials(key)
    with pytest.raises(AuthenticationFailed, match="Invalid token"):
        WorkerTokenAuthentication().authenticate_credentials("0" * 40)
