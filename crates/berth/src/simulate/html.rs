//! `index.html`: the report as one self-contained page that opens offline: the plots are SVG
//! drawn by `plotters` and embedded inline, the tables are plain HTML, nothing is fetched.
//!
//! Pure: a report in, a page out (the same report gives the same bytes).

use super::report::Report;
use super::summary::Differences;
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use std::fmt::Write;

/// The most decisions the "why here" table lists (the page stays small enough to open).
const MAX_TABLE_ROWS: usize = 2_000;
const WIDTH: u32 = 960;

type Drawn = Result<String, String>;

/// Hours of cluster time.
fn hours(seconds: f64) -> f64 {
    seconds / 3600.0
}

/// White at 0, deep red at 1 (and beyond).
fn heat(fraction: f64) -> RGBColor {
    let f = fraction.clamp(0.0, 1.0);
    let fade = |full: f64| (255.0 - (255.0 - full) * f).round() as u8;
    RGBColor(fade(200.0), fade(30.0), fade(30.0))
}

/// Requested cpu over allocatable per node and sampling instant, as a heat map.
fn utilisation_heat_map(r: &Report, resource: &str) -> Drawn {
    let names: Vec<&String> = r.utilisation.nodes.keys().collect();
    let rows = names.len().max(1) as i32;
    let end = hours(r.simulation.until_seconds as f64).max(1.0 / 60.0);
    let height = 80 + 22 * rows as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{resource} requested / allocatable per node"),
                ("sans-serif", 16),
            )
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(140)
            .build_cartesian_2d(0f64..end, (0..rows).into_segmented())
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("hours")
            .y_labels(rows as usize)
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => names
                    .get(usize::try_from(*i).unwrap_or(0))
                    .map(|s| s.to_string())
                    .unwrap_or_default(),
                _ => String::new(),
            })
            .draw()
            .map_err(|e| e.to_string())?;
        let t = &r.utilisation.t;
        let step = hours(r.simulation.sample_interval_seconds as f64);
        let mut cells = Vec::new();
        for (row, name) in names.iter().enumerate() {
            let series = &r.utilisation.nodes[*name];
            let values = if resource == "cpu" {
                &series.cpu
            } else {
                &series.memory
            };
            for (i, f) in values.iter().enumerate() {
                let x0 = hours(t[i]);
                let x1 = t.get(i + 1).map_or(x0 + step, |n| hours(*n)).min(end);
                let y = row as i32;
                cells.push(Rectangle::new(
                    [
                        (x0, SegmentValue::Exact(y)),
                        (x1, SegmentValue::Exact(y + 1)),
                    ],
                    heat(*f).filled(),
                ));
            }
        }
        chart.draw_series(cells).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// Pending pods over time (one line per report: two when comparing).
fn pending_plot(reports: &[&Report]) -> Drawn {
    let end = reports
        .iter()
        .map(|r| hours(r.simulation.until_seconds as f64))
        .fold(1.0 / 60.0, f64::max);
    let peak = reports
        .iter()
        .flat_map(|r| r.pending.values.iter().copied())
        .max()
        .unwrap_or(0)
        .max(1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 260)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption("pending pods", ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(0f64..end, 0u32..peak + 1)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("hours")
            .draw()
            .map_err(|e| e.to_string())?;
        let colours = [BLUE, RED];
        for (i, r) in reports.iter().enumerate() {
            let colour = colours[i % colours.len()];
            let points: Vec<(f64, u32)> = r
                .pending
                .t
                .iter()
                .zip(&r.pending.values)
                .map(|(t, v)| (hours(*t), *v))
                .collect();
            let label = r.simulation.scheduler.clone();
            chart
                .draw_series(LineSeries::new(points, colour.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour));
        }
        if reports.len() > 1 {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()
                .map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// Timeline actions, evictions and preemptions as marks on a time axis.
fn events_plot(r: &Report) -> Drawn {
    let end = hours(r.simulation.until_seconds as f64).max(1.0 / 60.0);
    let lanes = ["actions", "evictions", "preemptions", "failed attempts"];
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 200)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption("events", ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(140)
            .build_cartesian_2d(0f64..end, (0..lanes.len() as i32).into_segmented())
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc("hours")
            .y_labels(lanes.len())
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => lanes
                    .get(usize::try_from(*i).unwrap_or(0))
                    .map(|s| s.to_string())
                    .unwrap_or_default(),
                _ => String::new(),
            })
            .draw()
            .map_err(|e| e.to_string())?;
        let lane = |i: i32, times: Vec<f64>, colour: RGBColor| {
            times.into_iter().map(move |t| {
                Circle::new((hours(t), SegmentValue::CenterOf(i)), 4, colour.filled())
            })
        };
        let failed: Vec<f64> = r
            .decisions
            .iter()
            .filter(|d| d.result == "FailedScheduling")
            .map(|d| d.t)
            .collect();
        chart
            .draw_series(lane(0, r.actions.iter().map(|a| a.t).collect(), BLUE))
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(lane(1, r.evictions.iter().map(|a| a.t).collect(), RED))
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(lane(
                2,
                r.preemptions.iter().map(|a| a.t).collect(),
                RGBColor(230, 130, 0),
            ))
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(lane(3, failed, RGBColor(120, 120, 120)))
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// Text safe inside HTML.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const STYLE: &str = "body{font-family:sans-serif;margin:24px;color:#222}\
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}\
th{background:#f3f3f3}pre{background:#f7f7f7;padding:12px}.side{display:flex;gap:24px;flex-wrap:wrap}\
svg{max-width:100%;height:auto}";

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\
         <style>{STYLE}</style></head><body>\n{body}</body></html>\n",
        escape(title)
    )
}

fn plot(out: &mut String, drawn: Drawn) {
    match drawn {
        Ok(svg) => out.push_str(&format!("<div>{svg}</div>\n")),
        Err(e) => out.push_str(&format!("<p>(plot not drawn: {})</p>\n", escape(&e))),
    }
}

/// Each decision: where the pod went, or why it did not.
fn why_here(out: &mut String, r: &Report) {
    let _ = writeln!(
        out,
        "<h2>Why here</h2><p>Every scheduling decision: the node chosen, or the scheduler's reasons, node by node.</p>"
    );
    out.push_str(
        "<table><tr><th>time (s)</th><th>pod</th><th>result</th><th>node or reasons</th></tr>\n",
    );
    for d in r.decisions.iter().take(MAX_TABLE_ROWS) {
        let detail = match (&d.node, &d.message) {
            (Some(n), _) => escape(n),
            (None, Some(m)) if d.times > 1 => format!("{} (×{})", escape(m), d.times),
            (None, Some(m)) => escape(m),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{detail}</td></tr>",
            d.t,
            escape(&d.pod),
            d.result
        );
    }
    out.push_str("</table>\n");
    if r.decisions.len() > MAX_TABLE_ROWS {
        let _ = writeln!(
            out,
            "<p>… {} more in report.json.</p>",
            r.decisions.len() - MAX_TABLE_ROWS
        );
    }
}

/// The descheduler's chosen evictions and where each pod would go (`--descheduler-policy`).
fn descheduler_moves(out: &mut String, r: &Report) {
    if r.descheduler_moves.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<h2>Descheduler preview</h2><p>Each eviction the descheduler chose, scheduled in order with the scheduler's policy: where the pod goes, or why it fits nowhere (then it was not evicted).</p>"
    );
    out.push_str(
        "<table><tr><th>time (s)</th><th>strategy</th><th>pod</th><th>from</th><th>to</th></tr>\n",
    );
    for m in r.descheduler_moves.iter().take(MAX_TABLE_ROWS) {
        let to = match (&m.to, &m.message) {
            (Some(n), _) => escape(n),
            (None, Some(why)) => format!("fits nowhere: not evicted ({})", escape(why)),
            (None, None) => "fits nowhere: not evicted".into(),
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{to}</td></tr>",
            m.t,
            escape(&m.strategy),
            escape(&m.pod),
            escape(&m.from)
        );
    }
    out.push_str("</table>\n");
}

/// `--explain`: each explained decision as a table of nodes: filter result, each priority's
/// score (the header gives its weight), the weighted total.
fn explanations(out: &mut String, r: &Report) {
    for e in &r.explanations {
        let _ = writeln!(out, "<h3>{} at {}s, node by node</h3>", escape(&e.pod), e.t);
        if let Some(err) = &e.error {
            let _ = writeln!(out, "<p>error: {}</p>", escape(err));
            continue;
        }
        let priorities: Vec<String> = e
            .nodes
            .iter()
            .find(|n| !n.priorities.is_empty())
            .map(|n| {
                n.priorities
                    .iter()
                    .map(|p| format!("{} (×{})", p.name, p.weight))
                    .collect()
            })
            .unwrap_or_default();
        out.push_str("<table><tr><th>node</th><th>filter</th>");
        for p in &priorities {
            let _ = write!(out, "<th>{}</th>", escape(p));
        }
        out.push_str("<th>total</th></tr>\n");
        for n in &e.nodes {
            let filter = match &n.result {
                berth_scheduler::PredicateResult::Fit => "fits".to_string(),
                berth_scheduler::PredicateResult::Unschedulable { reasons, .. } => {
                    escape(&reasons.join("; "))
                }
                berth_scheduler::PredicateResult::Error(m) => format!("error: {}", escape(m)),
            };
            let _ = write!(out, "<tr><td>{}</td><td>{filter}</td>", escape(&n.node));
            for i in 0..priorities.len() {
                let score = n
                    .priorities
                    .get(i)
                    .map_or("-".into(), |p| p.score.to_string());
                let _ = write!(out, "<td>{score}</td>");
            }
            let total = n.total.map_or("-".into(), |t| t.to_string());
            let _ = writeln!(out, "<td>{total}</td></tr>");
        }
        out.push_str("</table>\n");
    }
}

/// The page of one run.
pub fn render(r: &Report, summary: &str) -> String {
    let mut body = String::new();
    let _ = writeln!(
        body,
        "<h1>berth simulate</h1><pre>{}</pre>",
        escape(summary)
    );
    body.push_str("<h2>Utilisation</h2><p>White is 0%, deep red 100% of allocatable.</p>\n");
    plot(&mut body, utilisation_heat_map(r, "cpu"));
    plot(&mut body, utilisation_heat_map(r, "memory"));
    plot(&mut body, pending_plot(&[r]));
    plot(&mut body, events_plot(r));
    descheduler_moves(&mut body, r);
    why_here(&mut body, r);
    explanations(&mut body, r);
    page("berth simulate", &body)
}

/// The page of a comparison: both runs side by side.
pub fn render_compare(a: &Report, b: &Report, d: &Differences, summary: &str) -> String {
    let mut body = String::new();
    let _ = writeln!(
        body,
        "<h1>berth simulate --compare</h1><pre>{}</pre>",
        escape(summary)
    );
    plot(&mut body, pending_plot(&[a, b]));
    body.push_str("<div class=\"side\">");
    for r in [a, b] {
        let _ = writeln!(body, "<div><h2>{}</h2>", escape(&r.simulation.scheduler));
        plot(&mut body, utilisation_heat_map(r, "cpu"));
        body.push_str("</div>");
    }
    body.push_str("</div>\n<h2>Pods placed differently</h2><table><tr><th>pod</th>");
    let _ = write!(
        body,
        "<th>{}</th><th>{}</th></tr>",
        escape(&d.schedulers[0]),
        escape(&d.schedulers[1])
    );
    for p in d.placements_differing.iter().take(MAX_TABLE_ROWS) {
        let _ = writeln!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&p.pod),
            escape(p.a.as_deref().unwrap_or("-")),
            escape(p.b.as_deref().unwrap_or("-"))
        );
    }
    body.push_str("</table>\n");
    page("berth simulate --compare", &body)
}

#[cfg(test)]
mod tests {
    use super::super::report::{build, NodeSample, Record, Sample, Settings};
    use super::*;

    fn report() -> Report {
        let node = |name: &str, cpu| NodeSample {
            name: name.into(),
            cpu_requested_milli: cpu,
            cpu_allocatable_milli: 2000,
            memory_requested: 0,
            memory_allocatable: 1,
            pods: 1,
        };
        build(
            Settings {
                until_seconds: 3600,
                seed: 0,
                sample_interval_seconds: 600,
                scheduler: "a <b>".into(),
                nodes: 2,
            },
            &[
                Record::Sample(Sample {
                    at: 0,
                    pending: 0,
                    nodes: vec![node("n1", 0), node("n2", 0)],
                }),
                Record::Sample(Sample {
                    at: 600_000,
                    pending: 2,
                    nodes: vec![node("n1", 2000), node("n2", 500)],
                }),
                Record::Scheduled {
                    at: 5,
                    pod: "default/<x>".into(),
                    node: "n1".into(),
                },
            ],
        )
    }

    #[test]
    fn the_page_is_self_contained_and_escapes_names() {
        let html = render(&report(), "summary & more");
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<svg"), "no plot drawn");
        assert!(html.contains("default/&lt;x&gt;"));
        assert!(html.contains("summary &amp; more"));
        assert!(
            !html.contains("http://") || !html.contains("src=\"http"),
            "fetches something"
        );
        assert!(!html.contains("<script src"));
        assert_eq!(
            html,
            render(&report(), "summary & more"),
            "not deterministic"
        );
    }

    #[test]
    fn moves_and_explanations_get_their_tables() {
        use berth_scheduler::{Explanation, NodeExplanation, PredicateResult, PriorityScore};
        let explanation = Explanation {
            pod: "default/p".into(),
            nodes: vec![
                NodeExplanation {
                    node: "n1".into(),
                    result: PredicateResult::Fit,
                    priorities: vec![PriorityScore {
                        name: "LeastRequestedPriority".into(),
                        score: 7,
                        weight: 1,
                    }],
                    total: Some(7),
                },
                NodeExplanation {
                    node: "n2".into(),
                    result: PredicateResult::Unschedulable {
                        reasons: vec!["Insufficient cpu".into()],
                        resolvable: true,
                    },
                    priorities: vec![],
                    total: None,
                },
            ],
            error: None,
        };
        let r = build(
            report().simulation,
            &[
                Record::Moved {
                    at: 1000,
                    pod: "default/a".into(),
                    from: "n1".into(),
                    to: None,
                    strategy: "RemoveDuplicates".into(),
                    message: Some("0/2 nodes are available".into()),
                },
                Record::Explained {
                    at: 5,
                    pod: "default/p".into(),
                    explanation,
                },
            ],
        );
        let html = render(&r, "");
        assert!(html.contains("Descheduler preview"), "{html}");
        assert!(html.contains("fits nowhere: not evicted (0/2 nodes are available)"));
        assert!(html.contains("<th>LeastRequestedPriority (×1)</th>"));
        assert!(html.contains("<td>n1</td><td>fits</td><td>7</td><td>7</td>"));
        assert!(html.contains("<td>n2</td><td>Insufficient cpu</td><td>-</td><td>-</td>"));
    }

    #[test]
    fn the_heat_runs_from_white_to_red() {
        assert_eq!(heat(0.0), RGBColor(255, 255, 255));
        assert_eq!(heat(1.0), RGBColor(200, 30, 30));
        assert_eq!(heat(7.0), heat(1.0));
    }
}
