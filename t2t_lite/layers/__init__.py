"""Keras 3 layers of the Transformer (3-D [batch, length, depth] activations)."""
