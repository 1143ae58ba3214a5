//! The structural views: distances in the legislative graph (multi-source BFS) and in article order,
//! and [`CorpusStructure`], which holds both for a corpus (BSARD) or one judgment (ECtHR).

use std::collections::{BTreeMap, HashMap, VecDeque};

use super::fusion::distance_difficulty;
use crate::error::{Error, Result};

/// The undirected adjacency lists of a graph of `nodes` nodes from directed edges (BSARD's
/// `LegalGraph::hierarchy`, parent → child): each edge is listed at both ends, in edge order.
/// Errors on an endpoint ≥ `nodes`.
pub fn undirected_adjacency(nodes: usize, edges: &[(usize, usize)]) -> Result<Vec<Vec<usize>>> {
    let mut adj = vec![Vec::new(); nodes];
    for &(a, b) in edges {
        if a >= nodes || b >= nodes {
            return Err(Error::data(
                "curriculum graph",
                format!("edge ({a}, {b}) names a node outside the {nodes} nodes"),
            ));
        }
        adj[a].push(b);
        adj[b].push(a);
    }
    Ok(adj)
}

/// Shortest-path distances (in edges) from the nearest of `sources` to every node, by one multi-source
/// breadth-first search: `O(nodes + edges)` per call, nothing cached. `None` = unreachable (BSARD's
/// codes are separate trees). No source gives all `None`. Errors on a source or neighbour index out of
/// range.
pub fn hierarchical_distances(adj: &[Vec<usize>], sources: &[usize]) -> Result<Vec<Option<usize>>> {
    let mut dist = vec![None; adj.len()];
    let mut queue = VecDeque::new();
    for &s in sources {
        if s >= adj.len() {
            return Err(Error::data(
                "curriculum graph",
                format!("source node {s} outside the {} nodes", adj.len()),
            ));
        }
        if dist[s].is_none() {
            dist[s] = Some(0);
            queue.push_back(s);
        }
    }
    while let Some(u) = queue.pop_front() {
        let du = dist[u].unwrap_or(0);
        for &v in &adj[u] {
            match dist.get(v) {
                None => {
                    return Err(Error::data(
                        "curriculum graph",
                        format!("node {u} has neighbour {v} outside the {} nodes", adj.len()),
                    ));
                }
                Some(Some(_)) => {}
                Some(None) => {
                    dist[v] = Some(du + 1);
                    queue.push_back(v);
                }
            }
        }
    }
    Ok(dist)
}

/// `(group, position)` of every node from "next in order" edges (BSARD's `LegalGraph::sequence`:
/// article → next article of the same code). Each chain is a group; groups are numbered by their first
/// node's index, ascending, and positions count from 0 along the chain. Nodes on no edge get `None`
/// (an article alone in its code: no other article shares its group anyway). Errors on an index ≥
/// `nodes`, a self-loop, a node with two successors or two predecessors, or a cycle.
pub fn sequence_positions(nodes: usize, sequence: &[(usize, usize)]) -> Result<Vec<Option<(usize, usize)>>> {
    let mut next = vec![None; nodes];
    let mut has_prev = vec![false; nodes];
    for &(a, b) in sequence {
        if a >= nodes || b >= nodes || a == b {
            return Err(Error::data(
                "curriculum sequence",
                format!("bad edge ({a}, {b}) for {nodes} nodes (outside, or a self-loop)"),
            ));
        }
        if next[a].replace(b).is_some() {
            return Err(Error::data(
                "curriculum sequence",
                format!("node {a} has two successors"),
            ));
        }
        if std::mem::replace(&mut has_prev[b], true) {
            return Err(Error::data(
                "curriculum sequence",
                format!("node {b} has two predecessors"),
            ));
        }
    }
    let mut pos = vec![None; nodes];
    let mut group = 0;
    for head in 0..nodes {
        if has_prev[head] || next[head].is_none() {
            continue;
        }
        let (mut node, mut p) = (Some(head), 0);
        while let Some(n) = node {
            pos[n] = Some((group, p));
            p += 1;
            node = next[n];
        }
        group += 1;
    }
    if let Some(n) = (0..nodes).find(|&n| pos[n].is_none() && (has_prev[n] || next[n].is_some())) {
        return Err(Error::data(
            "curriculum sequence",
            format!("node {n} lies on a cycle"),
        ));
    }
    Ok(pos)
}

/// The statutes **linearised as one sequence** (CuSINeS's sequential view reads the statutes as one
/// linear sequence, not one sequence per code): every chain of `sequence` (article → next article
/// of the same code, see [`sequence_positions`]) and every node of `singles` on no chain (an article
/// alone in its code) is a run; the runs are laid end to end in the order of their first node's index
/// (BSARD's `graph.json` numbers nodes in the release's order, so this is the corpus order, code after
/// code), and a node's position is its place in that one sequence, all in group 0. Nodes neither on a
/// chain nor in `singles` (codes, books, …) get `None`. Errors as [`sequence_positions`] does, and on
/// a node of `singles` ≥ `nodes`.
pub fn linear_positions(
    nodes: usize,
    sequence: &[(usize, usize)],
    singles: impl IntoIterator<Item = usize>,
) -> Result<Vec<Option<(usize, usize)>>> {
    let chained = sequence_positions(nodes, sequence)?;
    let mut next = vec![None; nodes];
    for &(a, b) in sequence {
        next[a] = Some(b);
    }
    // Run heads, by node index: the first node of every chain, and every single off the chains.
    let mut heads: BTreeMap<usize, bool> = (0..nodes)
        .filter(|&n| matches!(chained[n], Some((_, 0))))
        .map(|n| (n, true))
        .collect();
    for n in singles {
        if n >= nodes {
            return Err(Error::data(
                "curriculum sequence",
                format!("article node {n} outside the {nodes} nodes"),
            ));
        }
        if chained[n].is_none() {
            heads.insert(n, false);
        }
    }
    let mut positions = vec![None; nodes];
    let mut offset = 0;
    for (head, chain) in heads {
        let mut node = Some(head);
        while let Some(n) = node {
            positions[n] = Some((0, offset));
            offset += 1;
            node = if chain { next[n] } else { None };
        }
    }
    Ok(positions)
}

/// For each of `targets`, the smallest `|position difference|` to one of `sources` in the same group
/// (indices into `positions`). `None` when the target or every source has no position, or no source
/// shares its group ("infinitely far"). Errors on an index out of range.
pub fn sequential_distances(
    positions: &[Option<(usize, usize)>],
    sources: &[usize],
    targets: &[usize],
) -> Result<Vec<Option<usize>>> {
    let at = |i: usize| {
        positions.get(i).copied().ok_or_else(|| {
            Error::data(
                "curriculum sequence",
                format!("index {i} outside the {} positions", positions.len()),
            )
        })
    };
    let mut by_group: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &s in sources {
        if let Some((g, p)) = at(s)? {
            by_group.entry(g).or_default().push(p);
        }
    }
    for v in by_group.values_mut() {
        v.sort_unstable();
    }
    targets
        .iter()
        .map(|&t| {
            Ok(at(t)?.and_then(|(g, p)| {
                let ps = by_group.get(&g)?;
                let i = ps.partition_point(|&q| q < p);
                let after = ps.get(i).map(|&q| q - p);
                let before = i.checked_sub(1).map(|j| p - ps[j]);
                after.into_iter().chain(before).min()
            }))
        })
        .collect()
}

/// The structure the hierarchical and sequential views read: an undirected graph over nodes, each doc
/// index's node, and each node's `(group, position)` in reading order.
///
/// - BSARD ([`CorpusStructure::from_legal_graph`]): the legislative tree code → book → … → article and
///   the article order within each code.
/// - ECtHR ([`CorpusStructure::from_judgment`]): the paragraphs of one judgment under their sections.
#[derive(Debug, Clone, PartialEq)]
pub struct CorpusStructure {
    adjacency: Vec<Vec<usize>>,
    doc_node: Vec<Option<usize>>,
    positions: Vec<Option<(usize, usize)>>,
}

impl CorpusStructure {
    /// From parts: `adjacency` (undirected, by node), `doc_node[d]` = the node of doc index `d` (`None`:
    /// a doc outside the graph, infinitely far in both views), `positions[n]` = node `n`'s
    /// `(group, position)`. Errors when an index is out of range or `positions` is not one per node.
    pub fn new(
        adjacency: Vec<Vec<usize>>,
        doc_node: Vec<Option<usize>>,
        positions: Vec<Option<(usize, usize)>>,
    ) -> Result<Self> {
        let nodes = adjacency.len();
        if positions.len() != nodes {
            return Err(Error::data(
                "curriculum structure",
                format!("{} positions for {nodes} nodes", positions.len()),
            ));
        }
        if let Some(v) = adjacency.iter().flatten().find(|&&v| v >= nodes) {
            return Err(Error::data(
                "curriculum structure",
                format!("neighbour {v} outside the {nodes} nodes"),
            ));
        }
        if let Some(n) = doc_node.iter().flatten().find(|&&n| n >= nodes) {
            return Err(Error::data(
                "curriculum structure",
                format!("doc node {n} outside the {nodes} nodes"),
            ));
        }
        Ok(Self {
            adjacency,
            doc_node,
            positions,
        })
    }

    /// BSARD: `nodes` graph nodes, `hierarchy` parent → child edges (made undirected), `sequence`
    /// article → next article edges, and `doc_node[d]` = the graph node of doc index `d` (from
    /// `LegalGraph::article_nodes` and the corpus order). The sequential view reads the statutes
    /// linearised as one sequence ([`linear_positions`]): the articles of every code, code after code,
    /// so two articles of different codes are a finite distance apart.
    pub fn from_legal_graph(
        nodes: usize,
        hierarchy: &[(usize, usize)],
        sequence: &[(usize, usize)],
        doc_node: Vec<Option<usize>>,
    ) -> Result<Self> {
        let singles: Vec<usize> = doc_node.iter().flatten().copied().collect();
        Self::new(
            undirected_adjacency(nodes, hierarchy)?,
            doc_node,
            linear_positions(nodes, sequence, singles)?,
        )
    }

    /// ECtHR: one judgment's paragraphs as `(paragraph number, section label)`; doc index `i` is the
    /// `i`-th paragraph of the list. The tree is root → section (one node per distinct label, e.g.
    /// "Facts", "Law") → paragraph, so two paragraphs are at distance 2 in the same section and 4
    /// otherwise; the sequential position is the paragraph number (one group).
    pub fn from_judgment<S: AsRef<str>>(paragraphs: &[(usize, S)]) -> Result<Self> {
        let mut sections: HashMap<&str, usize> = HashMap::new();
        let mut section_of = Vec::with_capacity(paragraphs.len());
        for (_, label) in paragraphs {
            let next = sections.len() + 1;
            section_of.push(*sections.entry(label.as_ref()).or_insert(next));
        }
        let first_paragraph = sections.len() + 1;
        let nodes = first_paragraph + paragraphs.len();
        let mut edges: Vec<(usize, usize)> = (1..first_paragraph).map(|s| (0, s)).collect();
        edges.extend(
            section_of
                .iter()
                .enumerate()
                .map(|(i, &s)| (s, first_paragraph + i)),
        );
        let mut positions = vec![None; nodes];
        for (i, (number, _)) in paragraphs.iter().enumerate() {
            positions[first_paragraph + i] = Some((0, *number));
        }
        let doc_node = (0..paragraphs.len()).map(|i| Some(first_paragraph + i)).collect();
        Self::new(undirected_adjacency(nodes, &edges)?, doc_node, positions)
    }

    /// Number of graph nodes.
    pub fn nodes(&self) -> usize {
        self.adjacency.len()
    }

    fn node_of(&self, doc: usize) -> Result<Option<usize>> {
        self.doc_node.get(doc).copied().ok_or_else(|| {
            Error::data(
                "curriculum structure",
                format!("doc index {doc} outside the {} docs", self.doc_node.len()),
            )
        })
    }

    fn nodes_of(&self, docs: &[usize]) -> Result<Vec<Option<usize>>> {
        docs.iter().map(|&d| self.node_of(d)).collect()
    }

    /// Graph distance from each candidate to the nearest positive (doc indices); `None` = unreachable
    /// or outside the graph.
    pub fn hierarchical_distances(
        &self,
        positives: &[usize],
        candidates: &[usize],
    ) -> Result<Vec<Option<usize>>> {
        let sources: Vec<usize> = self.nodes_of(positives)?.into_iter().flatten().collect();
        let dist = hierarchical_distances(&self.adjacency, &sources)?;
        Ok(self
            .nodes_of(candidates)?
            .into_iter()
            .map(|n| n.and_then(|n| dist[n]))
            .collect())
    }

    /// Distance in reading order from each candidate to the nearest positive of the same group;
    /// `None` = another group (another code) or no position.
    pub fn sequential_distances(
        &self,
        positives: &[usize],
        candidates: &[usize],
    ) -> Result<Vec<Option<usize>>> {
        let sources: Vec<usize> = self.nodes_of(positives)?.into_iter().flatten().collect();
        let cand = self.nodes_of(candidates)?;
        let present: Vec<usize> = cand.iter().flatten().copied().collect();
        let mut dist = sequential_distances(&self.positions, &sources, &present)?.into_iter();
        Ok(cand
            .into_iter()
            .map(|n| n.and_then(|_| dist.next().flatten()))
            .collect())
    }

    /// The hierarchical view as difficulty scores (see [`distance_difficulty`]: `-distance`, `-∞`
    /// when unreachable).
    pub fn hierarchical_view(&self, positives: &[usize], candidates: &[usize]) -> Result<Vec<f64>> {
        Ok(self
            .hierarchical_distances(positives, candidates)?
            .into_iter()
            .map(distance_difficulty)
            .collect())
    }

    /// The sequential view as difficulty scores (`-distance`, `-∞` for another group).
    pub fn sequential_view(&self, positives: &[usize], candidates: &[usize]) -> Result<Vec<f64>> {
        Ok(self
            .sequential_distances(positives, candidates)?
            .into_iter()
            .map(distance_difficulty)
            .collect())
    }
}
