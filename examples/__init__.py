"""Bundled example candidates (data: `triton/`, `hip/`; `kernelvault.pipelines.candidates`)."""
