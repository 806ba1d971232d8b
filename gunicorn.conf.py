"""gunicorn's settings for Crowdlabel, read by `gunicorn config.wsgi` started from the project's root (gunicorn
loads ./gunicorn.conf.py by default); flags on the command line override them.

`preload_app`: the master imports Django, the apps and the URL map once and forks its workers from that, so a
worker that dies (killed, out of memory) is replaced in a few milliseconds instead of importing the project again
(about 1.5 s of CPU each, taken from the requests being served on a small machine; bench/load.py
--kill-gunicorn-worker measures it). It is safe because nothing opens a database or broker connection, a file or
a thread while the project is imported (tests/faults/test_gunicorn_preload.py checks that the master holds no
database connection). A code change then needs a restart of the master, as any deployment does.
"""

preload_app = True
