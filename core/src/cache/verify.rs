//! A checker of Definition 1 (Mueller & Whalley 1995, §2.1): is a set of paths a unique-path partitioning?
//!
//! Written independently of Algorithm 1 ([`super::uppa`]) so the property tests can hold the algorithm to the
//! definition, and so a partition read from elsewhere can be vetted before counts are derived from it. Loops
//! (property 7) are core's natural loops ([`crate::loops`]); only `Branch` edges are CFG edges (see
//! [`super::uppa`] for the adaptation to pathprof's CFG).

use super::uppa::{MeasurementPoint, Uppa};
use crate::dfs::depth_first;
use crate::graph::{BlockId, Cfg, EdgeKind};
use crate::loops::natural_loops;
use std::collections::HashSet;

/// The first property of Definition 1 a partition violates (0 = the paths are not even paths of the graph).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Definition 1 property {property} violated: {detail}")]
pub struct Violation {
    /// 0 (not a path of the graph, or a wrong measurement point) or 1..=7 as numbered in the paper.
    pub property: u8,
    /// What was found.
    pub detail: String,
}

fn fail(property: u8, detail: String) -> Result<(), Violation> {
    Err(Violation { property, detail })
}

/// Checks properties 1–7 of Definition 1 for `uppa` over `cfg`, with `is_call[b]` marking call blocks, and that
/// every measurement point is a unique feature of its UP. O(P² + P·|E|) in the worst case; meant for tests and
/// diagnostics.
pub fn verify(cfg: &Cfg, is_call: &[bool], uppa: &Uppa) -> Result<(), Violation> {
    let n = cfg.num_blocks();
    let paths = uppa.paths();
    // Property 0: well-formed simple paths over Branch edges, and points that are features of their path.
    for (i, p) in paths.iter().enumerate() {
        if p.blocks.is_empty() || p.edges.len() + 1 != p.blocks.len() {
            return fail(0, format!("UP {i} has {} blocks and {} edges", p.blocks.len(), p.edges.len()));
        }
        let distinct: HashSet<_> = p.blocks.iter().collect();
        if distinct.len() != p.blocks.len() || p.blocks.iter().any(|b| b.index() >= n) {
            return fail(0, format!("UP {i} repeats a block or names EXIT"));
        }
        for (k, &e) in p.edges.iter().enumerate() {
            let ed = cfg.edge(e);
            if !matches!(ed.kind, EdgeKind::Branch { .. }) || ed.from != p.blocks[k] || ed.to != p.blocks[k + 1] {
                return fail(0, format!("UP {i}: edge {e} does not join its blocks {k} and {}", k + 1));
            }
        }
    }
    let mut vpaths: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut epaths: Vec<Vec<usize>> = vec![Vec::new(); cfg.num_edges()];
    for (i, p) in paths.iter().enumerate() {
        for b in &p.blocks {
            vpaths[b.index()].push(i);
        }
        for e in &p.edges {
            epaths[e.index()].push(i);
        }
    }
    let (heads, tails) = uppa.marks(n);
    // 1: coverage.
    if let Some(v) = (0..n).find(|&v| vpaths[v].is_empty()) {
        return fail(1, format!("bb{v} is on no UP"));
    }
    // 2: every edge is on a path xor joins a tail to a head.
    for (i, e) in cfg.edges().iter().enumerate() {
        if !matches!(e.kind, EdgeKind::Branch { .. }) {
            continue;
        }
        let on = !epaths[i].is_empty();
        let connects = tails[e.from.index()] && heads[e.to.index()];
        if on == connects {
            return fail(2, format!("e{i} {}->{}: on a UP {on}, tail-to-head {connects}", e.from, e.to));
        }
    }
    // 3: unique feature; the chosen point must be one.
    for (i, p) in paths.iter().enumerate() {
        let unique_v = p.blocks.iter().any(|b| vpaths[b.index()].len() == 1);
        let unique_e = p.edges.iter().any(|e| epaths[e.index()].len() == 1);
        if !unique_v && !unique_e {
            return fail(3, format!("UP {i} has no unique vertex or edge"));
        }
        let ok = match p.point {
            MeasurementPoint::Block(b) => p.blocks.contains(&b) && vpaths[b.index()].len() == 1,
            MeasurementPoint::Edge(e) => p.edges.contains(&e) && epaths[e.index()].len() == 1,
        };
        if !ok {
            return fail(0, format!("UP {i}'s measurement point {:?} is not a unique feature", p.point));
        }
    }
    // 4: overlapping paths share only a common initial and/or final subpath.
    let mut checked = HashSet::new();
    for list in &vpaths {
        for (a, &p) in list.iter().enumerate() {
            for &q in &list[a + 1..] {
                if checked.insert((p, q)) {
                    check_overlap(&paths[p].blocks, &paths[q].blocks)
                        .map_err(|d| Violation { property: 4, detail: format!("UPs {p} and {q}: {d}") })?;
                }
            }
        }
    }
    // 5: proper chaining. Read as the paper's proof reads it: an edge on no UP joins the end of every UP its
    // source is on to the start of every UP its target is on. The literal formula (for any p, q holding v and
    // w with ε on neither) rejects valid partitions, Algorithm 1's own included: in Figure 1(a) edge 5→7 is a
    // chord of UP 5-6-7 that lies on UP 5-7, and where three UPs [0,4], [0,1,4], [0,2] meet, edge 0→4 lies on
    // neither [0,2] nor [0,1,4].
    for (i, e) in cfg.edges().iter().enumerate() {
        if !matches!(e.kind, EdgeKind::Branch { .. }) || !epaths[i].is_empty() {
            continue;
        }
        if let Some(&p) = vpaths[e.from.index()].iter().find(|&&p| paths[p].tail() != e.from) {
            return fail(5, format!("e{i} {}->{} is on no UP but leaves UP {p} before its tail", e.from, e.to));
        }
        if let Some(&q) = vpaths[e.to.index()].iter().find(|&&q| paths[q].head() != e.to) {
            return fail(5, format!("e{i} {}->{} is on no UP but enters UP {q} after its head", e.from, e.to));
        }
    }
    // 6: a call block ends every UP it is on.
    for (i, p) in paths.iter().enumerate() {
        if let Some(b) =
            p.blocks[..p.blocks.len() - 1].iter().find(|b| is_call.get(b.index()).copied().unwrap_or(false))
        {
            return fail(6, format!("call block {b} is inside UP {i}"));
        }
    }
    // 7: no UP edge crosses a loop boundary.
    let adj = cfg.adjacency();
    let loops = natural_loops(cfg, &adj, &depth_first(cfg, &adj));
    for (i, p) in paths.iter().enumerate() {
        for &e in &p.edges {
            let ed = cfg.edge(e);
            if let Some(l) = loops.loops.iter().find(|l| l.contains(ed.from) != l.contains(ed.to)) {
                return fail(7, format!("UP {i}'s edge {e} crosses the boundary of the loop at {}", l.header));
            }
        }
    }
    Ok(())
}

/// Property 4 for one pair: the common vertices are exactly a common prefix α and a common suffix β, α before β.
fn check_overlap(p: &[BlockId], q: &[BlockId]) -> Result<(), String> {
    let pre = p.iter().zip(q).take_while(|(a, b)| a == b).count();
    let suf = p.iter().rev().zip(q.iter().rev()).take_while(|(a, b)| a == b).count();
    let (pre, suf) = if pre + suf > p.len().min(q.len()) {
        if p == q {
            return Err("identical paths".into());
        }
        (pre, p.len().min(q.len()) - pre) // prefix and suffix overlap: only count the suffix part after α
    } else {
        (pre, suf)
    };
    let shared: HashSet<BlockId> = p[..pre].iter().chain(&p[p.len() - suf..]).copied().collect();
    let qs: HashSet<BlockId> = q.iter().copied().collect();
    let common: HashSet<BlockId> = p.iter().filter(|b| qs.contains(b)).copied().collect();
    if common != shared {
        return Err(format!("they share {common:?}, not just a common prefix and suffix"));
    }
    Ok(())
}
