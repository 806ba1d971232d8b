"""The DRAW micro-task kind of the box pipeline: one worker draws one box around one instance not yet boxed,
or answers that none is left (ILSVRC §3.2.1; Su, Deng, Fei-Fei 2012).

Answer: {"box": [x1, y1, x2, y2]} in original-image pixels, or {"none_left": true}; an optional "image" (the
image's opaque reference, `task.image.ref` of the lease) lets a client make sure the box belongs to the image it
showed. A task queued while its dataset draws by extreme clicking (Papadopoulos et al., ICCV 2017; its payload's
`draw_mode` is "extreme") takes {"points": {"top": [x, y], "bottom": ..., "left": ..., "right": ...}} instead
of "box": the box is their bounds, stored with them. A refused box stores nothing.
"""

from __future__ import annotations

from typing import Any

from annotation import geometry, kinds
from annotation.imagerefs import image_ref
from annotation.models import Assignment, Task, TaskState
from annotation.queue import sqlrows
from annotation.queue.contract import TaskChange

from . import services as boxes
from .models import DrawMode

KIND = boxes.DRAW_KIND


def draw_mode(task: Task) -> str:
    """How the task's page draws: the dataset's mode when the task was queued (tasks queued before the setting
    existed drag corners)."""
    return (task.payload or {}).get("draw_mode", DrawMode.CORNERS)


def instructions(concept_name: str, mode: str = DrawMode.CORNERS) -> str:
    if mode == DrawMode.EXTREME:
        return (
            f"Click the four extreme points of one {concept_name} that has no box yet: its top-most, bottom-most, "
            "left-most and right-most points, on the visible part of the object itself, in any order. The box is "
            f'drawn through them. If every {concept_name} already has a box, answer "No {concept_name} left '
            'without a box".'
        )
    return (
        f"Draw one tight box around one {concept_name} that has no box yet: the box should touch the edges of "
        f'the visible part. If every {concept_name} already has a box, answer "No {concept_name} left without a '
        'box".'
    )


def clean_answer(task: Task, answer: Any) -> dict[str, Any]:
    if not isinstance(answer, dict):
        raise kinds.AnswerInvalid(
            'the answer must be an object like {"box": [x1, y1, x2, y2]} or {"none_left": true}'
        )
    if "image" in answer and answer["image"] != image_ref(task.image_id):
        raise kinds.AnswerInvalid(
            "\"image\" names another image than this task's: send the task's task.image.ref as the lease gave it"
        )
    extreme = draw_mode(task) == DrawMode.EXTREME
    drawn, other = ("points", "box") if extreme else ("box", "points")
    if other in answer:
        how = "by extreme clicking" if extreme else "by dragging its corners"
        raise kinds.AnswerInvalid(
            f'"{other}": this task draws the box {how}: send "{drawn}" (or "none_left": true) instead'
        )
    has_box = drawn in answer
    none_left = answer.get("none_left", False)
    if not isinstance(none_left, bool):
        raise kinds.AnswerInvalid(f'"none_left" must be true or false, got {none_left!r}')
    if has_box == none_left:
        raise kinds.AnswerInvalid(f'send either "{drawn}" or "none_left": true (exactly one of them)')
    if none_left:
        return {"none_left": True}
    assert task.image is not None and task.concept_id is not None
    if extreme:
        try:
            points = boxes.extreme_points_check(
                image=task.image, concept_id=task.concept_id, points=answer["points"]
            )
        except geometry.BoxError as exc:
            raise kinds.AnswerInvalid(str(exc)) from None
        return {"box": list(points.bounds()), "points": points.as_dict()}
    try:
        box = boxes.box_check(image=task.image, concept_id=task.concept_id, coords=answer["box"])
    except geometry.BoxError as exc:
        raise kinds.AnswerInvalid(str(exc)) from None
    return {"box": list(box.as_tuple())}


def on_submit(assignment: Assignment, writes: sqlrows.Writes) -> TaskChange:
    # The box and the job's next step are written now, by the box pipeline's services; nothing goes to `writes`.
    task = assignment.task
    answer = assignment.answer or {}
    if answer.get("none_left"):
        boxes.box_draw_skip(task=task, worker=assignment.worker)
        return TaskChange(state=TaskState.DONE, result={"none_left": True})
    points = answer.get("points")
    box = boxes.box_submit(
        task=task,
        worker=assignment.worker,
        box=geometry.Box(*answer["box"]),
        points=geometry.ExtremePoints(**{k: tuple(v) for k, v in points.items()}) if points else None,
    )
    return TaskChange(state=TaskState.DONE, result={"box_id": box.pk})


def public_payload(task: Task) -> dict[str, Any]:
    concept = task.concept
    assert concept is not None and task.image_id is not None
    shown = boxes.accepted_boxes(task.image_id, concept.pk)
    mode = draw_mode(task)
    return {
        "concept": {"wnid": concept.wnid, "name": concept.name, "gloss": concept.gloss},
        "instructions": instructions(concept.name, mode),
        "draw_mode": mode,
        "boxes": [{"id": b.pk, "box": [b.x1, b.y1, b.x2, b.y2]} for b in shown],
        "min_side": geometry.MIN_BOX_SIDE,
        "min_difference": geometry.DUPLICATE_MIN_DIFF_PX,
    }


KIND_SPEC = kinds.register(
    kinds.TaskKind(
        name=KIND,
        title="Draw a box",
        clean_answer=clean_answer,
        on_submit=on_submit,
        public_payload=public_payload,
    )
)
