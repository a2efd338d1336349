"""GShare: GPU sharing for interactive work on Kubernetes."""

__version__ = "0.1.0"
