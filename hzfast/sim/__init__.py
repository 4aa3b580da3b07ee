"""The fault-injecting simulator of the migration protocol (filled by the
safe-migrations work; see docs/design.md section 7)."""
