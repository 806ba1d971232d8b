"""The annotation tests exercise the box pipeline with the fixed box-question backend
(`consensus.fixed_box_questions`, the default): the calibrated consensus backend, which takes over the box
questions by default, is disconnected for them (tests/consensus covers it)."""

import pytest

from annotation import questions
from consensus import box_questions


@pytest.fixture(autouse=True)
def fixed_box_question_backend():
    taken = {k: questions.backend_for(k) for k in questions.KINDS}
    box_questions.disconnect()
    yield
    box_questions.disconnect()
    for kind, backend in taken.items():
        if backend.name == box_questions.BACKEND.name:
            box_questions.connect((kind,))
