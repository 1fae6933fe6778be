"""Strata backend: PDFs -> layered graph -> retrieval -> packed evidence -> cited answers.

The UI talks only to `backend.service`; everything else is internal.
"""
