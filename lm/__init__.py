"""The neural side: masked-LM and causal-LM probing, E-BERT, entity embeddings, ensembles."""
