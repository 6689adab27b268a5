# Empty compiler generated dependencies file for gpu2bs_core.
# This may be replaced when dependencies are built.
