"""What every auth method shares: the ``token_*`` settings of the tokens it issues."""

from node.auth.common.token_settings import TOKEN_FIELDS, TokenSettings, token_fields

__all__ = ["TOKEN_FIELDS", "TokenSettings", "token_fields"]
