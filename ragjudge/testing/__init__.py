"""Test support that ships with ragjudge: a local OpenAI-compatible server with scripted
responders and fault injection (see ``ragjudge.testing.server``)."""
