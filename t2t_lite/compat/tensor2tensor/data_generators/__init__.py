"""tensor2tensor.data_generators's twins: the names a usr_dir imports from it."""
