"""The version of memtide this recorder ships with (tests/cli/shell.rs keeps it equal to Cargo.toml's)."""

__version__ = "0.1.0"
