//! Integration tests: compile.
