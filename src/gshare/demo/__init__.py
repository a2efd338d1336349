"""`make demo`: the platform with a simulated GPU cluster, an nginx in front of session pages
(configured as ingress-nginx configures the operator's Ingress objects) and real JupyterLab
processes standing in for session pods."""
