//! A distributed job, one file per rank: find the rank files ([`discover()`]), read them in
//! parallel into one compact [`RankRow`] each ([`load_all`]: the summary figures and a short
//! sparkline, never the trace, so memory stays bounded however many ranks there are), and
//! compare them ([`Spread`]: max / min, max − median, the worst rank).
//!
//! A rank's row is built from its `summary --json` object ([`row::row_from_summary`]), so a
//! directory of such objects made on each node (`memtide summary rankN.pickle --json >
//! rankN.json`) gives the same rows as the traces themselves. No terminal code.

pub(crate) mod discover;
pub(crate) mod exclude;
pub(crate) mod load;
pub(crate) mod row;
pub(crate) mod skipped;

pub use discover::{discover, discover_excluding, rank_from_name, Discovered, RankFile, Skipped};
pub use exclude::Exclude;
pub use load::{
    default_jobs, load_all, load_one, summary_json, FileOutcome, RankEvent, RankOptions,
};
pub use row::{row_from_summary, sparkline, DeviceFigures, KeptSummary, RankRow, RankSource};
pub use skipped::{group as group_skipped, names_with_more, SkipGroup, NAMES_SHOWN};

use std::path::PathBuf;

/// A file that could not be read, with the reader's error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failed {
    pub path: PathBuf,
    pub error: String,
}

/// Every outcome of a job's files, in the order the files were given.
#[derive(Clone, Debug, Default)]
pub struct Ranks {
    /// One row per readable rank file, sorted by rank (then file order).
    pub rows: Vec<RankRow>,
    /// Files that are not traces, subdirectories and files `--exclude` left out (hidden
    /// files are left out silently).
    pub skipped: Vec<Skipped>,
    /// Files that could not be read, with their errors.
    pub errors: Vec<Failed>,
    /// Facts about the set (a rank number two files claim).
    pub notes: Vec<String>,
}

impl Ranks {
    /// Reads every discovered file on `jobs` threads ([`load_all`]) and collects the rows;
    /// `on_event` hears each file start and end (from the worker threads).
    pub fn load(
        discovered: Discovered,
        opts: &RankOptions,
        jobs: usize,
        on_event: &(dyn Fn(&RankEvent) + Sync),
    ) -> Ranks {
        let outcomes = std::sync::Mutex::new(Vec::with_capacity(discovered.files.len()));
        load_all(&discovered.files, opts, jobs, &[], &|ev| {
            on_event(&ev);
            if let RankEvent::Done(i, o) = ev {
                if let Ok(mut v) = outcomes.lock() {
                    v.push((i, o));
                }
            }
        });
        let outcomes = outcomes.into_inner().unwrap_or_default();
        Ranks::collect(&discovered.files, outcomes, discovered.skipped)
    }

    /// Collects the outcomes of `files` (as [`load_all`] reports them, in any order) with the
    /// files discovery skipped.
    pub fn collect(
        files: &[RankFile],
        outcomes: Vec<(usize, FileOutcome)>,
        skipped: Vec<Skipped>,
    ) -> Ranks {
        let mut outcomes = outcomes;
        outcomes.sort_by_key(|(i, _)| *i);
        let mut r = Ranks {
            skipped,
            ..Ranks::default()
        };
        for (i, o) in outcomes {
            let path = files.get(i).map(|f| f.path.clone()).unwrap_or_default();
            match o {
                FileOutcome::Row(row) => r.rows.push(*row),
                FileOutcome::Skipped(reason) => r.skipped.push(Skipped { path, reason }),
                FileOutcome::Failed(error) => r.errors.push(Failed { path, error }),
            }
        }
        r.rows.sort_by_key(|row| (row.rank, row.order));
        r.notes = duplicate_notes(&r.rows);
        r
    }

    /// The spread of the rows' peaks (None: no row has a peak).
    pub fn spread(&self) -> Option<Spread> {
        Spread::of(&self.rows)
    }

    /// The row of the worst rank (the highest peak; the lowest rank among equals).
    pub fn worst(&self) -> Option<&RankRow> {
        let s = self.spread()?;
        self.rows.iter().find(|r| r.order == s.worst_order)
    }
}

/// `rank 3 is claimed by a.pickle and b.pickle` for each rank number two files share.
pub(crate) fn duplicate_notes(rows: &[RankRow]) -> Vec<String> {
    let mut notes = Vec::new();
    let mut i = 0;
    let mut sorted: Vec<&RankRow> = rows.iter().collect();
    sorted.sort_by_key(|r| (r.rank, r.order));
    while i < sorted.len() {
        let j = sorted[i..]
            .iter()
            .position(|r| r.rank != sorted[i].rank)
            .map_or(sorted.len(), |k| i + k);
        if j - i > 1 {
            let names: Vec<String> = sorted[i..j].iter().map(|r| r.file_name()).collect();
            notes.push(format!(
                "rank {} is claimed by {} files: {}",
                sorted[i].rank,
                j - i,
                names.join(", ")
            ));
        }
        i = j;
    }
    notes
}

/// A rank's claim to be the worst: its peak, its rank number and its file's position in the
/// order given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeakOf {
    pub peak: u64,
    pub rank: u64,
    pub order: usize,
}

impl PeakOf {
    /// The one order that names the worst rank, everywhere a rank is named for its peak
    /// (`summary DIR`'s worst rank and spread, the overview's star, `check DIR`'s highest
    /// rank and its list of ranks over the limit): the highest peak first, then among equal
    /// peaks the lowest rank number, then the first file given.
    pub fn worst_first(&self, other: &PeakOf) -> std::cmp::Ordering {
        other
            .peak
            .cmp(&self.peak)
            .then(self.rank.cmp(&other.rank))
            .then(self.order.cmp(&other.order))
    }
}

/// The worst of `items` by [`PeakOf::worst_first`] (`key` gives each one's claim); None when
/// there are none.
pub fn worst_of<T>(items: impl IntoIterator<Item = T>, key: impl Fn(&T) -> PeakOf) -> Option<T> {
    items.into_iter().min_by(|a, b| key(a).worst_first(&key(b)))
}

/// How the ranks' peaks differ.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// Ranks with a peak.
    pub count: usize,
    pub max: u64,
    pub min: u64,
    /// The middle peak (the mean of the two middle ones, rounded down, for an even count).
    pub median: u64,
    /// max / min (None when the lowest peak is 0).
    pub ratio: Option<f64>,
    /// max − median.
    pub max_minus_median: u64,
    /// The rank with the highest peak (the lowest rank number among equal peaks) and its
    /// file's position in the order given.
    pub worst_rank: u64,
    pub worst_order: usize,
    /// The rank with the lowest peak (the lowest rank number among equal peaks).
    pub best_rank: u64,
}

impl Spread {
    /// The spread of the rows that have a peak (None: none has).
    pub fn of<'a>(rows: impl IntoIterator<Item = &'a RankRow>) -> Option<Spread> {
        let mut peaks: Vec<PeakOf> = rows
            .into_iter()
            .filter_map(|r| {
                r.peak.map(|peak| PeakOf {
                    peak,
                    rank: r.rank,
                    order: r.order,
                })
            })
            .collect();
        if peaks.is_empty() {
            return None;
        }
        let mut sorted: Vec<u64> = peaks.iter().map(|p| p.peak).collect();
        sorted.sort_unstable();
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            // Without overflow: a/2 + b/2 + the carry of both odd halves.
            let (a, b) = (sorted[n / 2 - 1], sorted[n / 2]);
            a / 2 + b / 2 + (a % 2 + b % 2) / 2
        };
        let (max, min) = (sorted[n - 1], sorted[0]);
        peaks.sort_by(PeakOf::worst_first);
        let worst = peaks[0];
        // The lowest peak, named among equals as the worst is: the lowest rank, first file.
        let best = peaks
            .iter()
            .filter(|p| p.peak == min)
            .min_by_key(|p| (p.rank, p.order))
            .copied()
            .unwrap_or(worst);
        Some(Spread {
            count: n,
            max,
            min,
            median,
            ratio: (min > 0).then(|| max as f64 / min as f64),
            max_minus_median: max - median,
            worst_rank: worst.rank,
            worst_order: worst.order,
            best_rank: best.rank,
        })
    }

    /// `max / min − 1` as a fraction (the imbalance `check --max-imbalance` gates on); None
    /// when the lowest peak is 0.
    pub fn imbalance(&self) -> Option<f64> {
        self.ratio.map(|r| r - 1.0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn row(rank: u64, order: usize, peak: Option<u64>) -> RankRow {
        RankRow {
            rank,
            order,
            peak,
            ..RankRow::default()
        }
    }

    #[test]
    fn spread_of_odd_and_even_counts() {
        let rows = [
            row(0, 0, Some(10)),
            row(1, 1, Some(30)),
            row(2, 2, Some(20)),
        ];
        let s = Spread::of(&rows).unwrap();
        assert_eq!((s.max, s.min, s.median), (30, 10, 20));
        assert_eq!(s.max_minus_median, 10);
        assert_eq!(s.ratio, Some(3.0));
        assert_eq!((s.worst_rank, s.best_rank), (1, 0));
        let rows = [
            row(0, 0, Some(10)),
            row(1, 1, Some(31)),
            row(2, 2, Some(20)),
            row(3, 3, None),
        ];
        let s = Spread::of(&rows).unwrap();
        assert_eq!(s.count, 3);
        let rows = [row(0, 0, Some(u64::MAX)), row(1, 1, Some(u64::MAX - 2))];
        assert_eq!(Spread::of(&rows).unwrap().median, u64::MAX - 1);
    }

    #[test]
    fn ties_go_to_the_lowest_rank_and_zero_has_no_ratio() {
        let rows = [row(5, 0, Some(7)), row(2, 1, Some(7)), row(3, 2, Some(0))];
        let s = Spread::of(&rows).unwrap();
        assert_eq!(s.worst_rank, 2);
        assert_eq!(s.ratio, None);
        assert!(Spread::of(&[row(0, 0, None)]).is_none());
    }

    #[test]
    fn a_shared_rank_number_is_noted() {
        let mut a = row(1, 0, Some(1));
        a.file = "a.pickle".into();
        let mut b = row(1, 1, Some(1));
        b.file = "b.pickle".into();
        let notes = duplicate_notes(&[a, b, row(2, 2, None)]);
        assert_eq!(
            notes,
            vec!["rank 1 is claimed by 2 files: a.pickle, b.pickle"]
        );
    }
}
