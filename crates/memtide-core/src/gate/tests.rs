//! Unit tests of the gate on hand-built traces.
