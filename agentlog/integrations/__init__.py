"""Adapters between agentlog sessions and agent frameworks or provider APIs.

Each module imports its framework only when it is used; the frameworks are optional
extras (``pip install agentlog[openai-agents]``). See docs/providers.md,
docs/openai-agents.md and docs/pydantic-ai.md.
"""
