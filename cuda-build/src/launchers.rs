//! Typed kernel launchers generated from CUDA sources (feature `launchers`). OWNER: launchers helper.
