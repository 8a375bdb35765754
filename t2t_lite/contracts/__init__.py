"""Contracts that floors which must not import each other share: the reserved ids
of every vocabulary, the decode state's loop shapes, the decode-constraint protocol.

They sit on the ground floor and import nothing of the package, so the layers,
models, search and problems that agree on them need not reach for one another.
"""
