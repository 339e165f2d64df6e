"""The basement: helpers every app stands on (async helpers, lean SQL writers, metrics,
events, logs, tracing, store clients). Imports Django and the standard library, never an
app of the project."""
