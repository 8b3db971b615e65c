//! Integration tests: diagnose.
