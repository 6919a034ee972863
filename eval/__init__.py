"""The ground floor: shared data types, LAMA loaders, filters, metrics and report writers."""
