//! Timelines (Gantt charts): one lane per row (e.g. a CPU or a worker), bars for intervals
//! (e.g. task executions) and marks for instants (e.g. a wake-up), each coloured by its group
//! (e.g. the machine that ran it). Times are in the caller's unit, on a linear x axis.

use serde::{Deserialize, Serialize};

use crate::error::PlotError;

/// How tall a bar is drawn in its lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BarHeight {
    /// Most of the lane: work.
    #[default]
    Full,
    /// A thin band in the lane's middle: a state (sleeping, no core).
    Thin,
}

/// An interval `start..end` in a lane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bar {
    pub start: f64,
    pub end: f64,
    /// Index into [`Timeline::groups`]: its colour and legend entry.
    pub group: usize,
    #[serde(default)]
    pub height: BarHeight,
}

/// An instant in a lane, drawn as a vertical tick with a triangle on top.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mark {
    pub at: f64,
    /// Index into [`Timeline::groups`].
    pub group: usize,
}

/// One row of the timeline.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Lane {
    /// Text left of the lane.
    pub label: String,
    pub bars: Vec<Bar>,
    pub marks: Vec<Mark>,
}

/// Lanes top to bottom over one time axis.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Timeline {
    /// Caption above the plot.
    pub title: String,
    /// Text under the time axis, with its unit (e.g. "time (µs)").
    pub x_label: String,
    /// Legend entries; group `i` gets series colour `i`.
    pub groups: Vec<String>,
    /// The lanes, drawn top to bottom.
    pub lanes: Vec<Lane>,
}

impl Timeline {
    /// The time span covered by all bars and marks, or `None` if there are none.
    pub fn span(&self) -> Option<(f64, f64)> {
        let times = self.lanes.iter().flat_map(|l| {
            l.bars
                .iter()
                .flat_map(|b| [b.start, b.end])
                .chain(l.marks.iter().map(|m| m.at))
        });
        times.fold(None, |acc, t| match acc {
            None => Some((t, t)),
            Some((lo, hi)) => Some((f64::min(lo, t), f64::max(hi, t))),
        })
    }

    /// Every time is finite, no bar ends before it starts, every group index names a group.
    pub(crate) fn validate(&self) -> Result<(), PlotError> {
        let bad = |detail: String| PlotError::Timeline {
            figure: self.title.clone(),
            detail,
        };
        let finite = |place: String, v: f64| {
            if v.is_finite() {
                Ok(())
            } else {
                Err(PlotError::NotFinite {
                    figure: self.title.clone(),
                    place,
                    axis: "x",
                    value: v,
                    fix: "times in a timeline must be numbers",
                })
            }
        };
        let group = |place: String, g: usize| {
            if g < self.groups.len() {
                Ok(())
            } else {
                Err(bad(format!(
                    "{place}: group {g} does not exist ({} groups); add its name to `groups`",
                    self.groups.len()
                )))
            }
        };
        for (li, lane) in self.lanes.iter().enumerate() {
            for (bi, b) in lane.bars.iter().enumerate() {
                let place = format!("lane {li} (\"{}\"), bar {bi}", lane.label);
                finite(format!("{place} start"), b.start)?;
                finite(format!("{place} end"), b.end)?;
                if b.end < b.start {
                    return Err(bad(format!(
                        "{place}: ends at {} before it starts at {}; give start ≤ end",
                        b.end, b.start
                    )));
                }
                group(place, b.group)?;
            }
            for (mi, m) in lane.marks.iter().enumerate() {
                let place = format!("lane {li} (\"{}\"), mark {mi}", lane.label);
                finite(place.clone(), m.at)?;
                group(place, m.group)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Timeline {
        Timeline {
            title: "t".into(),
            x_label: "time (µs)".into(),
            groups: vec!["a".into(), "sleep".into()],
            lanes: vec![Lane {
                label: "cpu 0".into(),
                bars: vec![
                    Bar {
                        start: 1.0,
                        end: 2.0,
                        group: 0,
                        height: BarHeight::Full,
                    },
                    Bar {
                        start: 2.0,
                        end: 5.0,
                        group: 1,
                        height: BarHeight::Thin,
                    },
                ],
                marks: vec![Mark { at: 0.5, group: 1 }],
            }],
        }
    }

    #[test]
    fn span_covers_bars_and_marks() {
        assert_eq!(small().span(), Some((0.5, 5.0)));
        assert_eq!(Timeline::default().span(), None);
    }

    #[test]
    fn bad_timelines_name_the_place() {
        assert!(small().validate().is_ok());
        let mut t = small();
        t.lanes[0].bars[0].end = 0.0;
        let e = t.validate().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            e.contains("lane 0 (\"cpu 0\"), bar 0") && e.contains("start ≤ end"),
            "{e}"
        );
        let mut t = small();
        t.lanes[0].marks[0].group = 7;
        let e = t.validate().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("mark 0") && e.contains("group 7"), "{e}");
        let mut t = small();
        t.lanes[0].bars[1].start = f64::NAN;
        assert!(matches!(t.validate(), Err(PlotError::NotFinite { .. })));
    }
}
