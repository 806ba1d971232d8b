"""The platform's roles (Django groups) and the DRF permissions that check them."""

from __future__ import annotations

from rest_framework.permissions import BasePermission

WORKERS = "workers"
REVIEWERS = "reviewers"
ORGANIZERS = "organizers"
ALL_ROLES = (WORKERS, REVIEWERS, ORGANIZERS)


def has_role(user, role: str) -> bool:
    if not user or not user.is_authenticated:
        return False
    if user.is_superuser:
        return True
    # Cache the user's groups on the instance: permissions run several times per request.
    cached = getattr(user, "_crowdlabel_roles", None)
    if cached is None:
        cached = set(user.groups.values_list("name", flat=True))
        user._crowdlabel_roles = cached
    return role in cached


class IsWorker(BasePermission):
    message = "Only crowd workers can take and answer tasks."

    def has_permission(self, request, view) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and hasattr(user, "worker"))


class IsOrganizer(BasePermission):
    message = "Only organizers can do this."

    def has_permission(self, request, view) -> bool:
        return has_role(request.user, ORGANIZERS)


class IsReviewer(BasePermission):
    message = "Only reviewers can do this."

    def has_permission(self, request, view) -> bool:
        return has_role(request.user, REVIEWERS)
