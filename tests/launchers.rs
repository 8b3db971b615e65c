//! Integration tests: launchers.
