"""Configuration: YAML loading with line numbers, policies, run configuration layers."""
