//! Measurement-point statistics in the style of Mueller & Whalley's Table 1: the UPs' points against one point
//! per block, statically and weighted by execution counts, summed over functions for `PATHPROF_STATS`.

use super::uppa::{MeasurementPoint, Uppa};
use crate::graph::Cfg;
use std::fmt;

/// Points of a UPPA against one point per block; additive over functions (`+=`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct MeasurementStats {
    /// Blocks (the one-point-per-block baseline).
    pub blocks: u64,
    /// UPs (measurement points).
    pub points: u64,
    /// Block executions (points executed with one point per block).
    pub executed_blocks: u64,
    /// UP executions (points executed with the UPPA).
    pub executed_points: u64,
}

impl MeasurementStats {
    /// Static counts of one function.
    pub fn of(cfg: &Cfg, uppa: &Uppa) -> MeasurementStats {
        MeasurementStats { blocks: cfg.num_blocks() as u64, points: uppa.paths().len() as u64, ..Default::default() }
    }

    /// Static and executed counts of one function from its exact edge counts (indexed by `EdgeId`, the virtual
    /// edges included: a block runs as often as its in-edges are taken, the entry once per EXIT→entry).
    pub fn executed(cfg: &Cfg, uppa: &Uppa, edge_counts: &[u64]) -> MeasurementStats {
        let mut block = vec![0u64; cfg.num_vertices()];
        for (e, &c) in cfg.edges().iter().zip(edge_counts) {
            block[e.to.index()] += c;
        }
        let executed_points = uppa
            .paths()
            .iter()
            .map(|p| match p.point {
                MeasurementPoint::Block(b) => block[b.index()],
                MeasurementPoint::Edge(e) => edge_counts.get(e.index()).copied().unwrap_or(0),
            })
            .sum();
        MeasurementStats {
            executed_blocks: block[..cfg.num_blocks()].iter().sum(),
            executed_points,
            ..MeasurementStats::of(cfg, uppa)
        }
    }
}

impl std::ops::AddAssign for MeasurementStats {
    fn add_assign(&mut self, o: MeasurementStats) {
        self.blocks += o.blocks;
        self.points += o.points;
        self.executed_blocks += o.executed_blocks;
        self.executed_points += o.executed_points;
    }
}

fn percent(a: u64, b: u64) -> f64 {
    if b == 0 {
        100.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// `uppa: P points for B blocks (x%)`, plus `; executed E of F (y%)` when executions were counted.
impl fmt::Display for MeasurementStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "uppa: {} points for {} blocks ({:.2}%)",
            self.points,
            self.blocks,
            percent(self.points, self.blocks)
        )?;
        if self.executed_blocks > 0 {
            write!(
                f,
                "; executed {} of {} ({:.2}%)",
                self.executed_points,
                self.executed_blocks,
                percent(self.executed_points, self.executed_blocks)
            )?;
        }
        Ok(())
    }
}
