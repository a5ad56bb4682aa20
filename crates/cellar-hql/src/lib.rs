//! HQL: the statements of the Cellar shell.
