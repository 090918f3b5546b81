//! `cargo run --release -p berth-scheduler --example bench -- --workload basic --nodes 5000 --pods 10000 [--init-pods K] [--percentage-of-nodes-to-score P] [--seed S] [--json]`

use berth_scheduler::bench::{run_tuned, BenchConfig, Tuning};

fn main() {
    let mut cfg = BenchConfig {
        workload: "basic".into(),
        nodes: 5000,
        pods: 10000,
        init_pods: None,
        percentage_of_nodes_to_score: 100,
        seed: 1,
    };
    let mut json = false;
    let mut tuning = Tuning::default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let val = args.get(i + 1).cloned().unwrap_or_default();
        let num = || {
            val.parse::<usize>()
                .unwrap_or_else(|_| panic!("{} needs a number", args[i]))
        };
        match args[i].as_str() {
            "--workload" => cfg.workload = val.clone(),
            "--nodes" => cfg.nodes = num(),
            "--pods" => cfg.pods = num(),
            "--init-pods" => cfg.init_pods = Some(num()),
            "--percentage-of-nodes-to-score" => cfg.percentage_of_nodes_to_score = num() as u32,
            "--seed" => cfg.seed = num() as u64,
            "--parallel-threshold" => tuning.parallel_threshold = Some(num()),
            "--no-reuse" => {
                tuning.reuse = false;
                i += 1;
                continue;
            }
            "--json" => {
                json = true;
                i += 1;
                continue;
            }
            other => panic!("unknown argument {other}"),
        }
        i += 2;
    }
    match run_tuned(&cfg, tuning) {
        Ok(r) if json => println!("{}", serde_json::to_string(&r).unwrap()),
        Ok(r) => println!(
            "{:<28} nodes {:>6} init {:>6} pods {:>6}  {:>10.0} pods/s  p50 {:.3} ms  p99 {:.3} ms  unschedulable {}  valid {}{}",
            r.workload, r.nodes, r.init_pods, r.pods, r.pods_per_second, r.p50_ms, r.p99_ms, r.unschedulable, r.valid,
            r.invalid_reason.map(|s| format!(" ({s})")).unwrap_or_default()
        ),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
