"""`kbc serve`: the side-by-side explorer (web page and JSON API)."""
