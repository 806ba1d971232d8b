"""The micro-task queue: the only code that writes Task and Assignment rows, and the home of its hot SQL.

- `services`: lease the next task, submit once, release, extend, expire;
- `writes`: create tasks and change a task's own fields for the pipelines above (one code path for all), and
  take an answer back within the undo window;
- `many`: lease several tasks at once, and submit several answers in one transaction with a result each;
- `reach`: which waiting tasks some worker of their dataset's crowd may still lease (the starved sweep's
  question, answered by the lease's own condition);
- `contract`: the data the apps above exchange with the queue (lease terms, draws, task changes, results);
- `statements` and `sqlrows`: the hand-written SQL and the rows-to-instances helper it uses; `sqlrows.Writes`
  holds a submit's writes until it sends them.
"""

from .contract import (
    IDEMPOTENCY_KEY_MAX,
    KEEP,
    OPEN_POOL,
    Draw,
    IdempotencyKey,
    KeyInvalid,
    Lease,
    LeaseRequest,
    LeaseTerms,
    SubmitResult,
    TaskChange,
)
from .many import MANY_MAX, Answer, AnswerResult, assignments_submit_many, task_lease_many
from .reach import crowd, task_waiting, tasks_reachable, waiting
from .services import (
    AlreadySubmitted,
    LeaseExpired,
    QueueError,
    assignment_extend,
    assignment_release,
    assignment_submit,
    available_tasks,
    lease_duration,
    lease_terms,
    leases_expire,
    task_lease,
    task_lease_next,
)
from .writes import (
    UndoRefused,
    Withdrawn,
    assignment_withdraw,
    assignments_import,
    task_create,
    task_save,
    tasks_create,
    tasks_lock,
    tasks_update,
    undo_window,
)

__all__ = [
    "IDEMPOTENCY_KEY_MAX",
    "KEEP",
    "MANY_MAX",
    "Answer",
    "AnswerResult",
    "assignments_submit_many",
    "task_lease_many",
    "OPEN_POOL",
    "AlreadySubmitted",
    "assignments_import",
    "Draw",
    "IdempotencyKey",
    "KeyInvalid",
    "Lease",
    "LeaseExpired",
    "LeaseRequest",
    "LeaseTerms",
    "QueueError",
    "SubmitResult",
    "TaskChange",
    "UndoRefused",
    "Withdrawn",
    "assignment_extend",
    "assignment_release",
    "assignment_submit",
    "assignment_withdraw",
    "available_tasks",
    "crowd",
    "lease_duration",
    "lease_terms",
    "leases_expire",
    "task_create",
    "task_save",
    "task_waiting",
    "tasks_create",
    "task_lease",
    "task_lease_next",
    "tasks_reachable",
    "tasks_lock",
    "tasks_update",
    "undo_window",
    "waiting",
]
