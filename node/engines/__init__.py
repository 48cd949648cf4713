"""Secrets engines mounted under paths, each seeing only its own storage view."""
