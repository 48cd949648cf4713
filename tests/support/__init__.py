"""Test helpers that are not tests: the identity-provider emulator."""
