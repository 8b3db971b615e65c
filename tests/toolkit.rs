//! Integration tests: toolkit.
