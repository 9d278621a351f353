"""The importer's error type."""


class UnsupportedOperationError(ValueError):
    """The model uses an operation the importer does not map to lamina IR."""
