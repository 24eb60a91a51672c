//! The picture of `multios aam trace` (the paper's `sview`): one lane per worker (machine and
//! CPU), task executions as bars coloured by machine, sleeps and spells without a core as thin
//! bars, IMS wake-ups and core moves as marks.

use multios_aam::trace::{EventKind, Row};
use multios_plot::{Bar, BarHeight, Lane, Mark, Timeline};

/// The timeline figure of `rows` (from `multios_aam::trace::rows`); `machines` are the machine
/// names in the order the rows index them. Times in µs from the first event.
pub fn figure(title: &str, machines: &[String], rows: &[Row]) -> Timeline {
    let m = machines.len();
    let (sleep, no_core, ims, moved) = (m, m + 1, m + 2, m + 3);
    let mut groups: Vec<String> = machines.iter().map(|n| format!("task on {n}")).collect();
    groups.extend(["sleep (idle)", "no core", "IMS wake-up", "core move"].map(String::from));
    let us = |ns: f64| ns / 1e3;
    let several = |r: &Row| {
        rows.iter()
            .filter(|o| o.machine_index == r.machine_index && o.cpu == r.cpu)
            .count()
            > 1
    };
    let lanes = rows
        .iter()
        .map(|r| {
            let mut lane = Lane {
                label: if several(r) {
                    format!("{} w{} · cpu {}", r.machine, r.worker, r.cpu)
                } else {
                    format!("{} · cpu {}", r.machine, r.cpu)
                },
                ..Lane::default()
            };
            for e in &r.events {
                let bar = |group, height| Bar {
                    start: us(e.start_ns),
                    end: us(e.end_ns),
                    group,
                    height,
                };
                match e.kind {
                    EventKind::Task => lane.bars.push(bar(r.machine_index.min(m), BarHeight::Full)),
                    EventKind::Sleep => lane.bars.push(bar(sleep, BarHeight::Thin)),
                    EventKind::Dormant => lane.bars.push(bar(no_core, BarHeight::Thin)),
                    EventKind::Ims => lane.marks.push(Mark {
                        at: us(e.start_ns),
                        group: ims,
                    }),
                    EventKind::CoreMove | EventKind::Switch => lane.marks.push(Mark {
                        at: us(e.start_ns),
                        group: moved,
                    }),
                }
            }
            lane
        })
        .collect();
    drop_unused(Timeline {
        title: title.to_string(),
        x_label: "time (µs)".into(),
        groups,
        lanes,
    })
}

/// Removes the groups no bar or mark uses (e.g. "core move" when no core moved), keeping the
/// order, so the legend lists only what is drawn.
fn drop_unused(mut t: Timeline) -> Timeline {
    let mut used = vec![false; t.groups.len()];
    for l in &t.lanes {
        for g in l
            .bars
            .iter()
            .map(|b| b.group)
            .chain(l.marks.iter().map(|m| m.group))
        {
            if let Some(u) = used.get_mut(g) {
                *u = true;
            }
        }
    }
    let mut new_index = vec![0; used.len()];
    let mut next = 0;
    for (i, &u) in used.iter().enumerate() {
        new_index[i] = next;
        next += usize::from(u);
    }
    for l in &mut t.lanes {
        for b in &mut l.bars {
            b.group = new_index[b.group];
        }
        for m in &mut l.marks {
            m.group = new_index[m.group];
        }
    }
    let mut keep = used.into_iter();
    t.groups.retain(|_| keep.next().unwrap_or(false));
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use multios_aam::trace::Span;

    fn span(kind: EventKind, name: &'static str, start_ns: f64, end_ns: f64) -> Span {
        Span {
            kind,
            name,
            start_ns,
            end_ns,
        }
    }

    #[test]
    fn issue_11_events_become_bars_and_marks() {
        let rows = vec![
            Row {
                machine_index: 0,
                machine: "client".into(),
                worker: 0,
                cpu: 0,
                events: vec![span(EventKind::Task, "driver", 0.0, 2_000.0)],
            },
            Row {
                machine_index: 1,
                machine: "server".into(),
                worker: 0,
                cpu: 1,
                events: vec![
                    span(EventKind::Sleep, "sleep", 0.0, 1_000.0),
                    span(EventKind::Ims, "ims wake-up", 500.0, 500.0),
                    span(EventKind::Task, "echo", 1_000.0, 1_500.0),
                    span(EventKind::CoreMove, "core lost", 1_600.0, 1_700.0),
                    span(EventKind::Dormant, "no core", 1_700.0, 3_000.0),
                ],
            },
        ];
        let t = figure("t", &["client".into(), "server".into()], &rows);
        assert_eq!(
            t.groups,
            [
                "task on client",
                "task on server",
                "sleep (idle)",
                "no core",
                "IMS wake-up",
                "core move"
            ]
        );
        assert_eq!(t.lanes[0].label, "client · cpu 0");
        assert_eq!(
            t.lanes[0].bars,
            [Bar {
                start: 0.0,
                end: 2.0,
                group: 0,
                height: BarHeight::Full
            }]
        );
        let s = &t.lanes[1];
        let groups: Vec<(usize, BarHeight)> = s.bars.iter().map(|b| (b.group, b.height)).collect();
        assert_eq!(
            groups,
            [(2, BarHeight::Thin), (1, BarHeight::Full), (3, BarHeight::Thin)]
        );
        assert_eq!(s.marks, [Mark { at: 0.5, group: 4 }, Mark { at: 1.6, group: 5 }]);
        assert_eq!(t.span(), Some((0.0, 3.0)));
    }

    #[test]
    fn issue_11_the_legend_lists_only_what_is_drawn() {
        let rows = vec![Row {
            machine_index: 1,
            machine: "server".into(),
            worker: 0,
            cpu: 1,
            events: vec![
                span(EventKind::Sleep, "sleep", 0.0, 1_000.0),
                span(EventKind::Ims, "ims wake-up", 500.0, 500.0),
            ],
        }];
        let t = figure("t", &["client".into(), "server".into()], &rows);
        assert_eq!(t.groups, ["sleep (idle)", "IMS wake-up"]);
        assert_eq!(t.lanes[0].bars[0].group, 0);
        assert_eq!(t.lanes[0].marks, [Mark { at: 0.5, group: 1 }]);
    }
}
