"""The token store (``auth/token/``): the core's own auth method, one per namespace."""
