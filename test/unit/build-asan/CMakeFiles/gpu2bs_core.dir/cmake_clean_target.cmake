file(REMOVE_RECURSE
  "libgpu2bs_core.a"
)
