"""tensor2tensor.utils's twins: the names a usr_dir imports from it."""
