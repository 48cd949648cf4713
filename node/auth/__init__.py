"""Authentication methods, mounted under ``auth/``; each returns ``Response.auth``."""
