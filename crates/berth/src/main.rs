//! The `berth` command: the all-in-one control plane and its tools.

mod bench;
mod client;
mod controllers;
mod descheduler;
mod explain;
mod ha;
mod identities;
mod kubeconfig;
mod leading;
mod logging;
mod master_config;
mod node;
mod output;
mod scheduler;
mod scheduler_pod;
mod serve;
mod simulate;

use clap::{Parser, Subcommand};

// The control plane allocates and frees many small buffers per request (JSON values, bodies,
// watch events) from every worker thread; glibc's malloc spent about a quarter of the CPU of
// `berth bench e2e` on that (perf), mimalloc a fraction of it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// berth: a Kubernetes-compatible scheduling control plane.
#[derive(Parser)]
#[command(name = "berth", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
// Parsed once at start: the size of the largest argument set does not matter.
#[allow(clippy::large_enum_variant)]
enum Command {
    /// Run the all-in-one control plane: API server, embedded storage and simulated nodes.
    Serve(serve::ServeArgs),
    /// Run a scheduler against any Kubernetes API server (a custom scheduler next to the default one).
    Scheduler(scheduler::SchedulerArgs),
    /// Run the controllers (workloads, garbage collection, nodes) against any Kubernetes API server.
    Controllers(controllers::ControllersArgs),
    /// Run the descheduler against any Kubernetes API server (once, or every --descheduling-interval).
    Descheduler(descheduler::DeschedulerArgs),
    /// Explain a scheduling decision: per node, failed predicates or per-priority scores.
    #[command(subcommand)]
    Explain(explain::ExplainCommand),
    /// Write a kubeconfig for a new user, with a client certificate from berth's CA.
    Kubeconfig(kubeconfig::KubeconfigArgs),
    /// Fail and heal simulated nodes (stop, start, partition, not-ready) through `berth.io/simulate`.
    Node(node::NodeArgs),
    /// What-if on virtual time: run a workload timeline through the whole control plane on a
    /// paused clock (a day in seconds) and report placements, utilisation and pending pods;
    /// `simulate capacity` counts how many more of a pod fit.
    Simulate(simulate::SimulateArgs),
    /// Benchmarks that print pods/second (never asserted).
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

impl Command {
    /// The logging flags of the component the command runs (the tools log as by default).
    fn logging(&self) -> logging::LoggingArgs {
        match self {
            Command::Serve(a) => a.logging.clone(),
            Command::Scheduler(a) => a.logging.clone(),
            Command::Controllers(a) => a.logging.clone(),
            Command::Descheduler(a) => logging::LoggingArgs {
                logging_format: a.logging_format.clone(),
                v: None,
            },
            _ => logging::LoggingArgs::default(),
        }
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    logging::init(&cli.command.logging());
    // A simulation runs on its own paused, single-threaded runtimes (the clock jumps).
    let cli = match cli.command {
        Command::Simulate(args) => return simulate::main(args),
        Command::Bench(bench::BenchCommand::Simulate(args)) => {
            let _ = rustls::crypto::ring::default_provider().install_default();
            return simulate::bench::run(args);
        }
        command => Cli { command },
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => serve::run(args).await,
            Command::Scheduler(args) => scheduler::run(args).await,
            Command::Controllers(args) => controllers::run(args).await,
            Command::Descheduler(args) => descheduler::run(args).await,
            Command::Explain(cmd) => explain::run(cmd).await,
            Command::Bench(cmd) => bench::run(cmd).await,
            Command::Kubeconfig(args) => kubeconfig::run(args),
            Command::Node(args) => node::run(args).await,
            Command::Simulate(_) => Ok(()),
        }
    })
}
