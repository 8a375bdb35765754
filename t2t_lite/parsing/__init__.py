"""Constituency parsing as sequence-to-sequence (issue 4).

``trees``: the Tree type, Penn Treebank reader, preprocessing and printer;
``linearize``: tree <-> token sequence (Vinyals et al. 2015) with repair and
the constrained-decoding state machine; ``evalb``: an EVALB (COLLINS.prm)
compatible labelled bracketing scorer.
"""
