"""``agentlog demo``: a scripted agent session, its script, and the command.

:mod:`~agentlog.infrastructure.cli.demo.agent` writes a session the way an agent
loop does, :mod:`~agentlog.infrastructure.cli.demo.script` runs the demo's story
through the public API, and :mod:`~agentlog.infrastructure.cli.demo.command` prints
it. It ships in the wheel because ``agentlog demo`` runs it; only the command line
imports it.
"""
