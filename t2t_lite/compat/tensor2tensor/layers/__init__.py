"""tensor2tensor.layers's twins: the names a usr_dir imports from it."""
