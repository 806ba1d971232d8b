"""The test database's PostgreSQL server as an admin connection URL, for benches a test runs that create and drop
their own database."""

from django.conf import settings


def admin_url() -> str:
    db = settings.DATABASES["default"]
    user = db.get("USER") or "postgres"
    auth = f"{user}:{db['PASSWORD']}" if db.get("PASSWORD") else user
    return f"postgres://{auth}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/postgres"
