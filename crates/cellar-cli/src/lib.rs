//! The library side of the `cellar` command: the HQL shell's statement executor and its
//! run modes, so that tests (and other front ends) can drive them in process.

pub mod shell;
