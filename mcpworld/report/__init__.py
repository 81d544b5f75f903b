"""Paper tables and plots from the MLflow store."""
