//! Why Cellar is behind where it is: `causes.json` beside the report, written by hand, one
//! entry per known loss with its measured cause and the design note that explains it. The
//! report puts the cause beside each matching row of "Where Cellar is behind", so that a
//! loss is never shown without its explanation, nor an explanation without its loss.
//!
//! ```json
//! { "causes": [ { "workload": "mapfile", "variant": "lookup", "engine": "lmdb",
//!                 "cause": "…", "note": "../design/cold-start-warm-up.md" } ] }
//! ```
//!
//! An entry matches a row when `workload` is equal, the row's variant starts with `variant`
//! (empty: every variant) and `engine` is equal (empty: every engine); the first matching
//! entry wins. `note` is a link relative to the report, may be empty.

use std::path::Path;

use serde::Deserialize;

use crate::error::Result;

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Causes {
    pub causes: Vec<Cause>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cause {
    pub workload: String,
    #[serde(default)]
    pub variant: String,
    #[serde(default)]
    pub engine: String,
    pub cause: String,
    #[serde(default)]
    pub note: String,
}

impl Causes {
    /// The first entry explaining `engine` beating Cellar on `workload`/`variant`.
    pub fn find(&self, workload: &str, variant: &str, engine: &str) -> Option<&Cause> {
        self.causes.iter().find(|c| {
            c.workload == workload
                && variant.starts_with(c.variant.as_str())
                && (c.engine.is_empty() || c.engine == engine)
        })
    }
}

/// `Ok(None)` if the file is not there; an error if it is there but not the format above.
pub fn load(path: &Path) -> Result<Option<Causes>> {
    super::load_optional_json(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_match_by_workload_variant_prefix_and_engine() {
        let c: Causes = serde_json::from_str(
            r#"{"causes":[
                {"workload":"mapfile","variant":"lookup","engine":"lmdb","cause":"a"},
                {"workload":"mapfile","cause":"b","note":"x.md"}]}"#,
        )
        .unwrap();
        assert_eq!(
            c.find("mapfile", "lookup single", "lmdb").unwrap().cause,
            "a"
        );
        assert_eq!(
            c.find("mapfile", "lookup single", "hbase").unwrap().cause,
            "b"
        );
        assert_eq!(
            c.find("mapfile", "insert buffered", "lmdb").unwrap().note,
            "x.md"
        );
        assert!(c.find("ycsb_c", "t4", "fjall").is_none());
        assert!(serde_json::from_str::<Causes>(r#"{"causes":[{"workload":"w"}]}"#).is_err());
    }
}
