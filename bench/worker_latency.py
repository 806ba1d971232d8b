"""Worker page latency as the worker feels it: from the key press that answers a yes/no task to the next task
visible (its image decoded and painted), in real headless Chromium against gunicorn and PostgreSQL on loopback,
with the page's prefetching (one task leased and its image decoded ahead) and without it (`?prefetch=off`: store
the answer, then lease the next task and load its image), measured in the same run, in alternating blocks.

Usage: python bench/worker_latency.py [--answers 200] [--quick] [--gunicorn-workers 2] [--keep-db]

The script creates (and at the end drops) its own PostgreSQL database (cl_latency), migrates it, ingests one
small JPEG per task (every task has its own image, as in real work, so no image comes from the browser's cache
because an earlier task showed it), starts gunicorn on a free loopback port and drives one signed-in browser
page per mode. Each answer waits until the page takes answers (the image has been on screen 500 ms), then
presses Y. The page's `#task-body[data-shown]` changes once the next task's image is decoded and in a frame;
the time is read just after that frame (a task queued from the mutation). It prints a table; it asserts
nothing. Targets (issue 17): median < 50 ms, p95 < 100 ms with prefetching.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from queue_throughput import (  # noqa: E402
    HOST,
    free_port,
    gunicorn_start,
    gunicorn_stop,
    percentile,
    server_env,
)

DB_NAME = "cl_latency"
PASSWORD = "bench-password-not-secret-1"
MODES = {"prefetch": "", "no prefetch": "?prefetch=off"}
WARM_UP = 5  # answers per mode not reported: gunicorn workers load the URL map, the browser its modules
TARGET_MEDIAN_MS, TARGET_P95_MS = 50.0, 100.0

# Records, in the page, the time of each answering key press and of the next task becoming visible.
PROBE = """
window.__latency = { pressed: null, samples: [] };
document.addEventListener("keydown", (event) => {
  if (!event.repeat) window.__latency.pressed = performance.now();
}, true);
document.addEventListener("DOMContentLoaded", () => {
  const body = document.getElementById("task-body");
  if (!body) return;
  let last = null;
  new MutationObserver(() => {
    const shown = body.dataset.shown;
    if (!shown || shown === last) return;
    last = shown;
    const pressed = window.__latency.pressed;
    // data-shown is set in the frame that paints the task; a task queued now runs after that paint.
    setTimeout(() => {
      if (pressed !== null) window.__latency.samples.push(performance.now() - pressed);
      window.__latency.pressed = null;
    }, 0);
  }).observe(body, { attributes: true, attributeFilter: ["data-shown"] });
});
"""


def database_recreate(admin_url: str, drop_only: bool = False) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        if not drop_only:
            conn.execute(f'CREATE DATABASE "{DB_NAME}"')


def photo_like_jpeg(seed: int, size=(500, 375)) -> bytes:
    """A smooth random picture (coarse noise scaled up), about the bytes of a small photograph."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    coarse = Image.fromarray(rng.integers(0, 256, (12, 16, 3), dtype=np.uint8))
    buffer = io.BytesIO()
    coarse.resize(size, Image.Resampling.BICUBIC).save(buffer, format="JPEG", quality=85)
    return buffer.getvalue()


def data_create(n_tasks: int) -> None:
    """Migrate, then one worker per mode and `n_tasks` single-answer yes/no tasks, each on its own image."""
    import django
    from django.core.management import call_command

    django.setup()
    from annotation.ingest import IngestItem, images_ingest
    from annotation.models import Dataset
    from config.roles import WORKERS
    from consensus.binary_vote import vote_tasks_create
    from crowd.services import user_create
    from hierarchy.models import Concept

    call_command("migrate", verbosity=0, interactive=False)
    for i, _ in enumerate(MODES):
        user_create(username=f"latency-{i}", password=PASSWORD, roles=(WORKERS,))
    dataset = Dataset.objects.create(name="latency-bench")
    report = images_ingest(
        dataset=dataset, items=[IngestItem(f"{i}.jpg", photo_like_jpeg(i)) for i in range(n_tasks)]
    )
    if report.rejected:
        raise SystemExit(f"setup: {len(report.rejected)} images rejected, e.g. {report.rejected[0]}")
    concept = Concept.objects.create(wnid="n02084071", name="dog", gloss="a domesticated canid")
    vote_tasks_create(dataset=dataset, concept=concept, answers_wanted=1)


def stored_answers() -> tuple[int, int]:
    """Submitted answers and distinct tasks among them (equal when no answer was stored twice)."""
    from annotation.models import Assignment, AssignmentState

    submitted = Assignment.objects.filter(state=AssignmentState.SUBMITTED)
    return submitted.count(), submitted.values("task_id").distinct().count()


def sign_in(page, base_url: str, username: str, query: str) -> None:
    page.goto(f"{base_url}/accounts/login/?next=/worker/{query}")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base_url}/worker/{query}")


def answer(page, count: int) -> list[float]:
    """Answer `count` tasks with Y, each once the page takes answers; the latency of each, in ms."""
    samples: list[float] = []
    for _ in range(count):
        page.locator("#task-body[data-answerable]").wait_for()
        before = page.evaluate("() => window.__latency.samples.length")
        page.keyboard.press("y")
        page.wait_for_function(f"() => window.__latency.samples.length > {before}")
        samples.append(page.evaluate("() => window.__latency.samples.at(-1)"))
    return samples


def report(results: dict[str, list[float]], stored: tuple[int, int], args) -> None:
    print()
    print(
        f"keypress -> next task visible, {args.answers} answers per mode (after {WARM_UP} warm-up answers),"
    )
    print(f"real Chromium, gunicorn ({args.gunicorn_workers} sync workers) + PostgreSQL on loopback")
    print()
    print(
        f"| {'mode':<12} | {'answers':>7} | {'median ms':>9} | {'p95 ms':>7} | {'max ms':>7} | {'mean ms':>7} |"
    )
    print(f"|{'-' * 14}|{'-' * 9}|{'-' * 11}|{'-' * 9}|{'-' * 9}|{'-' * 9}|")
    for mode, samples in results.items():
        print(
            f"| {mode:<12} | {len(samples):>7} | {statistics.median(samples):>9.1f} | "
            f"{percentile(samples, 95):>7.1f} | {max(samples):>7.1f} | {statistics.fmean(samples):>7.1f} |"
        )
    fast, slow = results["prefetch"], results["no prefetch"]
    print()
    print(f"median ratio, no prefetch / prefetch: {statistics.median(slow) / statistics.median(fast):.1f}x")
    met = statistics.median(fast) < TARGET_MEDIAN_MS and percentile(fast, 95) < TARGET_P95_MS
    print(
        f"target (prefetch: median < {TARGET_MEDIAN_MS:.0f} ms, p95 < {TARGET_P95_MS:.0f} ms): "
        f"{'met' if met else 'NOT met'}"
    )
    given = len(MODES) * (WARM_UP + sum(len(samples) for samples in results.values()) // len(MODES))
    print(f"answers given: {given}; stored: {stored[0]}, on {stored[1]} distinct tasks")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=200, help="timed answers per mode")
    parser.add_argument("--quick", action="store_true", help="40 answers per mode")
    parser.add_argument("--blocks", type=int, default=4, help="alternating blocks per mode")
    parser.add_argument("--gunicorn-workers", type=int, default=2)
    parser.add_argument(
        "--admin-url",
        default=os.environ.get("BENCH_POSTGRES_URL", f"postgres://postgres@{HOST}:5432/postgres"),
        help="PostgreSQL URL of a database to connect to when creating and dropping the bench database",
    )
    parser.add_argument("--keep-db", action="store_true", help="leave the bench database for inspection")
    args = parser.parse_args()
    if args.quick:
        args.answers = 40
    executable = shutil.which("chromium")
    if executable is None:
        raise SystemExit("needs the chromium browser (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    per_block = -(-args.answers // args.blocks)
    # Every timed answer, the warm-up, and what each page holds (on screen, ahead) at the end, with room.
    n_tasks = len(MODES) * (per_block * args.blocks + WARM_UP + 2) + 4
    var_dir = tempfile.mkdtemp(prefix="crowdlabel-latency-")
    env = server_env(f"{args.admin_url.rsplit('/', 1)[0]}/{DB_NAME}", var_dir)
    os.environ.update(env)
    print(f"setting up database {DB_NAME}: migrate, {n_tasks} tasks on their own images ...", flush=True)
    database_recreate(args.admin_url)
    gunicorn = None
    results: dict[str, list[float]] = {mode: [] for mode in MODES}
    try:
        started = time.time()
        data_create(n_tasks)
        print(f"  done in {time.time() - started:.1f} s", flush=True)
        from django.db import connections

        from tests.browser_fixtures import CHROMIUM_ARGS

        connections.close_all()
        port = free_port()
        base_url = f"http://{HOST}:{port}"
        with open(os.path.join(var_dir, "gunicorn.log"), "w") as log:
            gunicorn = gunicorn_start(port, env, args.gunicorn_workers, "sync", log)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
                pages = {}
                for i, (mode, query) in enumerate(MODES.items()):
                    context = browser.new_context(viewport={"width": 1100, "height": 800})
                    context.set_default_timeout(30_000)
                    page = context.new_page()
                    page.add_init_script(PROBE)
                    sign_in(page, base_url, f"latency-{i}", query)
                    answer(page, WARM_UP)
                    pages[mode] = page
                for block in range(args.blocks):
                    for mode, page in pages.items():
                        results[mode].extend(answer(page, per_block))
                    print(f"  block {block + 1}/{args.blocks} done", flush=True)
                for page in pages.values():  # the last answers may still be on their way
                    page.wait_for_function("() => !sessionStorage.getItem('crowdlabel:pending')")
                browser.close()
            gunicorn_stop(gunicorn)
            gunicorn = None
        stored = stored_answers()
    finally:
        if gunicorn is not None:
            gunicorn_stop(gunicorn)
        from django.db import connections

        connections.close_all()
        if not args.keep_db:
            database_recreate(args.admin_url, drop_only=True)
        shutil.rmtree(var_dir, ignore_errors=True)
    report(results, stored, args)


if __name__ == "__main__":
    main()
