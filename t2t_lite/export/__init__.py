"""Exporting a trained model: a SavedModel that maps raw strings to translations
(or trees), its tokenization and beam search inside the graph."""
