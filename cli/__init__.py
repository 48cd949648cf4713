"""The ``coffer`` command-line client (everything except ``coffer server``).

It mirrors the Vault CLI (single-dash flags such as ``-key-shares=5``, table
or JSON output, Vault's exit codes) so operators and scripts used to ``vault``
can drive Coffer unchanged, and it talks to the server only through the public
HTTP API with the standard library (``urllib``), so the core never needs
aiohttp and the client has no dependencies of its own. It is a client, not part
of the trusted core: it lives apart from ``node`` and may not import it (see
``cli/DESIGN.md``). ``cli.main.main`` is the entry point; each command lives in
its own small module.
"""
