"""The core's lifecycle (uninitialised → sealed → unsealed) and request pipeline."""
