from django.apps import AppConfig


class HierarchyConfig(AppConfig):
    name = "hierarchy"
