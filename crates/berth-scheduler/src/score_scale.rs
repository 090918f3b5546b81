//! The scale priorities score on: 1.11's 0..10 (a seed Policy) or 1.35's 0..100 (a
//! KubeSchedulerConfiguration profile). Its own module because the decision context carries it
//! and the priorities read it, and the priorities read the context too.

/// The maximum score of one priority under a seed Policy (1.11's `MaxPriority`).
pub const MAX_PRIORITY: i64 = 10;

/// The scale a scheduler's priorities score on, set when its configuration is compiled: a seed
/// `kind: Policy` file and berth's defaults keep 1.11's priorities (0..10), a
/// KubeSchedulerConfiguration profile gets 1.35's score plugins (0..100, `MaxNodeScore`). The
/// two differ in more than the maximum: each priority file computes each scale with its own
/// release's integer arithmetic (for example 1.35's BalancedAllocation is a standard deviation
/// over actual requests, 1.11's a difference over non-zero ones), so scaling a 0..10 score by
/// ten would lose precision and change placements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ScoreScale {
    /// 0..10: 1.11's priorities (a seed Policy, berth's defaults).
    #[default]
    Priority,
    /// 0..100: 1.35's score plugins (a KubeSchedulerConfiguration profile).
    Plugin,
}

impl ScoreScale {
    /// The highest score one priority gives a node on this scale.
    #[inline(always)]
    pub const fn max(self) -> i64 {
        match self {
            ScoreScale::Priority => MAX_PRIORITY,
            ScoreScale::Plugin => MAX_NODE_SCORE,
        }
    }
}

/// The maximum score of one score plugin (1.35's `MaxNodeScore`).
pub const MAX_NODE_SCORE: i64 = 100;
