"""The pure domain core of evalsite. Nothing under this package imports Django."""
