"""The per-cluster operator: reconciles GShareSession resources and reports back to the API."""
