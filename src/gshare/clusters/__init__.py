"""Clusters: the registry, the kubeconfig store, the Kubernetes adapter, internal tokens."""
