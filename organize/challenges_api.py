"""Challenges of an organizer's dataset: create one over a frozen split version and add teams with their members
(`benchmark.challenges.challenge_create` and `challenge_team_add`, which hold the rules and audit each), and see
a challenge with its teams and leaderboard (`benchmark.challenges.leaderboard`)."""

from __future__ import annotations

from django.db.models import Count
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from benchmark import challenges
from benchmark.metrics import PROTOCOLS
from benchmark.models import Challenge, SplitVersion, Team
from benchmark.serializers import LeaderboardRowSerializer
from benchmark.services import BenchmarkError
from config.bounds import bounded_integer
from config.errors import Conflict
from config.roles import IsOrganizer

from .scoping import organizer_dataset


class ChallengeSerializer(serializers.ModelSerializer):
    split_version = serializers.IntegerField(source="split_version.number")
    teams = serializers.IntegerField(source="team_count")
    primary_metric = serializers.SerializerMethodField()

    class Meta:
        model = Challenge
        fields = [
            "id",
            "name",
            "protocol",
            "split_version",
            "submissions_per_window",
            "window_days",
            "teams",
            "primary_metric",
            "created_at",
        ]

    def get_primary_metric(self, challenge) -> str:
        return challenges.PRIMARY_METRIC.get(challenge.protocol, ("mAP", True))[0]


class ChallengeCreateSerializer(serializers.Serializer):
    name = serializers.SlugField(max_length=100)
    protocol = serializers.ChoiceField(choices=sorted(PROTOCOLS))
    split_version = bounded_integer(
        SplitVersion, "number", min_value=1, help_text="The number of a frozen split version."
    )
    submissions_per_window = serializers.IntegerField(min_value=1, max_value=100, default=2)
    window_days = serializers.IntegerField(min_value=1, max_value=365, default=7)


class TeamSerializer(serializers.ModelSerializer):
    members = serializers.SlugRelatedField(slug_field="username", many=True, read_only=True)
    submissions = serializers.IntegerField(source="submission_count")

    class Meta:
        model = Team
        fields = ["id", "name", "members", "submissions"]


class TeamCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    members = serializers.ListField(child=serializers.CharField(max_length=150), min_length=1, max_length=50)


class ChallengeDetailSerializer(serializers.Serializer):
    challenge = ChallengeSerializer()
    teams = TeamSerializer(many=True)
    leaderboard = LeaderboardRowSerializer(many=True)


def dataset_challenges(dataset):
    return (
        Challenge.objects.filter(dataset=dataset)
        .select_related("split_version")
        .annotate(team_count=Count("teams"))
        .order_by("-id")
    )


class DatasetChallengesView(APIView):
    """The dataset's challenges, or create one over the test split of a frozen split version."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=ChallengeSerializer(many=True))
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        return Response(ChallengeSerializer(dataset_challenges(dataset)[:200], many=True).data)

    @extend_schema(request=ChallengeCreateSerializer, responses={201: ChallengeSerializer})
    def post(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        form = ChallengeCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            challenge = challenges.challenge_create(
                dataset=dataset, actor=request.user, **form.validated_data
            )
        except challenges.NameTaken as exc:
            raise Conflict({exc.field: str(exc)}) from None
        except challenges.FieldRefused as exc:
            raise ValidationError({exc.field: str(exc)}) from None
        except BenchmarkError as exc:
            raise ValidationError({"detail": str(exc)}) from None
        challenge.team_count = 0
        return Response(ChallengeSerializer(challenge).data, status=status.HTTP_201_CREATED)


def _challenge(request, dataset_id: int, challenge_id: int):
    dataset = organizer_dataset(request.user, dataset_id)
    return get_object_or_404(dataset_challenges(dataset).select_related("dataset"), pk=challenge_id)


def _teams(challenge):
    return (
        Team.objects.filter(challenge=challenge)
        .annotate(submission_count=Count("submissions"))
        .prefetch_related("members")
        .order_by("name")
    )


class ChallengeDetailView(APIView):
    """A challenge of the dataset with its teams and its leaderboard (each team's best scored submission)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=ChallengeDetailSerializer)
    def get(self, request, dataset_id: int, challenge_id: int):
        challenge = _challenge(request, dataset_id, challenge_id)
        body = {
            "challenge": challenge,
            "teams": _teams(challenge),
            "leaderboard": challenges.leaderboard(challenge),
        }
        return Response(ChallengeDetailSerializer(body).data)


class ChallengeTeamsView(APIView):
    """Add a team to a challenge: its members (existing accounts, by username) may then submit."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(request=TeamCreateSerializer, responses={201: TeamSerializer})
    def post(self, request, dataset_id: int, challenge_id: int):
        challenge = _challenge(request, dataset_id, challenge_id)
        form = TeamCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            team = challenges.challenge_team_add(
                challenge=challenge, actor=request.user, **form.validated_data
            )
        except challenges.NameTaken as exc:
            raise Conflict({exc.field: str(exc)}) from None
        except challenges.FieldRefused as exc:
            raise ValidationError({exc.field: str(exc)}) from None
        return Response(
            TeamSerializer(_teams(challenge).get(pk=team.pk)).data, status=status.HTTP_201_CREATED
        )
