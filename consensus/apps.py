from django.apps import AppConfig


class ConsensusConfig(AppConfig):
    name = "consensus"
