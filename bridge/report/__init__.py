"""`kbc report`: one HTML page (and Markdown) with the papers' tables and figures for a run."""
