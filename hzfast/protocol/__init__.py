"""The sans-I/O migration protocol node (filled by the safe-migrations work; see
docs/design.md section 7)."""
