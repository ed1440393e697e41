"""Errors of the output writer, importable without loading the renderers."""

from __future__ import annotations


class RenderBusyError(Exception):
    """Another render is writing into the same output directory."""
