"""Coffer's trusted core.

Owns configuration, the seal, the encryption barrier, storage views, the
router and mount table, tokens, policies and secrets engines (the command-line
client lives apart, in ``cli``). It never imports aiohttp (the HTTP edge lives in ``api``) nor
pysyncobj (consensus lives in ``consensus``), so the core can be driven and
tested without either.
"""
