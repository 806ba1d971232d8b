from rest_framework import serializers

from .models import Message, MessageState


class MessageSerializer(serializers.ModelSerializer):
    class Meta:
        model = Message
        fields = [
            "id",
            "task_name",
            "args",
            "dataset",
            "state",
            "attempts",
            "created_at",
            "started_at",
            "finished_at",
            "last_error",
        ]
        read_only_fields = fields


class MessageFilterSerializer(serializers.Serializer):
    state = serializers.ChoiceField(choices=MessageState.choices, required=False)
