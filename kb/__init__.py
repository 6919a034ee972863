"""The symbolic side: triple store, graph analytics, text index and KB baselines."""
