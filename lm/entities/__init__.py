"""Entity embeddings for the LM side: wikipedia2vec vectors, the E-BERT map into a masked LM's
word-piece space, subject linking, a FAISS entity index and entity-level answers (E-BERT §3–4)."""
