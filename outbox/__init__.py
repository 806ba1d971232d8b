"""The transactional outbox: background work recorded in the database with the state change that needs it."""
