//! Recognised commands: a simulated container whose command is one berth knows (registered by
//! the binary, for example `/bin/descheduler`) runs that program in process once its pod is
//! Running; when the program returns, the container terminates (exit 0, or 1 with the error as
//! its termination message) and a `restartPolicy: Never`/`OnFailure` pod Succeeds or Fails.
//! Every other container stays a plain simulated one.
//!
//! The command is read as the container runtime would run it: `command` then `args`, and a
//! `/bin/sh -c` (or `-ec`, `-xc`, …) script is split into words, so the seed's
//! `/bin/sh -ec "/bin/descheduler --policy-config-file /policy-dir/policy.yaml"` is recognised.
//! The program sees the files of the container's ConfigMap volumes at their mount paths.
//!
//! With a [`Connect`] hook (what `berth serve` gives), a program acts as its pod's
//! ServiceAccount: the kubelet asks for a token bound to the pod (TokenRequest, as a kubelet
//! mounts one, refreshed as upstream's kubelet refreshes it: [`crate::pod_token`]) and the
//! hook turns it into a client of the API server's network listener, so the program has
//! exactly the permissions RBAC grants that account, and its token dies with the pod. Without the hook, programs use the kubelet's own client.

use crate::pod_token::TokenSource;
use berth_core::clock::Clock;
use berth_core::container_log::{self, ContainerLog};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod};
use kube::api::{Api, Patch, PatchParams};
use kube::ResourceExt;
use serde_json::json;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

/// What a recognised program gets.
pub struct Invocation {
    /// argv: the program's path first, then its arguments.
    pub argv: Vec<String>,
    /// The container's ConfigMap-mounted files, by absolute path.
    pub files: BTreeMap<String, String>,
    /// The pod.
    pub pod: Arc<Pod>,
    /// A client to the cluster.
    pub client: kube::Client,
    /// Turns `true` when the pod is deleted: a long-running program stops then (it is dropped
    /// [`STOP_GRACE`] later if it has not).
    pub stopped: tokio::sync::watch::Receiver<bool>,
    /// The container's log: what the program prints goes here (what it logs through `tracing`
    /// goes here too, as it runs in the log's span).
    pub log: Arc<ContainerLog>,
}

/// How long a program may take to stop once its pod is deleted.
pub const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);
/// How many times a mounted ConfigMap is asked for while the Node authorizer has not yet seen
/// the pod bound to this node.
const TOKEN_ATTEMPTS: usize = 10;
/// How often a running program's pod is looked at to see whether it was deleted.
const POD_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// A program: `Ok(message)` exits 0, `Err(message)` exits 1; the message becomes the
/// container's termination message, and an `Ok` message is also what the program printed (the
/// container's log shows it). A program reports its own errors in its log.
pub type Program =
    Arc<dyn Fn(Invocation) -> BoxFuture<'static, Result<String, String>> + Send + Sync>;

/// Turns a pod's token into a client of the cluster (its URL and CA are the hook's) that
/// presents, on each request, the token the source holds then: the kubelet refreshes it
/// while the program runs (see [`crate::pod_token`]).
pub type Connect =
    Arc<dyn Fn(TokenSource) -> BoxFuture<'static, Result<kube::Client, String>> + Send + Sync>;

/// The logs of the pods' programs, by `namespace/name`: what each program logged and printed
/// (see [`berth_core::container_log`]).
#[derive(Clone, Default)]
pub struct ProgramOutput(Arc<Mutex<std::collections::HashMap<String, Arc<ContainerLog>>>>);

impl ProgramOutput {
    /// The log of the program of pod `key` (`namespace/name`), once it started.
    pub fn get(&self, key: &str) -> Option<Arc<ContainerLog>> {
        self.0.lock().ok()?.get(key).cloned()
    }

    /// The log a program of pod `key` starts writing: the pod's earlier run's becomes its
    /// previous one.
    fn open(&self, key: String) -> Arc<ContainerLog> {
        let Ok(mut m) = self.0.lock() else {
            return ContainerLog::new();
        };
        let log = m.entry(key).or_insert_with(ContainerLog::new).clone();
        if !log.lines().is_empty() {
            log.restarted();
        }
        log
    }

    /// Forgets the logs of pods no longer on this node (`keep` says which are).
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        if let Ok(mut m) = self.0.lock() {
            m.retain(|k, _| keep(k));
        }
    }
}

/// The programs berth runs in process, by the path a container names them with.
#[derive(Clone, Default)]
pub struct Commands {
    programs: Vec<(String, Program)>,
    started: Arc<Mutex<HashSet<String>>>,
    running: crate::running::Running,
    connect: Option<Connect>,
    output: ProgramOutput,
}

impl Commands {
    /// Runs `program` for containers whose command is `path` (or its file name, e.g.
    /// `descheduler` for `/bin/descheduler`).
    pub fn register(mut self, path: &str, program: Program) -> Commands {
        self.programs.push((path.to_string(), program));
        self
    }

    /// Programs act as their pod's ServiceAccount, through clients `connect` makes from a
    /// token bound to the pod.
    pub fn connect_as_service_account(mut self, connect: Connect) -> Commands {
        self.connect = Some(connect);
        self
    }

    /// What the programs printed, for the node's `/containerLogs`.
    pub fn output(&self) -> ProgramOutput {
        self.output.clone()
    }

    /// Stops the programs of `node`'s pods, because its kubelet stops here (the node moved to
    /// another replica, or this replica lost its own Lease): each is told to stop at once and
    /// dropped if it has not ended within `grace`; none of them writes its container's end,
    /// and each may start again should the node come back. The future resolves once they have
    /// all ended.
    pub fn stop_node(&self, node: &str, grace: std::time::Duration) -> BoxFuture<'static, ()> {
        let (uids, ended) = self.running.stop_node(node, grace);
        if !uids.is_empty() {
            if let Ok(mut started) = self.started.lock() {
                for uid in &uids {
                    started.remove(uid);
                }
            }
            tracing::info!(node = %node, programs = uids.len(), "the node's kubelet stops here: stopped the programs of its pods");
        }
        ended
    }

    /// The program `argv` runs: registered as its path (or file name), optionally followed by
    /// the subcommand it must name (`berth scheduler`).
    fn find(&self, argv: &[String]) -> Option<Program> {
        self.programs.iter().find_map(|(registered, p)| {
            let mut words = registered.split(' ');
            let path = words.next()?;
            let base = path.rsplit('/').next().unwrap_or(path);
            let argv0 = argv.first()?;
            let program = argv0 == path || argv0 == base || argv0.rsplit('/').next() == Some(base);
            let subcommand = words
                .enumerate()
                .all(|(i, w)| argv.get(i + 1).map(String::as_str) == Some(w));
            (program && subcommand).then(|| p.clone())
        })
    }

    /// Starts the pod's recognised container, once, when the pod is Running.
    pub fn observe(&self, client: &kube::Client, pod: &Arc<Pod>, clock: &Clock) {
        if self.programs.is_empty() || pod.metadata.deletion_timestamp.is_some() {
            return;
        }
        let running = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
        let Some(spec) = pod.spec.as_ref() else {
            return;
        };
        if !running || spec.containers.len() != 1 {
            return;
        }
        let container = &spec.containers[0];
        let Some(argv) = argv(container) else { return };
        let Some(program) = self.find(&argv) else {
            return;
        };
        let uid = pod.uid().unwrap_or_default();
        // One run per start of the container: a container the kubelet restarts (a higher
        // `restartCount`, running again) runs its program again.
        let status = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|s| s.iter().find(|s| s.name == container.name));
        if status.is_some_and(|s| s.state.as_ref().is_some_and(|st| st.terminated.is_some())) {
            return;
        }
        let restarts = status.map_or(0, |s| s.restart_count);
        let first = self
            .started
            .lock()
            .is_ok_and(|mut started| started.insert(format!("{uid}/{restarts}")));
        if !first {
            return;
        }
        let node = spec.node_name.clone().unwrap_or_default();
        let (client, pod, clock) = (client.clone(), pod.clone(), clock.clone());
        let container = container.clone();
        let connect = self.connect.clone();
        let output = self.output.clone();
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let stop = Arc::new(stop);
        let log = output.open(format!(
            "{}/{}",
            pod.namespace().unwrap_or_default(),
            pod.name_any()
        ));
        let (running, own_stop, own_uid) = (self.running.clone(), stop.clone(), uid.clone());
        let task = tokio::spawn(async move {
            let files = mounted_files(&client, &pod, &container).await;
            let started_at = clock.timestamp();
            let mut refreshing = None;
            let program_client = match &connect {
                None => Ok(client.clone()),
                Some(connect) => match crate::pod_token::mount(&client, &pod, &clock).await {
                    Ok((token, task)) => {
                        // Dropped with this task, as `watching`.
                        refreshing = Some(AbortOnDrop(task));
                        connect(token).await
                    }
                    Err(e) => Err(e),
                },
            };
            // Dropped with this task, should the program be dropped at a hand-over.
            let watching = AbortOnDrop(tokio::spawn(watch_deletion(
                client.clone(),
                pod.clone(),
                own_stop.clone(),
            )));
            // Everything the program logs, in this task or the ones it spawns in the span, goes
            // to the container's log.
            let attached = container_log::attach(log.clone());
            let run = async {
                match program_client {
                    Ok(program_client) => {
                        program(Invocation {
                            argv,
                            files,
                            pod: pod.clone(),
                            client: program_client,
                            stopped: stopped.clone(),
                            log: log.clone(),
                        })
                        .await
                    }
                    Err(e) => {
                        log.push(&log_time(&clock), &format!("Error: {e}"));
                        Err(e)
                    }
                }
            };
            let run = tracing::Instrument::instrument(run, attached.span());
            let mut deleted = stopped.clone();
            let result = tokio::select! {
                r = run => r,
                _ = async {
                    let _ = deleted.wait_for(|gone| *gone).await;
                    tokio::time::sleep(STOP_GRACE).await;
                } => Ok(String::new()),
            };
            drop(watching);
            drop(refreshing);
            drop(attached);
            running.ended(&own_uid, &own_stop);
            if *stopped.borrow() {
                return;
            }
            if let Ok(printed) = &result {
                log.push(&log_time(&clock), printed);
            }
            terminate(&client, &pod, &container.name, result, &started_at, &clock).await;
        });
        self.running.add(&uid, &node, stop, task);
    }
}

/// When a line is written to a container's log, as `kubectl logs --timestamps` prints it.
fn log_time(clock: &Clock) -> String {
    clock
        .now()
        .to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Sends `true` once the pod is deleted (gone, being deleted, or replaced by another of its name).
async fn watch_deletion(
    client: kube::Client,
    pod: Arc<Pod>,
    stop: Arc<tokio::sync::watch::Sender<bool>>,
) {
    let ns = pod.namespace().unwrap_or_else(|| "default".into());
    let api: Api<Pod> = Api::namespaced(client, &ns);
    loop {
        tokio::time::sleep(POD_CHECK).await;
        let gone = match api.get_opt(&pod.name_any()).await {
            Ok(None) => true,
            Ok(Some(now)) => {
                now.metadata.deletion_timestamp.is_some() || now.metadata.uid != pod.metadata.uid
            }
            Err(_) => false,
        };
        if gone {
            let _ = stop.send(true);
            return;
        }
    }
}

/// The argv a container runs, with a `sh -c` script split into words. A container that gives
/// only `args` runs its image's entrypoint: for berth's own image (deploy/Containerfile) that
/// is `/usr/local/bin/berth`; other images' entrypoints are unknown.
pub fn argv(c: &Container) -> Option<Vec<String>> {
    let mut words: Vec<String> = c.command.clone().unwrap_or_default();
    if words.is_empty() && is_berth_image(c.image.as_deref().unwrap_or("")) {
        words.push(BERTH_ENTRYPOINT.into());
    }
    words.extend(c.args.clone().unwrap_or_default());
    let is_shell = words
        .first()
        .is_some_and(|w| matches!(w.as_str(), "/bin/sh" | "sh" | "/bin/bash" | "bash"));
    if is_shell {
        let flag = words.get(1)?;
        if !(flag.starts_with('-') && flag.ends_with('c')) {
            return None;
        }
        return split_words(words.get(2)?);
    }
    (!words.is_empty()).then_some(words)
}

const BERTH_ENTRYPOINT: &str = "/usr/local/bin/berth";

/// Whether `image` is berth's (`.../berth:tag`, `berth@sha256:...`).
fn is_berth_image(image: &str) -> bool {
    let name = image.rsplit('/').next().unwrap_or(image);
    let name = name.split(['@', ':']).next().unwrap_or(name);
    name == "berth"
}

/// Splits a one-command shell script into words (quotes respected); `None` for anything more
/// than one simple command.
fn split_words(script: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for ch in script.trim().chars() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(ch);
                in_word = true;
            }
            (None, ';' | '|' | '&' | '$' | '`') => return None,
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, '\\') => {}
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return None;
    }
    if in_word {
        words.push(word);
    }
    (!words.is_empty()).then_some(words)
}

/// The files of the container's ConfigMap volumes, by path. A missing ConfigMap mounts nothing
/// (the program then reports the missing file).
async fn mounted_files(
    client: &kube::Client,
    pod: &Pod,
    c: &Container,
) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let ns = pod.namespace().unwrap_or_else(|| "default".into());
    let volumes = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.clone())
        .unwrap_or_default();
    for m in c.volume_mounts.iter().flatten() {
        let Some(cm) = volumes
            .iter()
            .find(|v| v.name == m.name)
            .and_then(|v| v.config_map.as_ref())
        else {
            continue;
        };
        let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
        let mut attempts = 0;
        let got = loop {
            match api.get(&cm.name).await {
                // The Node authorizer has not yet seen the pod bound to this node.
                Err(kube::Error::Api(e)) if e.code == 403 && attempts < TOKEN_ATTEMPTS => {
                    attempts += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                other => break other,
            }
        };
        let Ok(map) = got else {
            continue;
        };
        let data = map.data.unwrap_or_default();
        let dir = m.mount_path.trim_end_matches('/');
        match &cm.items {
            Some(items) if !items.is_empty() => {
                for item in items {
                    if let Some(text) = data.get(&item.key) {
                        files.insert(format!("{dir}/{}", item.path), text.clone());
                    }
                }
            }
            _ => {
                for (key, text) in data {
                    match &m.sub_path {
                        Some(sub) if !sub.is_empty() => {
                            if *sub == key {
                                files.insert(dir.to_string(), text);
                            }
                        }
                        _ => {
                            files.insert(format!("{dir}/{key}"), text);
                        }
                    }
                }
            }
        }
    }
    files
}

/// Longest termination message the API keeps (upstream: 4096 bytes).
const MESSAGE_LIMIT: usize = 4096;

async fn terminate(
    client: &kube::Client,
    pod: &Pod,
    container: &str,
    result: Result<String, String>,
    started_at: &str,
    clock: &Clock,
) {
    let (code, reason, message) = match result {
        Ok(m) => (0, "Completed", m),
        Err(m) => (1, "Error", m),
    };
    let mut message = message;
    if message.len() > MESSAGE_LIMIT {
        let mut cut = MESSAGE_LIMIT;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
    }
    let restart = pod
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.clone())
        .unwrap_or_else(|| "Always".into());
    // An `Always` pod would be restarted by a real kubelet; berth does not rerun it and leaves
    // it Running with its container terminated.
    let phase = match (restart.as_str(), code) {
        ("Always", _) => "Running",
        (_, 0) => "Succeeded",
        _ => "Failed",
    };
    let now = clock.timestamp();
    let image = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default();
    let uid = pod.uid().unwrap_or_default();
    let not_ready = |t: &str| json!({"type": t, "status": "False", "lastTransitionTime": now, "reason": "PodCompleted"});
    let mut status = json!({"status": {
        "phase": phase,
        "conditions": [not_ready("Ready"), not_ready("ContainersReady")],
        "containerStatuses": [{
            "name": container, "ready": false, "started": false, "restartCount": 0,
            "image": image, "imageID": format!("berth://{image}"),
            "containerID": format!("berth://{uid}-{container}"),
            "state": {"terminated": {"exitCode": code, "reason": reason, "message": message,
                                     "startedAt": started_at, "finishedAt": now,
                                     "containerID": format!("berth://{uid}-{container}")}},
        }],
    }});
    crate::observed::stamp(pod.metadata.generation, &mut status);
    let ns = pod.namespace().unwrap_or_else(|| "default".into());
    let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
    if let Err(e) = api
        .patch_status(
            &pod.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&status),
        )
        .await
    {
        tracing::warn!(pod = %pod.name_any(), error = %e, "recording the container's exit failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(command: &[&str], args: &[&str]) -> Container {
        Container {
            name: "c".into(),
            command: Some(command.iter().map(|s| s.to_string()).collect()),
            args: (!args.is_empty()).then(|| args.iter().map(|s| s.to_string()).collect()),
            ..Container::default()
        }
    }

    #[test]
    fn the_seeds_shell_wrapped_command_is_read_as_its_words() {
        let c = container(
            &[
                "/bin/sh",
                "-ec",
                "/bin/descheduler --policy-config-file /policy-dir/policy.yaml\n",
            ],
            &[],
        );
        assert_eq!(
            argv(&c).unwrap(),
            [
                "/bin/descheduler",
                "--policy-config-file",
                "/policy-dir/policy.yaml"
            ]
        );
        let direct = container(&["/bin/descheduler"], &["--dry-run", "-v"]);
        assert_eq!(
            argv(&direct).unwrap(),
            ["/bin/descheduler", "--dry-run", "-v"]
        );
        let quoted = container(
            &["sh", "-c", "descheduler --node-selector 'a=b, c!=d'"],
            &[],
        );
        assert_eq!(argv(&quoted).unwrap()[2], "a=b, c!=d");
    }

    #[test]
    fn scripts_that_are_more_than_one_command_are_not_recognised() {
        for script in ["a; b", "a | b", "a && b", "echo $X", "'unclosed"] {
            assert!(
                argv(&container(&["/bin/sh", "-c", script], &[])).is_none(),
                "{script}"
            );
        }
    }

    #[test]
    fn a_program_is_found_by_its_path_or_file_name() {
        let p: Program = Arc::new(|_| Box::pin(async { Ok(String::new()) }));
        let c = Commands::default()
            .register("/bin/descheduler", p.clone())
            .register("/usr/local/bin/berth scheduler", p);
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(c.find(&words(&["/bin/descheduler"])).is_some());
        assert!(c.find(&words(&["descheduler", "-v"])).is_some());
        assert!(c.find(&words(&["/bin/sleep"])).is_none());
        assert!(c
            .find(&words(&["berth", "scheduler", "--leader-elect"]))
            .is_some());
        assert!(c.find(&words(&["/opt/berth", "scheduler"])).is_some());
        assert!(c.find(&words(&["berth", "serve"])).is_none());
        assert!(c.find(&words(&["berth"])).is_none());
    }

    #[test]
    fn berths_image_runs_its_entrypoint_with_the_args() {
        let mut c = container(&[], &["scheduler", "--scheduler-name=custom-scheduler"]);
        c.command = None;
        c.image = Some("<registry>/<namespace>/berth:<tag>".into());
        assert_eq!(
            argv(&c).unwrap(),
            [
                BERTH_ENTRYPOINT,
                "scheduler",
                "--scheduler-name=custom-scheduler"
            ]
        );
        c.image = Some("nginx:1.27".into());
        assert_eq!(argv(&c).unwrap()[0], "scheduler");
    }
}
