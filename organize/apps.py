from django.apps import AppConfig


class OrganizeConfig(AppConfig):
    name = "organize"
    verbose_name = "Organizer workspace"
