"""The platform's role groups exist from the first `migrate`, not only after the demo loader."""

from django.db import migrations

ROLE_GROUPS = ("workers", "reviewers", "organizers")  # config.roles, frozen as they were when this ran


def groups_create(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in ROLE_GROUPS:
        Group.objects.get_or_create(name=name)


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("crowd", "0001_initial"),
    ]

    operations = [migrations.RunPython(groups_create, migrations.RunPython.noop)]
