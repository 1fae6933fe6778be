"""Retrieval strategies and the code they share.

Strategies, each standing alone (one module or package, registered in base.py): bm25, dense,
hybrid, hikey, lilac/, fif/, mirag/, mmgraph, strata. A strategy imports the base and the shared
modules below, never another strategy; strata composes other strategies through the registry
(`get_retriever_class`) with their typed params.

Shared modules: base (the Retriever interface, params models, registry), scoring (score
arithmetic and the per-question score cache), graphwalk (graph arrays, late interaction, edge
scores, neighbours), decompose/ (the question's subqueries: task and offline rules), entities
(names in text, bridge entities), titles (document titles named in text), traits (measured corpus
traits).

Not here: the stages run around a strategy (backend/stages/) and the query pipeline (backend/query.py).
"""
