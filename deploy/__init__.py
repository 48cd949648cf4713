"""Deployment files; ``deploy.clusterctl`` drives the compose cluster (importable by chaos)."""
