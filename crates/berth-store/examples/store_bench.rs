//! Creates per second on the durable backend with concurrent writers (group commit at work).
//!
//! `cargo run --release -p berth-store --example store_bench [tasks] [creates-per-task] [value-bytes]`
//! (defaults: 16 tasks, 2000 creates each, 1 KiB values, in a fresh temporary directory).

use std::time::Instant;

use berth_store::Store;
use bytes::Bytes;

fn arg(n: usize, default: usize) -> usize {
    std::env::args()
        .nth(n)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tasks = arg(1, 16);
    let per_task = arg(2, 2000);
    let value = Bytes::from(vec![b'x'; arg(3, 1024)]);
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path())?;

    // A benchmark measures real elapsed time; berth-store sits below berth-core's Stopwatch.
    #[allow(clippy::disallowed_methods)]
    let started = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|t| {
            let store = store.clone();
            let value = value.clone();
            tokio::spawn(async move {
                for i in 0..per_task {
                    let key = format!("/registry/pods/bench-{t}/p{i:06}");
                    store.create(&key, value.clone()).await?;
                }
                Ok::<_, berth_store::Error>(())
            })
        })
        .collect();
    for handle in handles {
        handle.await??;
    }
    let elapsed = started.elapsed();

    let total = tasks * per_task;
    println!(
        "durable backend: {total} creates ({tasks} tasks x {per_task}, {} B values) in {:.2?}: {:.0} creates/s",
        value.len(),
        elapsed,
        total as f64 / elapsed.as_secs_f64()
    );
    println!("store revision {}", store.current_revision());
    Ok(())
}
