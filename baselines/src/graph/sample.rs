//! L-hop neighbourhood sampling (GraphSAGE / PyG `NeighborLoader` style), seeded and deterministic.
//!
//! From a batch of seed nodes, hop by hop, every node of the frontier draws at most `fanout` of its
//! neighbours' edges (all of them without a limit); newly reached nodes form the next frontier. The
//! result is the subgraph of the sampled edges with nodes relabelled `0..`, seeds first in their
//! order, then the other nodes in the order they were reached. The draws use
//! [`lexbench_core::rng::SplitMix64`] seeded by the caller and visit nodes and edges in a fixed
//! order, so a seed always gives the same subgraph.

use std::collections::{HashMap, HashSet};

use lexbench_core::rng::SplitMix64;

use super::EdgeList;
use crate::error::{Error, Result};

/// Which edges make a node's neighbours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Direction {
    /// The sources of edges into the node: exactly what message passing toward the node needs
    /// (PyG's default, `flow="source_to_target"`).
    #[default]
    Incoming,
    /// The destinations of edges out of the node.
    Outgoing,
    /// Both (the graph read as undirected).
    Both,
}

/// Options of [`sample_subgraph`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleOptions {
    /// Number of hops (0: the seeds alone).
    pub hops: usize,
    /// At most this many edges drawn per node per hop (`None`: all of them); at least 1.
    pub fanout: Option<usize>,
    /// Which edges count as a node's neighbours.
    pub direction: Direction,
    /// Seed of the draws.
    pub seed: u64,
}

impl Default for SampleOptions {
    /// Two hops, at most 10 neighbours per node per hop, incoming edges, seed 0.
    fn default() -> Self {
        Self {
            hops: 2,
            fanout: Some(10),
            direction: Direction::Incoming,
            seed: 0,
        }
    }
}

/// A sampled subgraph with local node ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subgraph {
    /// Local id → global id: the seeds first, in their order, then the nodes in the order reached.
    pub nodes: Vec<u32>,
    /// Hop at which each node was reached (0 for seeds), aligned with `nodes`.
    pub depth: Vec<usize>,
    /// The sampled edges with local ids, each once, in their original direction and type, in the
    /// order they were drawn.
    pub edges: EdgeList,
    /// For each sampled edge, its position in the input edge list.
    pub edge_ids: Vec<usize>,
    /// Number of seeds (local ids `0..num_seeds`).
    pub num_seeds: usize,
    index: HashMap<u32, u32>,
}

impl Subgraph {
    /// The local id of global node `global`, if it was sampled.
    pub fn local(&self, global: u32) -> Option<u32> {
        self.index.get(&global).copied()
    }
}

/// Per-node neighbour lists of an edge list, built once for many samples.
#[derive(Debug, Clone)]
pub struct Adjacency {
    /// For every node, `(edge position, neighbour)` in edge order.
    lists: Vec<Vec<(usize, u32)>>,
    edges: EdgeList,
}

impl Adjacency {
    /// Indexes `edges` (over `num_nodes` nodes) by `direction`.
    pub fn new(num_nodes: usize, edges: &EdgeList, direction: Direction) -> Result<Self> {
        edges.validate(num_nodes)?;
        let mut lists = vec![Vec::new(); num_nodes];
        for k in 0..edges.len() {
            let (s, d) = (edges.src[k], edges.dst[k]);
            if matches!(direction, Direction::Incoming | Direction::Both) {
                lists[d as usize].push((k, s));
            }
            if matches!(direction, Direction::Outgoing | Direction::Both)
                && !(direction == Direction::Both && s == d)
            {
                lists[s as usize].push((k, d));
            }
        }
        for l in &mut lists {
            l.sort_unstable();
        }
        Ok(Self {
            lists,
            edges: edges.clone(),
        })
    }

    /// Number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.lists.len()
    }

    /// Samples the `hops`-hop neighbourhood of `seeds` (distinct, below the node count).
    pub fn sample(&self, seeds: &[u32], hops: usize, fanout: Option<usize>, seed: u64) -> Result<Subgraph> {
        self.sample_without(seeds, hops, fanout, seed, &HashSet::new())
    }

    /// [`Adjacency::sample`] as if the edges at positions `left_out` (of the indexed edge list) were
    /// not in the graph: they are never drawn, so they neither join the subgraph nor take a place of
    /// the fanout. With none left out, the same draws as [`Adjacency::sample`].
    pub fn sample_without(
        &self,
        seeds: &[u32],
        hops: usize,
        fanout: Option<usize>,
        seed: u64,
        left_out: &HashSet<usize>,
    ) -> Result<Subgraph> {
        if fanout == Some(0) {
            return Err(Error::Param(
                "fanout must be at least 1 (or none for no limit), got 0".into(),
            ));
        }
        let n = self.num_nodes();
        let mut index: HashMap<u32, u32> = HashMap::with_capacity(seeds.len());
        let mut nodes = Vec::with_capacity(seeds.len());
        for &s in seeds {
            if s as usize >= n {
                return Err(Error::data(
                    "subgraph seeds",
                    format!("seed node {s} is out of range for {n} nodes"),
                ));
            }
            if index.insert(s, nodes.len() as u32).is_some() {
                return Err(Error::data(
                    "subgraph seeds",
                    format!("seed node {s} is given twice"),
                ));
            }
            nodes.push(s);
        }
        let mut depth = vec![0; nodes.len()];
        let mut rng = SplitMix64::new(seed);
        let mut taken: HashSet<usize> = HashSet::new();
        let mut edge_ids = Vec::new();
        let mut frontier = nodes.clone();
        let mut candidates: Vec<(usize, u32)> = Vec::new();
        for hop in 1..=hops {
            let mut next = Vec::new();
            for &v in &frontier {
                candidates.clear();
                if left_out.is_empty() {
                    candidates.extend_from_slice(&self.lists[v as usize]);
                } else {
                    candidates.extend(
                        self.lists[v as usize]
                            .iter()
                            .filter(|(e, _)| !left_out.contains(e)),
                    );
                }
                if let Some(k) = fanout.filter(|&k| k < candidates.len()) {
                    // Partial Fisher–Yates: the first k entries are a uniform draw without replacement.
                    for i in 0..k {
                        let j = i + rng.below(candidates.len() - i);
                        candidates.swap(i, j);
                    }
                    candidates.truncate(k);
                    candidates.sort_unstable();
                }
                for &(e, u) in &candidates {
                    if taken.insert(e) {
                        edge_ids.push(e);
                    }
                    if let std::collections::hash_map::Entry::Vacant(slot) = index.entry(u) {
                        slot.insert(nodes.len() as u32);
                        nodes.push(u);
                        depth.push(hop);
                        next.push(u);
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        let mut edges = EdgeList::new();
        for &e in &edge_ids {
            edges.src.push(index[&self.edges.src[e]]);
            edges.dst.push(index[&self.edges.dst[e]]);
            edges.types.push(self.edges.types[e]);
        }
        Ok(Subgraph {
            nodes,
            depth,
            edges,
            edge_ids,
            num_seeds: seeds.len(),
            index,
        })
    }
}

/// Samples the neighbourhood of `seeds` in a graph of `num_nodes` nodes (see the module
/// documentation); builds the [`Adjacency`] on the fly (build it once with [`Adjacency::new`] to
/// sample many batches).
pub fn sample_subgraph(
    num_nodes: usize,
    edges: &EdgeList,
    seeds: &[u32],
    options: &SampleOptions,
) -> Result<Subgraph> {
    Adjacency::new(num_nodes, edges, options.direction)?.sample(
        seeds,
        options.hops,
        options.fanout,
        options.seed,
    )
}

#[cfg(test)]
mod tests {
    //! Properties checked, on a hand-made graph:
    //! - 1 and 2 hops over incoming edges reach exactly the expected nodes, seeds first, relabelled
    //!   edges pointing at the right nodes with their types;
    //! - undirected (`Both`) traversal reaches the other side too;
    //! - a fanout limit caps the edges drawn per node per hop, and a seed gives the same subgraph every
    //!   time (other seeds may differ);
    //! - seeds out of range or given twice and edges outside the graph are `Error::Data`; a zero
    //!   fanout is `Error::Param`;
    //! - edges left out ([`Adjacency::sample_without`]) are never drawn, do not take a place of the
    //!   fanout, and leaving none out draws what [`Adjacency::sample`] draws.
    use super::*;
    use crate::graph::EdgeType;

    /// Node 0 (a code) → 1, 2 (chapters); 1 → 3, 4, 5; 2 → 6 (articles); sequence 3 → 4 → 5 → 6;
    /// a query node 7 → 3 and 7 → 6. Hierarchy edges only parent → child here.
    fn graph() -> EdgeList {
        let mut e = EdgeList::new();
        for (p, c) in [(0, 1), (0, 2), (1, 3), (1, 4), (1, 5), (2, 6)] {
            e.push(p, c, EdgeType::ParentChild);
        }
        for (a, b) in [(3, 4), (4, 5), (5, 6)] {
            e.push(a, b, EdgeType::NextArticle);
        }
        e.push(7, 3, EdgeType::QueryArticle);
        e.push(7, 6, EdgeType::QueryArticle);
        e
    }

    fn opts(hops: usize, fanout: Option<usize>, direction: Direction, seed: u64) -> SampleOptions {
        SampleOptions {
            hops,
            fanout,
            direction,
            seed,
        }
    }

    #[test]
    fn one_and_two_hops() -> Result<()> {
        let g = graph();
        // Into 6: 2 → 6, 5 → 6, 7 → 6 (edge order 5, 8, 10).
        let s = sample_subgraph(8, &g, &[6, 4], &opts(1, None, Direction::Incoming, 0))?;
        assert_eq!(s.nodes, [6, 4, 2, 5, 7, 1, 3]);
        assert_eq!(s.depth, [0, 0, 1, 1, 1, 1, 1]);
        assert_eq!(s.num_seeds, 2);
        assert_eq!(s.edge_ids, [5, 8, 10, 3, 6]);
        // Relabelled: 2 → 6 is local 2 → 0, …
        assert_eq!(s.edges.src, [2, 3, 4, 5, 6]);
        assert_eq!(s.edges.dst, [0, 0, 0, 1, 1]);
        assert_eq!(s.edges.types[2], EdgeType::QueryArticle.index());
        assert_eq!(s.local(7), Some(4));
        assert_eq!(s.local(0), None);
        // Two hops from 6 add the in-neighbours of 2, 5, 7: 0 (→ 2), 1 and 4 (→ 5); 7 has none.
        let s = sample_subgraph(8, &g, &[6], &opts(2, None, Direction::Incoming, 0))?;
        assert_eq!(s.nodes, [6, 2, 5, 7, 0, 1, 4]);
        assert_eq!(s.depth, [0, 1, 1, 1, 2, 2, 2]);
        assert_eq!(s.edge_ids, [5, 8, 10, 1, 4, 7]);
        for k in 0..s.edges.len() {
            let e = s.edge_ids[k];
            assert_eq!(s.nodes[s.edges.src[k] as usize], g.src[e]);
            assert_eq!(s.nodes[s.edges.dst[k] as usize], g.dst[e]);
        }
        // Undirected: from the query 7 one hop reaches its articles 3 and 6.
        let s = sample_subgraph(8, &g, &[7], &opts(1, None, Direction::Both, 0))?;
        assert_eq!(s.nodes, [7, 3, 6]);
        let s = sample_subgraph(8, &g, &[7], &opts(1, None, Direction::Outgoing, 0))?;
        assert_eq!(s.nodes, [7, 3, 6]);
        // Zero hops: the seeds alone.
        let s = sample_subgraph(8, &g, &[5, 1], &opts(0, None, Direction::Incoming, 0))?;
        assert_eq!((s.nodes, s.edges.len()), (vec![5, 1], 0));
        Ok(())
    }

    #[test]
    fn fanout_and_determinism() -> Result<()> {
        let g = graph();
        let adj = Adjacency::new(8, &g, Direction::Both)?;
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..20 {
            let s = adj.sample(&[1, 6], 2, Some(2), seed)?;
            // Per node per hop at most 2 edges: count drawn edges by the node that drew them.
            // Every frontier node draws ≤ 2, so the subgraph has ≤ 2 · (2 seeds + 4 hop-1 nodes) edges.
            assert!(s.edges.len() <= 12, "{s:?}");
            let hop1 = s.depth.iter().filter(|&&d| d == 1).count();
            assert!(hop1 <= 4, "two seeds × fanout 2: {s:?}");
            for k in 0..s.edges.len() {
                let e = s.edge_ids[k];
                assert_eq!(s.nodes[s.edges.src[k] as usize], g.src[e]);
            }
            assert_eq!(
                s,
                adj.sample(&[1, 6], 2, Some(2), seed)?,
                "seed {seed} is deterministic"
            );
            seen.insert(s.nodes.clone());
        }
        assert!(seen.len() > 1, "different seeds draw different neighbourhoods");
        // Node 1 has 4 neighbours (0, 3, 4, 5) undirected: fanout 1 keeps exactly one at hop 1.
        let s = adj.sample(&[1], 1, Some(1), 7)?;
        assert_eq!((s.nodes.len(), s.edges.len()), (2, 1));
        // A fanout above the degree keeps everything.
        let all = adj.sample(&[1], 1, None, 0)?;
        assert_eq!(adj.sample(&[1], 1, Some(10), 3)?, all);
        assert_eq!(all.nodes, [1, 0, 3, 4, 5]);
        Ok(())
    }

    #[test]
    fn edges_left_out_are_never_drawn() -> Result<()> {
        let g = graph();
        let adj = Adjacency::new(8, &g, Direction::Both)?;
        // The query 7's edges (positions 9 and 10) left out: from 7, nothing is reached; from 6,
        // the query is not either.
        let out: HashSet<usize> = [9, 10].into();
        let s = adj.sample_without(&[7], 2, None, 0, &out)?;
        assert_eq!((s.nodes, s.edges.len()), (vec![7], 0));
        for seed in 0..20 {
            let s = adj.sample_without(&[6, 3], 2, Some(1), seed, &out)?;
            assert!(s.local(7).is_none(), "seed {seed}: {s:?}");
            assert!(s.edge_ids.iter().all(|e| !out.contains(e)));
            // Fanout 1 still draws one edge of each seed: the left-out ones take no place.
            assert!(s.depth.iter().filter(|&&d| d == 1).count() >= 1);
            assert_eq!(
                adj.sample_without(&[6, 3], 2, Some(1), seed, &HashSet::new())?,
                adj.sample(&[6, 3], 2, Some(1), seed)?
            );
        }
        Ok(())
    }

    #[test]
    fn bad_inputs() {
        let g = graph();
        let o = opts(1, None, Direction::Incoming, 0);
        assert!(matches!(
            sample_subgraph(8, &g, &[8], &o),
            Err(Error::Data { .. })
        ));
        assert!(matches!(
            sample_subgraph(8, &g, &[1, 1], &o),
            Err(Error::Data { .. })
        ));
        assert!(matches!(
            sample_subgraph(5, &g, &[1], &o),
            Err(Error::Data { .. })
        ));
        let z = opts(1, Some(0), Direction::Incoming, 0);
        assert!(matches!(sample_subgraph(8, &g, &[1], &z), Err(Error::Param(_))));
    }
}
