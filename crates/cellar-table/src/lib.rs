//! Tables of cells on the Cellar engine.
