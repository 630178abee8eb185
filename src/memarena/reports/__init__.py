"""Per-paper analysis for the notebooks (tables, figures, case studies); the pipeline's own
results (store, records, metrics, loggers, viewer) are in :mod:`memarena.results`."""
