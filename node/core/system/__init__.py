"""The ``sys/`` backend: control endpoints that need an unsealed core."""
