"""The text side of the KB: Wikipedia paragraphs, a BM25 index (tantivy or Elasticsearch),
co-occurrence counts, the retrieval baseline and evidence paragraphs for queries."""
