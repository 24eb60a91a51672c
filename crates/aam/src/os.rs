//! The OS machine.
