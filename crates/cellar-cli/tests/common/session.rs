//! An HQL session on a store in a temporary directory, driven in process.

use cellar_engine::{Durability, Options};
use cellar_load::NoProgress;
use cellar_shell::exec::{ExecError, Session};
use cellar_table::CellStore;

pub struct TestShell {
    pub dir: tempfile::TempDir,
    store: Option<CellStore>,
    pub durability: Durability,
}

impl TestShell {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = CellStore::open(dir.path(), Options::default()).expect("open store");
        TestShell {
            dir,
            store: Some(store),
            durability: Durability::Buffered,
        }
    }

    pub fn store(&self) -> &CellStore {
        self.store.as_ref().expect("store is open")
    }

    /// Runs every statement of `script` in order and returns what they printed; the first
    /// error ends the run. Panics on a syntax error.
    pub fn run(&self, script: &str) -> Result<String, ExecError> {
        let session = Session {
            store: self.store(),
            durability: self.durability,
            progress: &NoProgress,
        };
        let mut out = Vec::new();
        for s in cellar_hql::parse(script).unwrap_or_else(|e| panic!("{script:?}: {e}")) {
            session.execute(&s.node, &mut out)?;
        }
        Ok(String::from_utf8(out).expect("output is UTF-8"))
    }

    /// [`Self::run`] that must succeed.
    pub fn ok(&self, script: &str) -> String {
        self.run(script)
            .unwrap_or_else(|e| panic!("{script:?} failed: {e}"))
    }

    /// Closes the store and opens it again.
    pub fn reopen(&mut self) {
        let store = self.store.take().expect("store is open");
        store.db().clone().close().expect("close");
        drop(store);
        self.store = Some(CellStore::open(self.dir.path(), Options::default()).expect("reopen"));
    }
}
