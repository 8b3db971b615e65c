//! Integration tests: arch.
