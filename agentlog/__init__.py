"""agentlog: an event-sourced store for AI-agent sessions.

The public API is exported from :mod:`agentlog.application`; this top module
re-exports nothing so that ``import agentlog`` stays cheap.
"""
