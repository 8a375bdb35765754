"""tensor2tensor.models's twins: the names a usr_dir imports from it."""
