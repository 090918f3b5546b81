//! berth's logs as upstream's components write them: klog's text lines by default
//! (`I1127 21:16:11.123456   12345 informer.rs:75] "message" key="value"`), or upstream's JSON
//! schema with `--logging-format=json` (`{"ts":1764278171.123456,"caller":"informer.rs:75",
//! "msg":"message","v":0,"key":"value"}`); `-v`/`--v` sets the verbosity as klog's does.
//!
//! Events inside a program berth runs in a simulated pod (see [`berth_core::container_log`]) go
//! to that container's log, as klog text, and not to berth's stderr.

use berth_core::container_log::{self, ContainerLog};
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

/// The logging flags every component takes.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LoggingArgs {
    /// Log format: `text` (klog's lines) or `json` (upstream's JSON schema).
    #[arg(long = "logging-format", default_value = "text", value_parser = ["text", "json"])]
    pub logging_format: String,
    /// Log verbosity, as klog's: 0 to 3 logs berth's information messages, 4 and 5 its debug
    /// messages, 6 and more everything it traces. Without it, `BERTH_LOG` decides (warnings only
    /// by default).
    #[arg(short = 'v', long = "v", value_name = "LEVEL")]
    pub v: Option<u8>,
}

/// How a line is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

impl LoggingArgs {
    fn format(&self) -> Format {
        if self.logging_format == "json" {
            Format::Json
        } else {
            Format::Text
        }
    }
}

/// The directives for berth's stderr: `-v` if given, else `BERTH_LOG` (a bare level is berth's
/// own logs at that level, its dependencies staying at `warn`; anything else a directive list
/// as given), else warnings only. kube-runtime's watcher reports each failed list with a debug
/// dump of the error; berth's informers report it once, in upstream's words, so the watcher's
/// own warnings are left out.
pub fn directives(v: Option<u8>, berth_log: Option<&str>) -> String {
    let quiet_watcher = ",kube_runtime::watcher=error";
    if let Some(v) = v {
        let level = match v {
            0..=3 => "info",
            4..=5 => "debug",
            _ => "trace",
        };
        return format!("warn,berth={level}{quiet_watcher}");
    }
    match berth_log.map(str::trim) {
        None | Some("") => format!("warn{quiet_watcher}"),
        Some(level) if level.parse::<Level>().is_ok() => {
            format!("warn,berth={level}{quiet_watcher}")
        }
        Some(list) => list.to_string(),
    }
}

/// What a container's log takes: berth's information messages and everyone's warnings.
const CONTAINER_DIRECTIVES: &str = "warn,berth=info,kube_runtime::watcher=error";

/// Installs the process's log output; call once, before anything logs.
pub fn init(args: &LoggingArgs) {
    let spec = directives(args.v, std::env::var("BERTH_LOG").ok().as_deref());
    let Ok(stderr) = spec.parse::<Targets>() else {
        // A directive list only EnvFilter reads (span fields, ...): berth's plain output.
        let filter = tracing_subscriber::EnvFilter::try_new(&spec)
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .init();
        return;
    };
    let containers: Targets = CONTAINER_DIRECTIVES.parse().unwrap_or_default();
    let union = {
        let (stderr, containers) = (stderr.clone(), containers.clone());
        tracing_subscriber::filter::filter_fn(move |m| {
            stderr.would_enable(m.target(), m.level())
                || containers.would_enable(m.target(), m.level())
        })
    };
    let output = Output {
        format: args.format(),
        stderr,
        containers,
        pid: std::process::id(),
        verbosity: args.v.map(u64::from),
    };
    let _ = tracing_subscriber::registry()
        .with(tracing_subscriber::Layer::with_filter(output, union))
        .try_init();
}

/// Writes each event to stderr, or to the log of the container it happened in.
struct Output {
    format: Format,
    stderr: Targets,
    containers: Targets,
    pid: u32,
    /// `-v`: a line that gives its own verbosity (`v = 2`) above it is left out, as klog's
    /// `V(2)` lines are at `-v=1`.
    verbosity: Option<u64>,
}

/// The container log a span routes its events to (in the span's extensions).
struct Routed(Arc<ContainerLog>);

impl<S> Layer<S> for Output
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: Context<'_, S>,
    ) {
        let m = attrs.metadata();
        if m.target() != container_log::SPAN_TARGET || m.name() != container_log::SPAN_NAME {
            return;
        }
        let mut found = LogId(None);
        attrs.record(&mut found);
        if let (Some(log), Some(span)) = (found.0.and_then(container_log::find), ctx.span(id)) {
            span.extensions_mut().insert(Routed(log));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let m = event.metadata();
        let routed = ctx.event_scope(event).and_then(|scope| {
            scope
                .into_iter()
                .find_map(|span| span.extensions().get::<Routed>().map(|r| r.0.clone()))
        });
        let now = wall_now();
        match routed {
            Some(log) => {
                if self.containers.would_enable(m.target(), m.level()) {
                    let line = format_line(Format::Text, event, now, self.pid);
                    log.push(
                        &now.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true),
                        &line,
                    );
                }
            }
            None => {
                let too_verbose = self.verbosity.is_some_and(|limit| {
                    let mut v = LineVerbosity(None);
                    event.record(&mut v);
                    v.0.is_some_and(|v| v > limit)
                });
                if !too_verbose && self.stderr.would_enable(m.target(), m.level()) {
                    let mut line = format_line(self.format, event, now, self.pid);
                    line.push('\n');
                    let _ = std::io::stderr().lock().write_all(line.as_bytes());
                }
            }
        }
    }
}

/// Log lines carry the wall-clock time, as klog's do: logs are not component logic, and a
/// simulation's virtual time means nothing to whoever reads them.
#[allow(clippy::disallowed_methods)]
fn wall_now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
}

/// The `v` an event gives itself, if any.
struct LineVerbosity(Option<u64>);

impl Visit for LineVerbosity {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "v" {
            self.0 = Some(value);
        }
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        if field.name() == "v" {
            self.0 = u64::try_from(value).ok();
        }
    }
    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}

struct LogId(Option<u64>);

impl Visit for LogId {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == container_log::SPAN_FIELD {
            self.0 = Some(value);
        }
    }
    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}

/// A field's value: quoted text, or a bare number or boolean.
enum Value {
    Text(String),
    Bare(String),
}

/// The event's message and fields, in order.
#[derive(Default)]
struct Fields {
    message: String,
    fields: Vec<(&'static str, Value)>,
    /// klog's verbosity of the line, when the event says (`tracing::info!(v = 2, ...)`, as
    /// upstream's `logger.V(2).Info`): JSON's `v`, and not a key of the line.
    v: Option<u64>,
}

impl Fields {
    fn add(&mut self, field: &Field, value: Value) {
        // klog's key for an error; a trailing `_` lets a call site use a key tracing keeps
        // for itself (`message_` is the key `message`).
        let name = match field.name() {
            "error" => "err",
            n => n.strip_suffix('_').filter(|k| !k.is_empty()).unwrap_or(n),
        };
        if field.name() == "message" {
            self.message = match value {
                Value::Text(t) | Value::Bare(t) => t,
            };
        } else if let ("v", Value::Bare(b)) = (name, &value) {
            self.v = b.parse().ok();
        } else {
            self.fields.push((name, value));
        }
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.add(field, Value::Text(value.to_string()));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.add(field, Value::Bare(value.to_string()));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.add(field, Value::Bare(value.to_string()));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.add(field, Value::Bare(value.to_string()));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.add(field, Value::Bare(value.to_string()));
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.add(field, Value::Text(value.to_string()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.add(field, Value::Text(format!("{value:?}")));
    }
}

/// One event as a line (without its newline).
fn format_line(
    format: Format,
    event: &Event<'_>,
    now: chrono::DateTime<chrono::Utc>,
    pid: u32,
) -> String {
    let m = event.metadata();
    let mut fields = Fields::default();
    // A named log (an explicit target, as the access log's `berth::access`) is klog's named
    // logger: `logger="berth::access"`.
    if m.module_path() != Some(m.target()) {
        fields
            .fields
            .push(("logger", Value::Text(m.target().to_string())));
    }
    event.record(&mut fields);
    let file = m
        .file()
        .map(|f| f.rsplit('/').next().unwrap_or(f))
        .unwrap_or("???");
    let caller = format!("{file}:{}", m.line().unwrap_or(0));
    match format {
        Format::Text => klog_line(*m.level(), now, pid, &caller, &fields),
        Format::Json => json_line(*m.level(), now, &caller, &fields),
    }
}

/// `I1127 21:16:11.123456   12345 file.rs:123] "message" key="value"`.
fn klog_line(
    level: Level,
    now: chrono::DateTime<chrono::Utc>,
    pid: u32,
    caller: &str,
    fields: &Fields,
) -> String {
    let letter = match level {
        Level::ERROR => 'E',
        Level::WARN => 'W',
        _ => 'I',
    };
    let mut out = format!(
        "{letter}{} {pid:>7} {caller}] {}",
        now.format("%m%d %H:%M:%S%.6f"),
        quote(&fields.message)
    );
    for (k, v) in &fields.fields {
        let _ = match v {
            Value::Text(t) => write!(out, " {k}={}", quote(t)),
            Value::Bare(b) => write!(out, " {k}={b}"),
        };
    }
    out
}

/// Go's `%q` of a string, as klog quotes messages and text values.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A `namespace/name` (or a bare name) as klog's JSON writes an object reference.
fn object_ref(key: &str) -> serde_json::Value {
    match key.split_once('/') {
        Some((ns, name)) if !ns.is_empty() => {
            serde_json::json!({"name": name, "namespace": ns})
        }
        _ => serde_json::json!({"name": key.trim_start_matches('/')}),
    }
}

/// Upstream's JSON schema: `ts` (seconds since the epoch), `caller`, `msg`, `v` (not on
/// errors), then the key/value pairs, in that order (written member by member: a JSON map
/// would sort its keys unless serde_json's `preserve_order` happens to be on).
fn json_line(
    level: Level,
    now: chrono::DateTime<chrono::Utc>,
    caller: &str,
    fields: &Fields,
) -> String {
    let ts = now.timestamp() as f64 + f64::from(now.timestamp_subsec_micros()) / 1e6;
    let mut members = vec![
        ("ts", serde_json::json!(ts)),
        ("caller", caller.into()),
        ("msg", fields.message.clone().into()),
    ];
    let v = match level {
        Level::ERROR => None,
        Level::WARN | Level::INFO => Some(fields.v.unwrap_or(0)),
        Level::DEBUG => Some(fields.v.unwrap_or(4)),
        Level::TRACE => Some(fields.v.unwrap_or(6)),
    };
    if let Some(v) = v {
        members.push(("v", v.into()));
    }
    for (k, v) in &fields.fields {
        let value = match v {
            // klog's object reference (`klog.KObj`): `ns/name` in text, an object in JSON.
            Value::Text(t) if *k == "pod" => object_ref(t),
            Value::Text(t) => serde_json::Value::String(t.clone()),
            Value::Bare(b) => serde_json::from_str(b).unwrap_or_else(|_| b.clone().into()),
        };
        members.push((*k, value));
    }
    let body: Vec<String> = members
        .iter()
        .map(|(k, v)| format!("{}:{v}", serde_json::Value::from(*k)))
        .collect();
    format!("{{{}}}", body.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at() -> chrono::DateTime<chrono::Utc> {
        chrono::Utc
            .with_ymd_and_hms(2026, 11, 27, 21, 16, 11)
            .single()
            .unwrap_or_default()
            + chrono::Duration::microseconds(123456)
    }

    fn fields() -> Fields {
        Fields {
            message: "Attempting to acquire leader lease".into(),
            fields: vec![
                ("lease", Value::Text("kube-system/kube-scheduler".into())),
                ("attempt", Value::Bare("3".into())),
                ("err", Value::Text("a \"quoted\"\nerror".into())),
            ],
            v: None,
        }
    }

    #[test]
    fn text_lines_have_klogs_header_and_quoted_values() {
        assert_eq!(
            klog_line(Level::INFO, at(), 12345, "leader.rs:42", &fields()),
            "I1127 21:16:11.123456   12345 leader.rs:42] \"Attempting to acquire leader lease\" \
             lease=\"kube-system/kube-scheduler\" attempt=3 err=\"a \\\"quoted\\\"\\nerror\""
        );
        let e = klog_line(Level::ERROR, at(), 7, "x.rs:1", &Fields::default());
        assert_eq!(e, "E1127 21:16:11.123456       7 x.rs:1] \"\"");
        assert!(klog_line(Level::WARN, at(), 7, "x.rs:1", &Fields::default()).starts_with('W'));
        assert!(klog_line(Level::DEBUG, at(), 7, "x.rs:1", &Fields::default()).starts_with('I'));
    }

    #[test]
    fn json_lines_follow_upstreams_schema() {
        let line = json_line(Level::INFO, at(), "leader.rs:42", &fields());
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["caller"], "leader.rs:42");
        assert_eq!(v["msg"], "Attempting to acquire leader lease");
        assert_eq!(v["v"], 0);
        assert_eq!(v["attempt"], 3);
        assert_eq!(v["lease"], "kube-system/kube-scheduler");
        assert!((v["ts"].as_f64().unwrap() - (at().timestamp() as f64 + 0.123_456)).abs() < 1e-3);
        assert!(line.starts_with("{\"ts\":"), "{line}");
        let error = json_line(Level::ERROR, at(), "x.rs:1", &fields());
        assert!(!error.contains("\"v\""), "{error}");
    }

    #[test]
    fn a_lines_verbosity_is_jsons_v_and_no_key() {
        // kube-scheduler's `logger.V(2).Info("Successfully bound pod to node", ...)`.
        let f = Fields {
            message: "Successfully bound pod to node".into(),
            fields: vec![
                ("pod", Value::Text("ns/web".into())),
                ("node", Value::Text("n1".into())),
                ("evaluatedNodes", Value::Bare("3".into())),
                ("feasibleNodes", Value::Bare("3".into())),
            ],
            v: Some(2),
        };
        assert_eq!(
            klog_line(Level::INFO, at(), 1, "scheduling_loop.rs:1", &f),
            "I1127 21:16:11.123456       1 scheduling_loop.rs:1] \"Successfully bound pod to node\" \
             pod=\"ns/web\" node=\"n1\" evaluatedNodes=3 feasibleNodes=3"
        );
        let v: serde_json::Value =
            serde_json::from_str(&json_line(Level::INFO, at(), "x.rs:1", &f)).unwrap();
        assert_eq!(v["v"], 2);
        // klog's JSON writes an object reference as an object.
        assert_eq!(
            v["pod"],
            serde_json::json!({"name": "web", "namespace": "ns"})
        );
        assert_eq!(v["node"], "n1");
        assert_eq!(v["evaluatedNodes"], 3);
    }

    /// The lines a real `tracing` event makes, in `format`.
    fn lines_of(format: Format, emit: impl FnOnce()) -> Vec<String> {
        struct Capture(Arc<std::sync::Mutex<Vec<String>>>, Format);
        impl<S: Subscriber> Layer<S> for Capture {
            fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
                let line = format_line(self.1, event, at(), 1);
                self.0.lock().unwrap().push(line);
            }
        }
        let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry().with(Capture(lines.clone(), format));
        tracing::subscriber::with_default(subscriber, emit);
        let out = lines.lock().unwrap().clone();
        out
    }

    #[test]
    fn an_events_v_field_is_its_verbosity_and_message_underscore_is_the_key_message() {
        let emit = || {
            tracing::info!(
                v = 2,
                pod = %"per-pod/denied",
                reason = "NodeAffinity",
                message_ = %"node(s) didn't match",
                "Pod admission denied"
            )
        };
        let text = lines_of(Format::Text, emit);
        assert!(
            text[0].ends_with(
                "] \"Pod admission denied\" pod=\"per-pod/denied\" reason=\"NodeAffinity\" \
                 message=\"node(s) didn't match\""
            ),
            "{text:?}"
        );
        let json = lines_of(Format::Json, emit);
        let v: serde_json::Value = serde_json::from_str(&json[0]).unwrap();
        assert_eq!(v["msg"], "Pod admission denied");
        assert_eq!(v["v"], 2);
        assert_eq!(v["message"], "node(s) didn't match");
        assert_eq!(v["pod"]["namespace"], "per-pod");
    }

    #[test]
    fn verbosity_and_berth_log_give_the_directives() {
        let cases = [
            (None, None, "warn,kube_runtime::watcher=error"),
            (
                None,
                Some("debug"),
                "warn,berth=debug,kube_runtime::watcher=error",
            ),
            (None, Some("info,hyper=trace"), "info,hyper=trace"),
            (
                Some(0),
                Some("debug"),
                "warn,berth=info,kube_runtime::watcher=error",
            ),
            (Some(2), None, "warn,berth=info,kube_runtime::watcher=error"),
            (
                Some(4),
                None,
                "warn,berth=debug,kube_runtime::watcher=error",
            ),
            (
                Some(10),
                None,
                "warn,berth=trace,kube_runtime::watcher=error",
            ),
        ];
        for (v, env, want) in cases {
            assert_eq!(directives(v, env), want, "{v:?} {env:?}");
        }
    }

    #[test]
    fn logging_flags_parse_as_upstreams() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cmd {
            #[command(flatten)]
            logging: LoggingArgs,
        }
        for (argv, format, v) in [
            (&["c"][..], "text", None),
            (&["c", "--v=2"][..], "text", Some(2)),
            (&["c", "-v", "4"][..], "text", Some(4)),
            (&["c", "-v=3", "--logging-format=json"][..], "json", Some(3)),
        ] {
            let c = Cmd::try_parse_from(argv).unwrap();
            assert_eq!(c.logging.logging_format, format, "{argv:?}");
            assert_eq!(c.logging.v, v, "{argv:?}");
        }
        assert!(Cmd::try_parse_from(["c", "--logging-format=yaml"]).is_err());
    }
}
