//! Reading frames from files and stdin: hex or binary.
