"""The annotation tests exercise the box pipeline under the fixed first-to-k rule (`boxes.fixed_questions`,
`CROWDLABEL_BOX_QUESTION_BACKEND=fixed`): the calibrated consensus rule, the default, is covered by
tests/consensus."""

import pytest

from tests.annotation.boxhelpers import box_rule_use


@pytest.fixture(autouse=True)
def fixed_box_question_backend(settings):
    box_rule_use(settings, "fixed")
