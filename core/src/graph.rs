//! `graph.json`: BSARD's legislative graph, written by the dataset builder (`splits`) and read by
//! the systems that use the structure (CuSINeS negatives, DR+GNN, QABISAR in `baselines`).
//!
//! One node per code, per hierarchy level below it (book, part, act, chapter, section, subsection)
//! and per article; `hierarchy` holds parent → child edges, `sequence` article → next article of the
//! same code, and `article_nodes` the node of each article (whose id is also its corpus doc id).
//!
//! ```
//! use lexbench_core::graph::{GraphNode, LegalGraph};
//! use lexbench_core::{ArticleId, DocId};
//!
//! let mut g = LegalGraph::default();
//! g.nodes.push(GraphNode { kind: "code".into(), label: "Code civil".into() });
//! g.nodes.push(GraphNode { kind: "article".into(), label: "7".into() });
//! g.hierarchy.push((0, 1));
//! g.article_nodes.insert(ArticleId::new("7")?, 1);
//! assert_eq!(g.node_of(&DocId::new("7")?), Some(1));
//! assert_eq!(g.node_of(&DocId::new("8")?), None);
//! # Ok::<(), lexbench_core::Error>(())
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::ids::{ArticleId, DocId};

/// The graph's file name in a dataset folder.
pub const GRAPH_FILE: &str = "graph.json";

/// A node of the legislative graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphNode {
    /// `code`, `book`, `part`, `act`, `chapter`, `section`, `subsection` or `article`.
    pub kind: String,
    /// The heading, or the article id.
    pub label: String,
}

/// The legislative graph and the sequential view: the content of `graph.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegalGraph {
    /// Nodes; articles' nodes are listed in `article_nodes`.
    pub nodes: Vec<GraphNode>,
    /// Parent → child edges (node indices).
    pub hierarchy: Vec<(usize, usize)>,
    /// Article → next article of the same code (node indices).
    pub sequence: Vec<(usize, usize)>,
    /// Article id → node index.
    pub article_nodes: BTreeMap<ArticleId, usize>,
}

impl LegalGraph {
    /// Reads a `graph.json` ([`crate::io::read_json`]: errors name the file and line).
    pub fn read(path: &Path) -> Result<Self> {
        crate::io::read_json(path)
    }

    /// Writes the graph as pretty JSON, atomically.
    pub fn write(&self, path: &Path) -> Result<()> {
        crate::io::write_json_pretty(path, self)
    }

    /// The node of corpus document `doc`, if it is an article of the graph.
    pub fn node_of(&self, doc: &DocId) -> Option<usize> {
        self.article_nodes.get(doc.as_str()).copied()
    }
}

#[cfg(test)]
mod tests {
    //! Properties: the file is pretty JSON with article ids as keys and edges as pairs, and reads back
    //! to the same graph; a malformed file names its line.
    use super::*;

    #[test]
    fn writes_and_reads_back() {
        let mut g = LegalGraph::default();
        g.nodes.push(GraphNode {
            kind: "code".into(),
            label: "C".into(),
        });
        g.nodes.push(GraphNode {
            kind: "article".into(),
            label: "12".into(),
        });
        g.hierarchy.push((0, 1));
        g.article_nodes.insert(ArticleId::new("12").unwrap(), 1);
        let dir = crate::testing::scratch_root().join(format!("lexbench-core-graph-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(GRAPH_FILE);
        g.write(&p).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(
            text.contains("\"article_nodes\": {\n    \"12\": 1\n  }"),
            "{text}"
        );
        assert!(
            text.contains("\"hierarchy\": [\n    [\n      0,\n      1\n    ]\n  ]"),
            "{text}"
        );
        assert_eq!(LegalGraph::read(&p).unwrap(), g);
        std::fs::write(&p, "{\n\"nodes\": [],\n\"article_nodes\": {\"a b\": 0}\n}").unwrap();
        let err = LegalGraph::read(&p).unwrap_err();
        assert_eq!(err.line_error().map(|(l, _)| l), Some(3), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
