"""Per-fact statistics joined to a run, and the analyses over them (`kbc analyze`)."""
