"""Contract test cases per port, run against every registered backend.

As ``eventsourcing`` ships ``ApplicationRecorderTestCase`` for any recorder,
these classes hold the cases any agentlog backend must pass: subclass one and
give it the ``subject`` fixture for your backend. ``tests/infrastructure/
test_contracts.py`` runs them against every backend in
``agentlog.infrastructure.backends.BACKENDS`` (and fails for a registered
backend it has no store for).
"""
