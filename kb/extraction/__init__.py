"""A knowledge base built by relation extraction: LAMA's RE_n and RE_o baselines (LAMA §4.3).

LAMA queried the pretrained extractor of Sorokin and Gurevych (2017) on the sentences aligned to
the test facts; that model was never released. Here a linear extractor is trained by distant
supervision on the same aligned sentences, with k-fold splits by subject entity so that every
sentence is labelled by a model that never saw that subject:

- `candidates`: sentences and entity mentions (T-REx annotated spans, label gazetteer, name shapes)
- `features`: lexical and shape features of a mention pair (between, around, the mentions)
- `extractor`: the k-fold training and held-out extraction (scikit-learn SGD logistic regression)
- `linking`: naive exact-label linking (RE_n) and the fact oracle (RE_o)
- `kb_build`: the extracted triples with confidences in named graphs `re-naive` and `re-oracle`
- `predictor`: objects of (subject, relation) ranked by confidence, by SPARQL
"""
