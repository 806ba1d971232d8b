"""Crowd providers: where workers come from (MTurk, a study link, in-house teams). Each provider module
registers one `CrowdProvider` with `base.register`; every provider's sessions answer bundles of micro-tasks
taken from the one queue (annotation/queue/)."""
