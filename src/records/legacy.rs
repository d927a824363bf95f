//! Legacy message sets (magic 0 and 1), read-only.
