"""The README's `make run` setup path on a fresh machine: migrate an empty SQLite file, load the demo, twice."""

from __future__ import annotations

import sqlite3

import pytest

from tests.config.conftest import clean_env, run

pytestmark = pytest.mark.slow  # two fresh Django processes and a full migrate: ~20-40 s on a loaded machine


def count(db_path, table: str) -> int:
    with sqlite3.connect(db_path) as db:
        return db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def test_migrate_and_load_demo_succeed_on_an_empty_sqlite_file_and_reloading_adds_nothing(var_dir):
    env = clean_env(var_dir)
    db_path = var_dir / "crowdlabel.sqlite3"
    assert not db_path.exists()

    migrated = run(["manage.py", "migrate", "--noinput"], env)
    assert migrated.returncode == 0, migrated.stderr
    assert db_path.exists()

    first = run(["manage.py", "load_demo"], env)
    assert first.returncode == 0, first.stderr
    for login in ("organizer", "organizer-demo-pass", "worker", "worker-demo-pass"):
        assert login in first.stdout, first.stdout
    tasks = count(db_path, "annotation_task")
    images = count(db_path, "annotation_image")
    assert tasks > 0 and images > 0
    with sqlite3.connect(db_path) as db:
        kinds = dict(db.execute("SELECT kind, COUNT(*) FROM annotation_task GROUP BY kind").fetchall())
        shown = db.execute("SELECT COUNT(*) FROM annotation_conceptexample WHERE state = 'shown'").fetchone()[
            0
        ]
    # A newcomer finds every page the demo promises: yes/no votes, boxes to draw, a drawn box to check.
    assert kinds["binary_vote"] > 0 and kinds["box_draw"] >= 4 and kinds["question"] >= 1, kinds
    assert kinds["hierarchy_question"] >= 1, kinds
    assert shown == 2
    assert list((var_dir / "media").rglob("*.png")), "demo images were not stored under the var dir"

    second = run(["manage.py", "load_demo"], env)
    assert second.returncode == 0, second.stderr
    assert "0 new vote tasks" in second.stdout
    assert count(db_path, "annotation_task") == tasks
    assert count(db_path, "annotation_image") == images
    assert count(db_path, "annotation_conceptexample") == 2
    assert count(db_path, "auth_user") == 4 + 6  # the demo accounts and the scripted demo crowd
    # The same logins are printed again, with the same tokens.
    assert first.stdout.splitlines()[-4:] == second.stdout.splitlines()[-4:]
